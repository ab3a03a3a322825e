#include "structured/compiled_grammar.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <span>
#include <string>
#include <unordered_map>

namespace pagedllm::structured {

namespace {

using ByteSeq = std::vector<std::pair<uint8_t, uint8_t>>;

int utf8_length(uint32_t cp) {
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// Splits [lo, hi] (one encoded length, no surrogates) until each piece's UTF-8 encodings are a
// product of byte ranges.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
  std::vector<std::pair<uint32_t, uint32_t>> worklist = {{lo, hi}};
  while (!worklist.empty()) {
    auto [a, b] = worklist.back();
    worklist.pop_back();
    if (a > b) continue;
    if (a < 0xD800 && b >= 0xD800) {  // cut out the surrogates
      worklist.push_back({a, 0xD7FF});
      if (b > 0xDFFF) worklist.push_back({0xE000, b});
      continue;
    }
    if (a >= 0xD800 && a <= 0xDFFF) {
      if (b > 0xDFFF) worklist.push_back({0xE000, b});
      continue;
    }
    const int la = utf8_length(a), lb = utf8_length(b);
    if (la != lb) {
      const uint32_t edge = la == 1 ? 0x7F : la == 2 ? 0x7FF : 0xFFFF;
      worklist.push_back({a, edge});
      worklist.push_back({edge + 1, b});
      continue;
    }
    bool split = false;
    for (int i = 1; i < la && !split; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((a & ~m) == (b & ~m)) continue;
      if ((a & m) != 0) {
        worklist.push_back({a, a | m});
        worklist.push_back({(a | m) + 1, b});
        split = true;
      } else if ((b & m) != m) {
        worklist.push_back({a, (b & ~m) - 1});
        worklist.push_back({b & ~m, b});
        split = true;
      }
    }
    if (split) continue;
    std::string ea, eb;
    append_utf8(ea, a);
    append_utf8(eb, b);
    ByteSeq seq;
    for (size_t k = 0; k < ea.size(); ++k) {
      seq.push_back({static_cast<uint8_t>(ea[k]), static_cast<uint8_t>(eb[k])});
    }
    out.push_back(std::move(seq));
  }
}

// Bytes that never occur in a "plain string" token (TokenVocabulary's slices): controls, the
// quote and backslash, and bytes that are never valid UTF-8.
bool leaves_plain_strings(uint8_t b) {
  return b < 0x20 || b == '"' || b == '\\' || b == 0xC0 || b == 0xC1 || b >= 0xF5;
}

// The automaton under construction keeps its moves in three flat lists (one allocation each,
// not three small vectors per node); Nfa sorts them by node at the end.
struct NfaMoves {
  std::vector<std::pair<uint32_t, uint32_t>> eps;    // (from, to)
  std::vector<std::pair<uint32_t, ByteEdge>> bytes;  // (from, edge)
  std::vector<std::pair<uint32_t, CallEdge>> calls;  // (from, call)
  std::vector<uint16_t> json_chars_left;  // per node: a JSON string body's character boundary
  std::vector<uint16_t> json_call_chars;  // per node: State::json_call_chars
  size_t size() const { return json_chars_left.size(); }
};

// Bounded string bodies longer than this read non-ASCII characters and escapes through one
// shared rule, so that "maxLength": 1000 costs a state per character rather than a dozen.
constexpr int32_t kInlineJsonChars = 32;
constexpr int32_t kJsonCharRule = -1;  // in NfaBuilder::implicit_rules(): that shared rule

class NfaBuilder {
 public:
  NfaBuilder(const Grammar& g, const CompileLimits& limits)
      : g_(g), limits_(limits), started_(std::chrono::steady_clock::now()) {}

  uint32_t node() {
    if (nodes_.size() >= limits_.max_nfa_nodes) {
      throw GrammarError("grammar too large: over " + std::to_string(limits_.max_nfa_nodes) +
                         " automaton states");
    }
    if (nodes_.size() % 4096 == 4095 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() >
            limits_.max_seconds) {
      throw GrammarError("grammar over the compile limit of " +
                         std::to_string(limits_.max_seconds) + " s");
    }
    nodes_.json_chars_left.push_back(0);
    nodes_.json_call_chars.push_back(0);
    return static_cast<uint32_t>(nodes_.size() - 1);
  }
  void eps(uint32_t from, uint32_t to) { nodes_.eps.push_back({from, to}); }
  void call(uint32_t from, uint32_t rule, uint32_t to) {
    nodes_.calls.push_back({from, {rule, to}});
  }
  void byte(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) {
    nodes_.bytes.push_back({from, {lo, hi, to}});
  }

  // Adds the automaton of `expr` starting at `from`; returns its end node. An expression met
  // again whose automaton was large becomes a rule of its own, called from each later place
  // (a schema's "any other property name" tail, repeated at every node of the names' trie).
  uint32_t build(int32_t expr, uint32_t from) {
    const ExprKind kind = g_.expr(expr).kind;
    if (kind != ExprKind::kSeq && kind != ExprKind::kAlt && kind != ExprKind::kRepeat) {
      return build_inline(expr, from);  // leaves stay inline: a string body keeps its fast path
    }
    auto [it, first] = built_.try_emplace(expr, BuiltExpr{});
    if (!first && it->second.nodes > kShareAbove) {
      if (it->second.rule == UINT32_MAX) {
        it->second.rule = static_cast<uint32_t>(g_.rules().size() + implicit_rules_.size());
        implicit_rules_.push_back(expr);
      }
      const uint32_t to = node();
      call(from, it->second.rule, to);
      return to;
    }
    const size_t before = nodes_.size();
    const uint32_t end = build_inline(expr, from);
    built_[expr].nodes = nodes_.size() - before;
    return end;
  }

  // Rules added for shared expressions, in order: rule g.rules().size() + i has body [i].
  const std::vector<int32_t>& implicit_rules() const { return implicit_rules_; }
  NfaMoves& nodes() { return nodes_; }

  // The automaton of `expr` at `from`, never as a call (a rule's own body).
  uint32_t build_inline(int32_t expr, uint32_t from) {
    const Expr& e = g_.expr(expr);
    switch (e.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kNothing:
        return node();
      case ExprKind::kBytes: {
        const uint32_t to = node();
        byte(from, e.lo, e.hi, to);
        return to;
      }
      case ExprKind::kChars:
        return build_chars(e.chars, from);
      case ExprKind::kSeq: {
        uint32_t at = from;
        for (int32_t kid : e.kids) at = build(kid, at);
        return at;
      }
      case ExprKind::kAlt: {
        // Every kid starts at `from` itself: no construct here adds a move into its own start
        // (loops go through nodes of their own), so one kid cannot run into another.
        const uint32_t to = node();
        for (int32_t kid : e.kids) eps(build(kid, from), to);
        return to;
      }
      case ExprKind::kRepeat:
        return build_repeat(e, from);
      case ExprKind::kRef: {
        if (e.rule < 0 || static_cast<size_t>(e.rule) >= g_.rules().size()) {
          throw GrammarError("reference to an unknown rule");
        }
        const uint32_t to = node();
        call(from, static_cast<uint32_t>(e.rule), to);
        return to;
      }
      case ExprKind::kJsonChars:
        return build_json_chars(e.min, e.max, from);
    }
    return from;
  }

 private:
  // Sequences that end alike share their ends: after a lead byte, "two continuation bytes
  // to go" is one node whichever lead it was (7 inner nodes for all of Unicode, not 18), which
  // matters for strings whose length bounds repeat the character automaton hundreds of times.
  uint32_t build_chars(const CodePointSet& set, uint32_t from) {
    std::vector<ByteSeq> seqs;
    for (const CodePointRange& r : set.ranges()) utf8_sequences(r.lo, r.hi, seqs);
    const uint32_t to = node();
    std::map<ByteSeq, uint32_t> suffixes;  // the bytes still to read -> the node reading them
    const auto node_for = [&](auto& self, const ByteSeq& suffix) -> uint32_t {
      if (suffix.empty()) return to;
      auto it = suffixes.find(suffix);
      if (it != suffixes.end()) return it->second;
      const uint32_t next = self(self, ByteSeq(suffix.begin() + 1, suffix.end()));
      const uint32_t at = node();
      byte(at, suffix[0].first, suffix[0].second, next);
      return suffixes.emplace(suffix, at).first->second;
    };
    for (const ByteSeq& seq : seqs) {
      byte(from, seq[0].first, seq[0].second,
           node_for(node_for, ByteSeq(seq.begin() + 1, seq.end())));
    }
    return to;
  }

  uint32_t build_repeat(const Expr& e, uint32_t from) {
    uint32_t at = from;
    for (int32_t i = 0; i < e.min; ++i) at = build(e.kids[0], at);
    if (e.max < 0) {
      const uint32_t loop = node();
      eps(at, loop);
      eps(build(e.kids[0], loop), loop);
      return loop;
    }
    const uint32_t to = node();
    for (int32_t i = e.min; i < e.max; ++i) {
      eps(at, to);
      at = build(e.kids[0], at);
    }
    eps(at, to);
    return to;
  }

  // One JSON string character from `from` to `to`: a raw one or an escape.
  void json_char(uint32_t from, uint32_t to) {
    CodePointSet raw;
    raw.add(0x20, 0x10FFFF);
    CodePointSet excluded;
    excluded.add('"', '"');
    excluded.add('\\', '\\');
    eps(build_chars(raw.minus(excluded), from), to);
    json_escape(from, to);
  }

  void json_escape(uint32_t from, uint32_t to) {
    const uint32_t esc = node();
    byte(from, '\\', '\\', esc);
    for (char c : std::string("\"\\/bfnrt")) byte(esc, c, c, to);
    uint32_t at = node();
    byte(esc, 'u', 'u', at);
    for (int k = 0; k < 4; ++k) {
      const uint32_t next = k == 3 ? to : node();
      byte(at, '0', '9', next);
      byte(at, 'a', 'f', next);
      byte(at, 'A', 'F', next);
      at = next;
    }
  }

  // One JSON string character read through the shared rule (past ASCII, or an escape), or an
  // ASCII one in place.
  void json_char_by_call(uint32_t from, uint32_t to) {
    byte(from, 0x20, 0x21, to);
    byte(from, 0x23, 0x5B, to);
    byte(from, 0x5D, 0x7F, to);
    if (json_char_rule_ == UINT32_MAX) {
      json_char_rule_ = static_cast<uint32_t>(g_.rules().size() + implicit_rules_.size());
      implicit_rules_.push_back(kJsonCharRule);
    }
    call(from, json_char_rule_, to);
  }

  uint32_t build_json_chars(int32_t min, int32_t max, uint32_t from) {
    const uint32_t to = node();
    uint32_t at = node();
    eps(from, at);
    const int32_t chain = max < 0 ? min : max;
    const bool by_call = max > kInlineJsonChars;
    for (int32_t i = 0; i <= chain; ++i) {
      const bool last = i == chain;
      nodes_.json_chars_left[at] =
          max < 0 && last ? kUnboundedChars
                          : static_cast<uint16_t>(std::min<int32_t>(max - i, kUnboundedChars - 1));
      if (i >= min) eps(at, to);
      if (last && max >= 0) break;
      const uint32_t next = last ? at : node();
      if (by_call) {
        json_char_by_call(at, next);
        nodes_.json_call_chars[next] = static_cast<uint16_t>(max - i);
      } else {
        json_char(at, next);
      }
      at = next;
    }
    return to;
  }

 public:
  // The shared rule's body: a character past ASCII, or an escape.
  uint32_t build_json_char_rule(uint32_t from) {
    const uint32_t to = node();
    CodePointSet past_ascii;
    past_ascii.add(0x80, 0x10FFFF);
    eps(build_chars(past_ascii, from), to);
    json_escape(from, to);
    return to;
  }
  uint32_t json_char_rule() const { return json_char_rule_; }

 private:
  const Grammar& g_;
  const CompileLimits& limits_;
  std::chrono::steady_clock::time_point started_;
  NfaMoves nodes_;
  static constexpr size_t kShareAbove = 8;  // nodes
  struct BuiltExpr {
    size_t nodes = 0;
    uint32_t rule = UINT32_MAX;
  };
  std::unordered_map<int32_t, BuiltExpr> built_;
  std::vector<int32_t> implicit_rules_;
  uint32_t json_char_rule_ = UINT32_MAX;
};

// Moves of node n in [first[n], first[n + 1]), in the order they were added.
template <typename Move>
struct ByNode {
  std::vector<uint32_t> first;
  std::vector<Move> moves;

  ByNode(const std::vector<std::pair<uint32_t, Move>>& flat, size_t nodes) : first(nodes + 1, 0) {
    for (const auto& m : flat) ++first[m.first + 1];
    for (size_t n = 0; n < nodes; ++n) first[n + 1] += first[n];
    std::vector<uint32_t> at(first.begin(), first.end() - 1);
    moves.resize(flat.size());
    for (const auto& m : flat) moves[at[m.first]++] = m.second;
  }
  std::span<const Move> of(uint32_t n) const {
    return {moves.data() + first[n], moves.data() + first[n + 1]};
  }
};

struct Nfa {
  Nfa(const NfaMoves& m)
      : eps(m.eps, m.size()),
        bytes(m.bytes, m.size()),
        calls(m.calls, m.size()),
        json_chars_left(m.json_chars_left),
        json_call_chars(m.json_call_chars) {}
  size_t size() const { return json_chars_left.size(); }

  ByNode<uint32_t> eps;
  ByNode<ByteEdge> bytes;
  ByNode<CallEdge> calls;
  std::vector<uint16_t> json_chars_left, json_call_chars;
  std::vector<uint32_t> rule_start, rule_end;
  uint32_t json_char_rule = UINT32_MAX;
};

Nfa build_nfa(const Grammar& g, const CompileLimits& limits) {
  NfaBuilder b(g, limits);
  std::vector<uint32_t> rule_start, rule_end;
  for (const Rule& r : g.rules()) {
    if (r.body < 0) throw GrammarError("undefined rule '" + r.name + "'");
    const uint32_t start = b.node();
    rule_start.push_back(start);
    rule_end.push_back(b.build(r.body, start));
  }
  // Building a shared expression's rule may share more (the list grows while it is read).
  for (size_t i = 0; i < b.implicit_rules().size(); ++i) {
    const uint32_t start = b.node();
    rule_start.push_back(start);
    const int32_t body = b.implicit_rules()[i];
    rule_end.push_back(body == kJsonCharRule ? b.build_json_char_rule(start)
                                             : b.build_inline(body, start));
  }
  Nfa nfa(b.nodes());
  nfa.rule_start = std::move(rule_start);
  nfa.rule_end = std::move(rule_end);
  nfa.json_char_rule = b.json_char_rule();
  return nfa;
}

// Removes epsilon moves: the states are the rule starts and the targets of bytes and calls.
class EpsilonRemover {
 public:
  EpsilonRemover(const Nfa& nfa, CompiledGrammar& out) : nfa_(nfa), out_(out) {
    index_.assign(nfa.size(), UINT32_MAX);
    is_end_.assign(nfa.size(), 0);
    seen_.assign(nfa.size(), 0);
    for (uint32_t end : nfa.rule_end) is_end_[end] = 1;
  }

  void run() {
    for (uint32_t start : nfa_.rule_start) out_.rule_start.push_back(state_of(start));
    for (size_t i = 0; i < order_.size(); ++i) fill(static_cast<uint32_t>(i));
    if (nfa_.json_char_rule != UINT32_MAX) {
      out_.states[out_.rule_start[nfa_.json_char_rule]].json_char_rule_start = true;
    }
  }

 private:
  uint32_t state_of(uint32_t node) {
    if (index_[node] == UINT32_MAX) {
      index_[node] = static_cast<uint32_t>(order_.size());
      order_.push_back(node);
    }
    return index_[node];
  }

  void closure(uint32_t node, std::vector<uint32_t>& out) {
    ++stamp_;
    worklist_.assign(1, node);
    seen_[node] = stamp_;
    while (!worklist_.empty()) {
      const uint32_t n = worklist_.back();
      worklist_.pop_back();
      out.push_back(n);
      for (uint32_t next : nfa_.eps.of(n)) {
        if (seen_[next] != stamp_) {
          seen_[next] = stamp_;
          worklist_.push_back(next);
        }
      }
    }
  }

  void fill(uint32_t state) {
    std::vector<uint32_t>& members = members_;
    members.clear();
    closure(order_[state], members);
    State s;
    s.edges_begin = static_cast<uint32_t>(out_.edges.size());
    s.calls_begin = static_cast<uint32_t>(out_.calls.size());
    bool plain_only = true;
    uint16_t chars_left = 0;
    for (uint32_t n : members) {
      s.final = s.final || is_end_[n];
      const uint16_t node_chars_left = nfa_.json_chars_left[n];
      for (const ByteEdge& e : nfa_.bytes.of(n)) {
        out_.edges.push_back({e.lo, e.hi, state_of(e.target)});
        if (node_chars_left > 0) continue;
        for (int b = e.lo; b <= e.hi; ++b) plain_only = plain_only && leaves_plain_strings(b);
      }
      for (const CallEdge& c : nfa_.calls.of(n)) {
        out_.calls.push_back({c.rule, state_of(c.return_state)});
        plain_only = plain_only && c.rule == nfa_.json_char_rule;
      }
      chars_left = std::max(chars_left, node_chars_left);
      s.json_call_chars = std::max(s.json_call_chars, nfa_.json_call_chars[n]);
    }
    s.edges_end = static_cast<uint32_t>(out_.edges.size());
    s.calls_end = static_cast<uint32_t>(out_.calls.size());
    std::sort(out_.edges.begin() + s.edges_begin, out_.edges.end(),
              [](const ByteEdge& a, const ByteEdge& b) { return a.lo < b.lo; });
    s.simple = !s.final && s.calls_begin == s.calls_end;
    s.tail = s.final && s.calls_begin == s.calls_end && s.edges_begin == s.edges_end;
    if (plain_only && !s.final) s.json_chars_left = chars_left;
    if (out_.states.size() <= state) out_.states.resize(state + 1);
    out_.states[state] = s;
  }

  const Nfa& nfa_;
  CompiledGrammar& out_;
  std::vector<uint32_t> index_, order_, seen_, worklist_, members_;
  std::vector<uint8_t> is_end_;
  uint32_t stamp_ = 0;
};

// Rules that can match "" (a fixpoint over calls to rules already known to).
// (One visit stamp per state for all the searches: a fresh "seen" vector per rule would cost
// rules x states to clear, most of the compile time of a schema with thousands of rules.)
std::vector<uint8_t> nullable_rules(const CompiledGrammar& g) {
  std::vector<uint8_t> nullable(g.rule_start.size(), 0);
  std::vector<uint32_t> seen(g.states.size(), 0), worklist;
  uint32_t stamp = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < nullable.size(); ++r) {
      if (nullable[r]) continue;
      worklist.assign(1, g.rule_start[r]);
      ++stamp;
      while (!worklist.empty() && !nullable[r]) {
        const State& s = g.states[worklist.back()];
        worklist.pop_back();
        if (s.final) nullable[r] = 1;
        for (uint32_t c = s.calls_begin; c < s.calls_end; ++c) {
          const CallEdge& e = g.calls[c];
          if (nullable[e.rule] && seen[e.return_state] != stamp) {
            seen[e.return_state] = stamp;
            worklist.push_back(e.return_state);
          }
        }
      }
      changed = changed || nullable[r];
    }
  }
  return nullable;
}

// A rule that can call itself before reading a byte would make the matcher's stacks grow
// without end: refused, as llama.cpp does.
void refuse_left_recursion(const CompiledGrammar& g) {
  const std::vector<uint8_t> nullable = nullable_rules(g);
  const size_t n = g.rule_start.size();
  std::vector<std::vector<uint32_t>> left_calls(n);
  std::vector<uint32_t> seen(g.states.size(), 0), worklist;
  for (size_t r = 0; r < n; ++r) {
    const auto stamp = static_cast<uint32_t>(r + 1);
    worklist.assign(1, g.rule_start[r]);
    seen[g.rule_start[r]] = stamp;
    while (!worklist.empty()) {
      const State& s = g.states[worklist.back()];
      worklist.pop_back();
      for (uint32_t c = s.calls_begin; c < s.calls_end; ++c) {
        const CallEdge& e = g.calls[c];
        left_calls[r].push_back(e.rule);
        if (nullable[e.rule] && seen[e.return_state] != stamp) {
          seen[e.return_state] = stamp;
          worklist.push_back(e.return_state);
        }
      }
    }
  }
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (size_t root = 0; root < n; ++root) {
    if (color[root]) continue;
    std::vector<std::pair<uint32_t, size_t>> path = {{static_cast<uint32_t>(root), 0}};
    color[root] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next == left_calls[r].size()) {
        color[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t callee = left_calls[r][next++];
      if (color[callee] == 1) {
        throw GrammarError("left recursion in rule '" + g.rule_names[callee] + "'");
      }
      if (color[callee] == 0) {
        color[callee] = 1;
        path.push_back({callee, 0});
      }
    }
  }
}

}  // namespace

std::shared_ptr<const CompiledGrammar> compile_grammar(const Grammar& grammar,
                                                       const CompileLimits& limits) {
  if (grammar.start() < 0 || static_cast<size_t>(grammar.start()) >= grammar.rules().size()) {
    throw GrammarError("grammar has no start rule");
  }
  const Nfa nfa = build_nfa(grammar, limits);
  auto out = std::make_shared<CompiledGrammar>();
  for (const Rule& r : grammar.rules()) out->rule_names.push_back(r.name);
  while (out->rule_names.size() < nfa.rule_start.size()) {
    out->rule_names.push_back("shared" + std::to_string(out->rule_names.size()));
  }
  out->start_rule = static_cast<uint32_t>(grammar.start());
  EpsilonRemover(nfa, *out).run();
  refuse_left_recursion(*out);
  return out;
}

}  // namespace pagedllm::structured
