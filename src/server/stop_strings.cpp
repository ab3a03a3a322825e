#include "server/stop_strings.h"

#include <algorithm>

namespace pagedllm::server {

std::string StopStringMatcher::push(std::string_view text) {
  if (matched_) return {};
  if (stops_.empty()) return std::string(text);
  held_.append(text);
  // The earliest match wins; held_ had no full match before, so any match ends in the new text.
  size_t best = std::string::npos;
  const std::string* best_stop = nullptr;
  for (const std::string& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at < best) {
      best = at;
      best_stop = &stop;
    }
  }
  if (best_stop) {
    matched_ = true;
    matched_stop_ = *best_stop;
    std::string out = held_.substr(0, best + (include_stop_ ? best_stop->size() : 0));
    held_.clear();
    return out;
  }
  const size_t keep = held_back_length(held_);
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out;
  out.swap(held_);
  return matched_ ? std::string() : out;
}

// The longest suffix of text that is a proper prefix of some stop string. Such a suffix starts
// on a character boundary, since a stop string starts with one.
size_t StopStringMatcher::held_back_length(std::string_view text) const {
  size_t longest = 0;
  for (const std::string& stop : stops_) {
    const size_t max_len = std::min(text.size(), stop.size() - 1);
    for (size_t len = max_len; len > longest; --len) {
      if (text.substr(text.size() - len) == std::string_view(stop).substr(0, len)) {
        longest = len;
        break;
      }
    }
  }
  return longest;
}

}  // namespace pagedllm::server
