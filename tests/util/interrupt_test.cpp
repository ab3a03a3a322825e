// InterruptScope: checks run on the scope's own thread, at interruption points once the
// interval has passed, innermost scope first, and throwing from a check ends the work.
#include "util/interrupt.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace pagedllm {
namespace {

struct Stopped {
  std::string by;
};

TEST(InterruptScope, WithoutAScopeInterruptionPointsDoNothing) {
  for (int i = 0; i < 10000; ++i) interruption_point(kCallsPerClockRead);
  check_interruption();
  SUCCEED();
}

TEST(InterruptScope, CheapPointsReadTheClockOncePerBatchAndHeavyOnesEveryTime) {
  int runs = 0;
  InterruptScope scope([&] { ++runs; }, std::chrono::microseconds(0));
  for (uint32_t i = 0; i < kCallsPerClockRead - 1; ++i) interruption_point();
  EXPECT_EQ(runs, 0);
  interruption_point();
  EXPECT_EQ(runs, 1);
  for (int i = 0; i < 5; ++i) interruption_point(kCallsPerClockRead);
  EXPECT_EQ(runs, 6);
  check_interruption();
  EXPECT_EQ(runs, 7);
}

TEST(InterruptScope, ChecksWaitForTheIntervalSinceTheLastRun) {
  int runs = 0;
  InterruptScope scope([&] { ++runs; }, std::chrono::hours(1));
  for (int i = 0; i < 100; ++i) interruption_point(kCallsPerClockRead);
  EXPECT_EQ(runs, 0);  // an hour has not passed
  check_interruption();
  EXPECT_EQ(runs, 1);  // forced
}

TEST(InterruptScope, NestedScopesRunInnermostFirstAndTheOuterOneComesBack) {
  std::string order;
  InterruptScope outer([&] { order += "o"; }, std::chrono::microseconds(0));
  {
    InterruptScope inner([&] { order += "i"; }, std::chrono::microseconds(0));
    check_interruption();
    EXPECT_EQ(order, "io");
  }
  order.clear();
  check_interruption();
  EXPECT_EQ(order, "o");
}

TEST(InterruptScope, AThrowingCheckEndsTheLoopAndTheScopeIsLeftBehind) {
  int steps = 0;
  try {
    InterruptScope scope([&] { throw Stopped{"check"}; }, std::chrono::microseconds(0));
    for (;; ++steps) interruption_point();
  } catch (const Stopped& s) {
    EXPECT_EQ(s.by, "check");
  }
  EXPECT_EQ(steps, static_cast<int>(kCallsPerClockRead) - 1);
  check_interruption();  // no scope any more: nothing runs, nothing throws
}

TEST(InterruptScope, AScopeOnOneThreadDoesNotReachAnother) {
  int runs = 0;
  InterruptScope scope([&] { ++runs; }, std::chrono::microseconds(0));
  std::thread([] { check_interruption(); }).join();
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace pagedllm
