// A grammar compiled for matching: each rule becomes an automaton over bytes whose states may
// also call other rules (a recursive transition network). Epsilon moves are gone, so every
// state the matcher stands in is one it reached by a byte or a return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "structured/grammar.h"

namespace pagedllm::structured {

struct ByteEdge {
  uint8_t lo, hi;
  uint32_t target;
};

struct CallEdge {
  uint32_t rule;
  uint32_t return_state;
};

struct State {
  uint32_t edges_begin = 0, edges_end = 0;  // into CompiledGrammar::edges
  uint32_t calls_begin = 0, calls_end = 0;  // into CompiledGrammar::calls
  bool final = false;                       // the rule may end here
  // Byte edges only: the matcher moves it without looking at calls or returns.
  bool simple = false;
  // Final with nothing else to do: a call returning here is a tail call (the matcher replaces
  // the caller's frame instead of stacking one, so right-recursive rules do not grow stacks).
  bool tail = false;
  // > 0: inside a JSON string body with at most this many characters left (kUnboundedChars:
  // no limit), where every other way out needs '"', '\\' or a control byte. The mask then takes
  // all "plain string" tokens of that length at once (TokenVocabulary's slices).
  uint16_t json_chars_left = 0;
  // A long bounded string body reads characters past ASCII, and escapes, through one shared
  // rule (see build_json_chars): its start state says so, and a frame that the rule returns to
  // holds the characters left for the one it reads.
  bool json_char_rule_start = false;
  uint16_t json_call_chars = 0;
};

inline constexpr uint16_t kUnboundedChars = 0xFFFF;

struct CompileLimits {
  size_t max_nfa_nodes = 2'000'000;  // past this, a GrammarError ("grammar too large")
  double max_seconds = 2.0;          // past this, a GrammarError ("over the compile limit")
};

class CompiledGrammar {
 public:
  std::vector<State> states;
  std::vector<ByteEdge> edges;
  std::vector<CallEdge> calls;
  std::vector<uint32_t> rule_start;  // the first state of each rule
  std::vector<std::string> rule_names;
  uint32_t start_rule = 0;
};

// Throws GrammarError: an undefined rule, left recursion, a grammar past the limits, or one
// that matches no string at all.
std::shared_ptr<const CompiledGrammar> compile_grammar(const Grammar& grammar,
                                                       const CompileLimits& limits = {});

}  // namespace pagedllm::structured
