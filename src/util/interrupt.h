// Stopping long work from above without passing a token through every call.
//
// The lower layers (tokenizers, the Jinja renderer, detokenization) know nothing of clients,
// deadlines or shutdowns, but their loops can run for seconds on a hostile input. Each such loop
// calls interruption_point(). A caller higher up (the server, for one request) installs an
// InterruptScope on its thread with a check that throws when the work should stop: the check's
// exception unwinds the loop and reaches the caller, whose handler knows what it means.
//
// interruption_point() is cheap enough for a tokenizer's inner loop: without a scope it is one
// thread-local load; with one, it reads the clock every kCallsPerClockRead calls and runs the
// checks only once the scope's interval has passed since the last run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace pagedllm {

class InterruptScope {
 public:
  using Check = std::function<void()>;  // throws to stop the work
  // Installs `check` on this thread until the scope ends. Scopes nest: the inner one runs its
  // own check, then the outer ones'.
  explicit InterruptScope(Check check,
                          std::chrono::microseconds interval = std::chrono::milliseconds(2));
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Runs this scope's check and every enclosing one's, now.
  void run_checks();

 private:
  friend void interruption_point(uint32_t);
  Check check_;
  std::chrono::microseconds interval_;
  std::chrono::steady_clock::time_point last_run_;
  InterruptScope* outer_;
  uint32_t calls_ = 0;
};

// Where long loops may be stopped: runs the current scope's checks when their interval has
// passed. `weight` is the step's cost in cheap steps: a step that may take microseconds (a
// template statement) passes kCallsPerClockRead so that every call reads the clock. Never call
// it from a destructor or a noexcept function: the checks throw.
inline constexpr uint32_t kCallsPerClockRead = 256;
void interruption_point(uint32_t weight = 1);

// Runs the current scope's checks at once (for loops whose steps are slow anyway).
void check_interruption();

}  // namespace pagedllm
