// Variable scopes and loop-control state while a template renders, and the built-in filters,
// tests and Python methods expressions call (jinja_builtins.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/jinja_value.h"
#include "util/interrupt.h"

namespace pagedllm::jinja {

// Bounds recursion through macros and recursive loops, so untrusted templates cannot exhaust
// the stack.
constexpr int kMaxCallDepth = 200;
// Bounds the work and the output of one rendering, so that a template loop over a huge range
// (or loops nested within each other) ends with an error instead of running for hours: every
// statement and loop iteration is a step. Real chat templates take a few thousand.
constexpr int64_t kMaxSteps = 2'000'000;
constexpr size_t kMaxOutputBytes = 64u << 20;

[[noreturn]] inline void fail_at(int line, const std::string& what) {
  throw TemplateError("line " + std::to_string(line) + ": " + what);
}

class Context {
 public:
  enum class Flow { kNormal, kBreak, kContinue };

  explicit Context(std::unordered_map<std::string, Value> globals) {
    scopes_.push_back(std::move(globals));
  }

  Value lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { scopes_.back()[name] = std::move(v); }
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }

  // Macros run with only the template's top level and their arguments in view.
  std::vector<std::unordered_map<std::string, Value>> enter_macro();
  void leave_macro(std::vector<std::unordered_map<std::string, Value>> saved) {
    scopes_ = std::move(saved);
  }

  // One statement or loop iteration more; throws TemplateError past kMaxSteps.
  // Each step is also where an InterruptScope may stop the rendering.
  void step(int line) {
    interruption_point(kCallsPerClockRead);
    if (++steps_ > kMaxSteps) {
      fail_at(line, "the template ran past its limit of " + std::to_string(kMaxSteps) + " steps");
    }
  }

  Flow flow = Flow::kNormal;
  int call_depth = 0;  // guards runaway recursion (recursive loops, macros)

 private:
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  int64_t steps_ = 0;
};

Value apply_filter(const std::string& name, const Value& value, const Arguments& args,
                   Context& ctx);
bool apply_test(const std::string& name, const Value& value, const Arguments& args);
// obj.name: a dict key, or a bound Python method of strings, lists and dicts.
Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& index);
Value call_value(const Value& callee, const Arguments& args);
// range(), namespace(), dict() and the like.
void add_builtin_globals(std::unordered_map<std::string, Value>& globals);

}  // namespace pagedllm::jinja
