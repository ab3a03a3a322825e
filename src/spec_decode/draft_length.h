// How many drafts one request proposes, adapted to how many it gets accepted, so that a request
// whose guesses fail stops paying for them. A verify step of 1 + k tokens costs more than a
// plain decode step (on a CPU, little more at batch 1 and nearly k + 1 times the compute in a
// large batch), and only accepted drafts pay that back.
//
// The rule: all drafts accepted -> one more next time (up to K); some rejected -> as many as
// were accepted plus one; two verify steps in a row with nothing accepted -> no drafts for a
// cool-down of 1, 2, 4 ... 64 steps, doubling each time it happens again and reset by the
// first accepted draft. After a cool-down the request tries one draft again.
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
      misses_ = 0;
      backoff_ = 1;
      return;
    }
    if (++misses_ < 2) return;
    misses_ = 0;
    cooldown_ = backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
    next_ = 1;
  }
  int cooldown() const { return cooldown_; }

 private:
  static constexpr int kMaxBackoff = 64;
  int max_;
  int next_;
  int misses_ = 0;
  int cooldown_ = 0;
  int backoff_ = 1;
};

}  // namespace pagedllm
