#include "util/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace pagedllm {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::finish() {
  if (drawn_) std::fputc('\n', stderr);
  drawn_ = false;
  enabled_ = false;
}

void ProgressBar::update(size_t done, size_t total) {
  if (!enabled_ || total == 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r%s [%.*s%*s] %zu/%zu %.1fs", label_.c_str(), filled,
               "==============================", kWidth - filled, "", done, total, secs);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace pagedllm
