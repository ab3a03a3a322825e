#include "util/interrupt.h"

namespace pagedllm {

namespace {

thread_local InterruptScope* current_scope = nullptr;

}  // namespace

InterruptScope::InterruptScope(Check check, std::chrono::microseconds interval)
    : check_(std::move(check)),
      interval_(interval),
      last_run_(std::chrono::steady_clock::now()),
      outer_(current_scope) {
  current_scope = this;
}

InterruptScope::~InterruptScope() {
  current_scope = outer_;
}

void InterruptScope::run_checks() {
  last_run_ = std::chrono::steady_clock::now();
  for (InterruptScope* s = this; s; s = s->outer_) {
    if (s->check_) s->check_();
  }
}

// A clock read costs about as much as a few dozen cheap steps, and kCallsPerClockRead cheap
// steps of any loop that calls this take well under a scope's interval.
void interruption_point(uint32_t weight) {
  InterruptScope* scope = current_scope;
  if (!scope) return;
  scope->calls_ += weight;
  if (scope->calls_ < kCallsPerClockRead) return;
  scope->calls_ = 0;
  if (std::chrono::steady_clock::now() - scope->last_run_ < scope->interval_) return;
  scope->run_checks();
}

void check_interruption() {
  if (InterruptScope* scope = current_scope) scope->run_checks();
}

}  // namespace pagedllm
