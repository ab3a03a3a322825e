#include "structured/json_schema_regular.h"

#include <algorithm>
#include <deque>
#include <map>
#include <string>

#include "structured/regex_compiler.h"

namespace pagedllm::structured {

namespace {

// NFA states past this: the regex's repetitions expand too far to be intersected.
constexpr size_t kMaxNfaStates = 100000;

[[noreturn]] void too_large(const std::string& what) {
  throw GrammarError(what + " needs an automaton over " + std::to_string(kMaxDfaStates) +
                     " states");
}

CodePointSet intersection(const CodePointSet& a, const CodePointSet& b) {
  return a.minus(b.complement());
}

CodePointSet all_chars() {
  CodePointSet s;
  s.add(0, 0x10FFFF);
  return s;
}

// Thompson's construction over the expression tree the regex parser builds (only characters,
// sequences, alternatives and repetitions occur outside JSON string mode).
class Nfa {
 public:
  struct State {
    std::vector<uint32_t> eps;
    std::vector<std::pair<CodePointSet, uint32_t>> edges;
  };

  uint32_t add_state() {
    if (states.size() >= kMaxNfaStates) too_large("the regex");
    states.emplace_back();
    return static_cast<uint32_t>(states.size() - 1);
  }

  // Builds `e` starting at `from`; returns where it ends. Every loop gets a fresh entry state,
  // so alternatives may share `from` without reaching each other.
  uint32_t build(const Grammar& g, int32_t e, uint32_t from) {
    const Expr& x = g.expr(e);
    switch (x.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kNothing:
        return add_state();
      case ExprKind::kChars:
        return edge(from, x.chars);
      case ExprKind::kBytes: {
        if (x.hi >= 0x80) throw GrammarError("regex: raw bytes in an intersected pattern");
        CodePointSet set;
        set.add(x.lo, x.hi);
        return edge(from, set);
      }
      case ExprKind::kSeq: {
        uint32_t at = from;
        for (int32_t kid : x.kids) at = build(g, kid, at);
        return at;
      }
      case ExprKind::kAlt: {
        const uint32_t end = add_state();
        for (int32_t kid : x.kids) eps(build(g, kid, from), end);
        return end;
      }
      case ExprKind::kRepeat:
        return repeat(g, x.kids[0], x.min, x.max, from);
      case ExprKind::kJsonChars: {
        CodePointSet any = all_chars();
        return repeat_set(any, x.min, x.max, from);
      }
      case ExprKind::kRef:
        break;
    }
    throw GrammarError("regex: rule references cannot be intersected");
  }

  std::vector<State> states;

 private:
  uint32_t edge(uint32_t from, const CodePointSet& set) {
    const uint32_t to = add_state();
    states[from].edges.push_back({set, to});
    return to;
  }
  void eps(uint32_t from, uint32_t to) { states[from].eps.push_back(to); }

  uint32_t repeat(const Grammar& g, int32_t kid, int32_t min, int32_t max, uint32_t from) {
    uint32_t at = from;
    for (int32_t i = 0; i < min; ++i) at = build(g, kid, at);
    if (max < 0) {
      const uint32_t loop = add_state();
      eps(at, loop);
      eps(build(g, kid, loop), loop);
      return loop;
    }
    for (int32_t i = min; i < max; ++i) {
      const uint32_t end = add_state();
      eps(at, end);
      eps(build(g, kid, at), end);
      at = end;
    }
    return at;
  }

  uint32_t repeat_set(const CodePointSet& set, int32_t min, int32_t max, uint32_t from) {
    uint32_t at = from;
    for (int32_t i = 0; i < min; ++i) at = edge(at, set);
    if (max < 0) {
      const uint32_t loop = add_state();
      eps(at, loop);
      states[loop].edges.push_back({set, loop});
      return loop;
    }
    for (int32_t i = min; i < max; ++i) {
      const uint32_t end = edge(at, set);
      eps(at, end);
      at = end;
    }
    return at;
  }
};

// Subset construction. The alphabet is split, per DFA state, at the ends of its NFA edges'
// ranges, so each piece moves to one set of NFA states.
class Determinizer {
 public:
  Determinizer(const Nfa& nfa, uint32_t start, uint32_t accept) : nfa_(nfa), accept_(accept) {
    id_of(closure({start}));
  }

  CharDfa run() {
    for (size_t i = 0; i < pending_.size(); ++i) expand(i);
    return std::move(dfa_);
  }

 private:
  std::vector<uint32_t> closure(std::vector<uint32_t> worklist) const {
    std::vector<bool> seen(nfa_.states.size());
    std::vector<uint32_t> out;
    while (!worklist.empty()) {
      const uint32_t s = worklist.back();
      worklist.pop_back();
      if (seen[s]) continue;
      seen[s] = true;
      out.push_back(s);
      for (uint32_t t : nfa_.states[s].eps) worklist.push_back(t);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  uint32_t id_of(const std::vector<uint32_t>& set) {
    auto it = ids_.find(set);
    if (it != ids_.end()) return it->second;
    if (dfa_.states.size() >= kMaxDfaStates) too_large("the regex");
    const auto id = static_cast<uint32_t>(dfa_.states.size());
    ids_.emplace(set, id);
    dfa_.states.emplace_back();
    dfa_.states.back().accept = std::binary_search(set.begin(), set.end(), accept_);
    pending_.push_back(set);
    return id;
  }

  void expand(size_t index) {
    const std::vector<uint32_t> set = pending_[index];
    std::vector<uint32_t> cuts;
    for (uint32_t s : set) {
      for (const auto& [chars, to] : nfa_.states[s].edges) {
        for (const CodePointRange& r : chars.ranges()) {
          cuts.push_back(r.lo);
          cuts.push_back(r.hi + 1);
        }
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::map<uint32_t, CodePointSet> by_target;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      std::vector<uint32_t> next;
      for (uint32_t s : set) {
        for (const auto& [chars, to] : nfa_.states[s].edges) {
          if (chars.contains(cuts[k])) next.push_back(to);
        }
      }
      if (next.empty()) continue;
      const uint32_t target = id_of(closure(std::move(next)));
      by_target[target].add(cuts[k], cuts[k + 1] - 1);
    }
    for (auto& [target, chars] : by_target) {
      dfa_.states[index].edges.push_back({std::move(chars), target});
    }
  }

  const Nfa& nfa_;
  uint32_t accept_;
  CharDfa dfa_;
  std::map<std::vector<uint32_t>, uint32_t> ids_;
  std::vector<std::vector<uint32_t>> pending_;
};

// Drops states that cannot reach an accepting one (and edges into them), keeping the start.
CharDfa trim(const CharDfa& dfa) {
  const size_t n = dfa.states.size();
  std::vector<std::vector<uint32_t>> into(n);
  for (size_t s = 0; s < n; ++s) {
    for (const CharDfa::Edge& e : dfa.states[s].edges)
      into[e.to].push_back(static_cast<uint32_t>(s));
  }
  std::vector<bool> live(n);
  std::vector<uint32_t> worklist;
  for (size_t s = 0; s < n; ++s) {
    if (dfa.states[s].accept) worklist.push_back(static_cast<uint32_t>(s));
  }
  while (!worklist.empty()) {
    const uint32_t s = worklist.back();
    worklist.pop_back();
    if (live[s]) continue;
    live[s] = true;
    for (uint32_t p : into[s]) worklist.push_back(p);
  }
  CharDfa out;
  if (n == 0 || !live[0]) {
    out.states.emplace_back();
    return out;
  }
  std::vector<uint32_t> renumber(n);
  for (size_t s = 0; s < n; ++s) {
    if (live[s]) {
      renumber[s] = static_cast<uint32_t>(out.states.size());
      out.states.emplace_back();
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (!live[s]) continue;
    CharDfa::State& st = out.states[renumber[s]];
    st.accept = dfa.states[s].accept;
    for (const CharDfa::Edge& e : dfa.states[s].edges) {
      if (live[e.to]) st.edges.push_back({e.set, renumber[e.to]});
    }
  }
  return out;
}

}  // namespace

CharDfa dfa_from_expr(const Grammar& g, int32_t expr) {
  Nfa nfa;
  const uint32_t start = nfa.add_state();
  const uint32_t end = nfa.build(g, expr, start);
  return trim(Determinizer(nfa, start, end).run());
}

CharDfa dfa_from_regex(std::string_view pattern, bool search) {
  Grammar scratch;
  const int32_t expr = add_regex(scratch, pattern, {.json_string = false, .search = search});
  return dfa_from_expr(scratch, expr);
}

CharDfa dfa_of_length(int32_t min, int32_t max) {
  const int32_t last = max < 0 ? min : max;
  if (static_cast<size_t>(last) >= kMaxDfaStates) too_large("the length");
  CharDfa out;
  out.states.resize(static_cast<size_t>(last) + 1);
  for (int32_t i = 0; i <= last; ++i) {
    CharDfa::State& st = out.states[static_cast<size_t>(i)];
    st.accept = i >= min;
    if (i < last) st.edges.push_back({all_chars(), static_cast<uint32_t>(i + 1)});
    if (i == last && max < 0) st.edges.push_back({all_chars(), static_cast<uint32_t>(i)});
  }
  return out;
}

CharDfa intersect(const CharDfa& a, const CharDfa& b) {
  CharDfa out;
  if (a.states.empty() || b.states.empty()) {
    out.states.emplace_back();
    return out;
  }
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> ids;
  std::deque<std::pair<uint32_t, uint32_t>> worklist;
  const auto id_of = [&](uint32_t x, uint32_t y) {
    auto [it, fresh] = ids.emplace(std::pair{x, y}, static_cast<uint32_t>(out.states.size()));
    if (fresh) {
      if (out.states.size() >= kMaxDfaStates) too_large("the intersection");
      out.states.emplace_back();
      out.states.back().accept = a.states[x].accept && b.states[y].accept;
      worklist.push_back({x, y});
    }
    return it->second;
  };
  id_of(0, 0);
  while (!worklist.empty()) {
    const auto [x, y] = worklist.front();
    worklist.pop_front();
    const uint32_t here = ids.at({x, y});
    for (const CharDfa::Edge& ea : a.states[x].edges) {
      for (const CharDfa::Edge& eb : b.states[y].edges) {
        CodePointSet both = intersection(ea.set, eb.set);
        if (both.empty()) continue;
        const uint32_t to = id_of(ea.to, eb.to);
        out.states[here].edges.push_back({std::move(both), to});
      }
    }
  }
  return trim(out);
}

ProductDfa product(const std::vector<const CharDfa*>& parts) {
  constexpr uint32_t kGone = UINT32_MAX;
  ProductDfa out;
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> pending;
  const auto id_of = [&](const std::vector<uint32_t>& tuple) {
    auto [it, fresh] = ids.emplace(tuple, static_cast<uint32_t>(out.dfa.states.size()));
    if (fresh) {
      if (out.dfa.states.size() >= kMaxDfaStates) too_large("the product");
      out.dfa.states.emplace_back();
      std::vector<bool> acc;
      for (size_t i = 0; i < parts.size(); ++i) {
        acc.push_back(tuple[i] != kGone && parts[i]->states[tuple[i]].accept);
      }
      out.accepts.push_back(std::move(acc));
      pending.push_back(tuple);
    }
    return it->second;
  };
  std::vector<uint32_t> start;
  for (const CharDfa* p : parts) start.push_back(p->states.empty() ? kGone : 0);
  id_of(start);
  for (size_t index = 0; index < pending.size(); ++index) {
    const std::vector<uint32_t> tuple = pending[index];
    std::vector<uint32_t> cuts;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (tuple[i] == kGone) continue;
      for (const CharDfa::Edge& e : parts[i]->states[tuple[i]].edges) {
        for (const CodePointRange& r : e.set.ranges()) cuts.insert(cuts.end(), {r.lo, r.hi + 1});
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::map<uint32_t, CodePointSet> by_target;
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      std::vector<uint32_t> next(parts.size(), kGone);
      bool any = false;
      for (size_t i = 0; i < parts.size(); ++i) {
        if (tuple[i] == kGone) continue;
        for (const CharDfa::Edge& e : parts[i]->states[tuple[i]].edges) {
          if (e.set.contains(cuts[k])) {
            next[i] = e.to;
            any = true;
            break;
          }
        }
      }
      if (any) by_target[id_of(next)].add(cuts[k], cuts[k + 1] - 1);
    }
    for (auto& [target, chars] : by_target) {
      out.dfa.states[index].edges.push_back({std::move(chars), target});
    }
  }
  return out;
}

CharDfa complement(const CharDfa& a) {
  const CharDfa anything = dfa_of_length(0, -1);
  const ProductDfa p = product({&a, &anything});
  std::vector<bool> outside;
  for (const std::vector<bool>& acc : p.accepts) outside.push_back(!acc[0]);
  return with_accepting(p.dfa, outside);
}

CharDfa with_accepting(const CharDfa& dfa, const std::vector<bool>& accept) {
  CharDfa out = dfa;
  for (size_t s = 0; s < out.states.size(); ++s) out.states[s].accept = accept[s];
  return trim(out);
}

CharDfa dfa_of_strings(const std::vector<std::string>& strings) {
  CharDfa out;
  out.states.emplace_back();
  for (const std::string& text : strings) {
    uint32_t at = 0;
    for (size_t i = 0; i < text.size();) {
      const int32_t cp = next_utf8(text, i);
      if (cp < 0) throw GrammarError("a property name that is not UTF-8");
      const auto c = static_cast<uint32_t>(cp);
      auto& edges = out.states[at].edges;
      auto it = std::find_if(edges.begin(), edges.end(),
                             [&](const CharDfa::Edge& e) { return e.set.contains(c); });
      if (it != edges.end()) {
        at = it->to;
        continue;
      }
      CodePointSet set;
      set.add(c, c);
      const auto to = static_cast<uint32_t>(out.states.size());
      out.states[at].edges.push_back({std::move(set), to});
      out.states.emplace_back();
      at = to;
    }
    out.states[at].accept = true;
  }
  return out;
}

bool dfa_matches(const CharDfa& dfa, std::string_view text) {
  if (dfa.states.empty()) return false;
  uint32_t at = 0;
  for (size_t i = 0; i < text.size();) {
    const int32_t cp = next_utf8(text, i);
    if (cp < 0) return false;
    const auto& edges = dfa.states[at].edges;
    auto it = std::find_if(edges.begin(), edges.end(), [&](const CharDfa::Edge& e) {
      return e.set.contains(static_cast<uint32_t>(cp));
    });
    if (it == edges.end()) return false;
    at = it->to;
  }
  return dfa.states[at].accept;
}

std::pair<int64_t, int64_t> length_range(const CharDfa& dfa) {
  if (dfa.empty_language()) return {0, 0};
  const CharDfa live = trim(dfa);
  const size_t n = live.states.size();
  // Shortest: breadth first. Longest: depth first over what must be a DAG (a cycle among live
  // states means strings of any length).
  std::vector<int64_t> dist(n, -1);
  std::deque<uint32_t> worklist = {0};
  dist[0] = 0;
  int64_t shortest = -1;
  while (!worklist.empty()) {
    const uint32_t s = worklist.front();
    worklist.pop_front();
    if (live.states[s].accept && shortest < 0) shortest = dist[s];
    for (const CharDfa::Edge& e : live.states[s].edges) {
      if (dist[e.to] < 0) {
        dist[e.to] = dist[s] + 1;
        worklist.push_back(e.to);
      }
    }
  }
  std::vector<int8_t> mark(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<int64_t> longest(n, 0);
  std::vector<std::pair<uint32_t, size_t>> stack = {{0, 0}};
  mark[0] = 1;
  while (!stack.empty()) {
    auto& [s, next] = stack.back();
    if (next < live.states[s].edges.size()) {
      const uint32_t t = live.states[s].edges[next++].to;
      if (mark[t] == 1) return {shortest, -1};
      if (mark[t] == 0) {
        mark[t] = 1;
        stack.push_back({t, 0});
      }
      continue;
    }
    int64_t best = 0;
    for (const CharDfa::Edge& e : live.states[s].edges) best = std::max(best, longest[e.to] + 1);
    longest[s] = best;
    mark[s] = 2;
    stack.pop_back();
  }
  return {shortest, longest[0]};
}

int32_t add_dfa(Grammar& g, const CharDfa& dfa, bool json_string) {
  if (dfa.empty_language()) return g.nothing();
  std::vector<int32_t> rules;
  rules.reserve(dfa.states.size());
  for (size_t s = 0; s < dfa.states.size(); ++s) rules.push_back(g.add_rule("dfa", g.nothing()));
  for (size_t s = 0; s < dfa.states.size(); ++s) {
    std::vector<int32_t> alts;
    for (const CharDfa::Edge& e : dfa.states[s].edges) {
      alts.push_back(g.seq({add_char_set(g, e.set, json_string), g.ref(rules[e.to])}));
    }
    if (dfa.states[s].accept) alts.push_back(g.empty());
    g.define(rules[s], g.alt(std::move(alts)));
  }
  return g.ref(rules[0]);
}

}  // namespace pagedllm::structured
