// The one internal grammar form every front end (JSON Schema, regex, GBNF, choices) compiles
// to: a context-free grammar whose rules are EBNF expressions over bytes, Unicode code point
// classes (expanded to UTF-8 byte paths later) and references to other rules.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::structured {

// A grammar, regex or schema that cannot be compiled; the message says what and where.
class GrammarError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CodePointRange {
  uint32_t lo, hi;  // inclusive
};

// A set of Unicode scalar values, kept sorted and merged.
class CodePointSet {
 public:
  void add(uint32_t lo, uint32_t hi);
  void add(const CodePointSet& other);
  CodePointSet complement() const;  // within U+0000..U+10FFFF
  CodePointSet minus(const CodePointSet& other) const;
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<CodePointRange>& ranges() const { return ranges_; }

 private:
  std::vector<CodePointRange> ranges_;
};

enum class ExprKind : uint8_t {
  kEmpty,      // matches ""
  kNothing,    // matches no string
  kBytes,      // one byte in [lo, hi]
  kChars,      // one UTF-8 encoded code point from a set
  kSeq,        // children in order
  kAlt,        // any one child
  kRepeat,     // child min..max times (max < 0: unbounded)
  kRef,        // the rule `rule`
  kJsonChars,  // min..max JSON string characters (raw or escaped); the matcher's fast path
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  uint8_t lo = 0, hi = 0;     // kBytes
  int32_t min = 0, max = 0;   // kRepeat, kJsonChars
  int32_t rule = -1;          // kRef
  std::vector<int32_t> kids;  // kSeq, kAlt, kRepeat (one)
  CodePointSet chars;         // kChars
};

struct Rule {
  std::string name;
  int32_t body = -1;  // an Expr id; -1 while declared but not defined
};

// Expressions live in one pool and are referred to by index, so front ends can share
// sub-expressions and rules can refer to each other before they are defined.
class Grammar {
 public:
  int32_t empty() { return add({}); }
  int32_t nothing();
  int32_t byte_range(uint8_t lo, uint8_t hi);
  int32_t literal(std::string_view bytes);
  int32_t chars(CodePointSet set);
  int32_t seq(std::vector<int32_t> kids);
  int32_t alt(std::vector<int32_t> kids);
  int32_t repeat(int32_t kid, int32_t min, int32_t max);
  int32_t optional(int32_t kid) { return repeat(kid, 0, 1); }
  int32_t ref(int32_t rule);
  int32_t json_chars(int32_t min, int32_t max);

  // Declares a rule (or finds it by name); define() gives it a body.
  int32_t declare_rule(const std::string& name);
  int32_t find_rule(const std::string& name) const;
  void define(int32_t rule, int32_t body);
  // A new rule with a fresh name derived from `hint`.
  int32_t add_rule(const std::string& hint, int32_t body);

  void set_start(int32_t rule) { start_ = rule; }
  int32_t start() const { return start_; }
  const std::vector<Rule>& rules() const { return rules_; }
  const Expr& expr(int32_t id) const { return exprs_[static_cast<size_t>(id)]; }
  size_t num_exprs() const { return exprs_.size(); }

 private:
  int32_t add(Expr e);

  std::vector<Expr> exprs_;
  std::vector<Rule> rules_;
  int32_t start_ = -1;
};

// Appends the UTF-8 encoding of a code point.
void append_utf8(std::string& out, uint32_t cp);
// Decodes one UTF-8 code point at text[i], advancing i; -1 for an invalid sequence.
int32_t next_utf8(std::string_view text, size_t& i);

}  // namespace pagedllm::structured
