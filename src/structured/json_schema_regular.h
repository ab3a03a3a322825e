// String constraints as deterministic automata over code points, for the cases where one string
// must satisfy two of them at once (`pattern` with `format`, either with a length): the grammar
// form can only offer alternatives, so the intersection is built here, as a product automaton,
// and handed to the grammar as right-linear rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "structured/grammar.h"

namespace pagedllm::structured {

// States past this make the construction fail (a GrammarError), so a schema cannot make the
// compiler spend unbounded time or the grammar unbounded size.
inline constexpr size_t kMaxDfaStates = 6000;

struct CharDfa {
  struct Edge {
    CodePointSet set;
    uint32_t to = 0;
  };
  struct State {
    std::vector<Edge> edges;  // sets disjoint
    bool accept = false;
  };
  std::vector<State> states;  // states[0] is the start

  bool empty_language() const {
    return states.empty() || (!states[0].accept && states[0].edges.empty());
  }
};

// The strings (as decoded values, before JSON escaping) the regex matches; with search, a match
// anywhere in the string is enough unless the regex is anchored (JSON Schema's `pattern`).
// Throws GrammarError for a bad or too large regex.
CharDfa dfa_from_regex(std::string_view pattern, bool search);

// The strings an expression of `g` matches (characters, ASCII bytes, sequences, alternatives,
// repetitions and JSON string bodies; no rule references).
CharDfa dfa_from_expr(const Grammar& g, int32_t expr);

// The strings of min..max code points (max < 0: no upper bound).
CharDfa dfa_of_length(int32_t min, int32_t max);

// The strings both accept; states that cannot reach an accepting one are removed.
CharDfa intersect(const CharDfa& a, const CharDfa& b);

// The strings `a` does not accept.
CharDfa complement(const CharDfa& a);

// Several automata run side by side over one string, each state recording which of them accept
// there (a part with no move for a character drops out and accepts nothing after). Splitting
// its states by that record gives the regions of patternProperties' keys.
struct ProductDfa {
  CharDfa dfa;                             // accept flags unset
  std::vector<std::vector<bool>> accepts;  // per state, per part
};
ProductDfa product(const std::vector<const CharDfa*>& parts);

// `dfa` accepting exactly in the states flagged, trimmed.
CharDfa with_accepting(const CharDfa& dfa, const std::vector<bool>& accept);

// Exactly these strings (UTF-8).
CharDfa dfa_of_strings(const std::vector<std::string>& strings);

// Whether the automaton accepts the UTF-8 text.
bool dfa_matches(const CharDfa& dfa, std::string_view text);

// The shortest and longest accepted strings' lengths in code points (longest -1: unbounded);
// {0, 0} for the empty language.
std::pair<int64_t, int64_t> length_range(const CharDfa& dfa);

// Adds the language to `g` as one rule per state; with json_string each character is written as
// inside a JSON string (quote, backslash and controls escaped). Returns the start's expression.
int32_t add_dfa(Grammar& g, const CharDfa& dfa, bool json_string);

}  // namespace pagedllm::structured
