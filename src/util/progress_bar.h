// A progress bar on stderr, drawn only when stderr is a terminal (logs stay clean otherwise).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace pagedllm {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void update(size_t done, size_t total);
  // Ends the bar's line, so that what follows starts on a line of its own; later updates draw
  // nothing.
  void finish();

 private:
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace pagedllm
