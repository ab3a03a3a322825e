// How many drafts one request proposes, adapted to how many it gets accepted, so that a request
// whose guesses fail stops paying for them. A verify step of 1 + k tokens costs more than a
// plain decode step (on a CPU, little more at batch 1 and nearly k + 1 times the compute in a
// large batch), and only accepted drafts pay that back.
//
// The rule: all drafts accepted -> one more next time (up to K); some rejected -> as many as
// were accepted plus one; a verify step with nothing accepted -> no drafts for a cool-down of
// 2, 8, 32, then 64 steps, growing each time it happens again and reset by the first accepted
// draft. After a cool-down the request tries one draft again. On text where nothing is ever
// accepted that is 4 verify steps in the first 64 tokens and one per 64 after: about 1 % of a
// 1B model's decode time at a verify cost of 1.3 decode steps.
#pragma once

#include <algorithm>

namespace pagedllm {

class DraftLength {
 public:
  explicit DraftLength(int max_drafts = 0) : max_(max_drafts), next_(max_drafts) {}

  // Drafts to propose now (0: none this step). Counts down a cool-down.
  int take() {
    if (cooldown_ > 0) {
      --cooldown_;
      return 0;
    }
    return next_;
  }
  // A verify step of `proposed` drafts, of which `accepted` were kept.
  void record(int proposed, int accepted) {
    if (proposed <= 0) return;
    if (accepted >= proposed) {
      next_ = std::min(max_, proposed + 1);
    } else {
      next_ = std::max(1, accepted + 1);
    }
    if (accepted > 0) {
      backoff_ = kFirstBackoff;
      return;
    }
    cooldown_ = backoff_;
    backoff_ = std::min(backoff_ * 4, kMaxBackoff);
    next_ = 1;
  }
  int cooldown() const { return cooldown_; }

 private:
  static constexpr int kFirstBackoff = 2;
  static constexpr int kMaxBackoff = 64;
  int max_;
  int next_;
  int cooldown_ = 0;
  int backoff_ = kFirstBackoff;
};

}  // namespace pagedllm
