// Stop strings over streamed text. A stop string may be split across tokens, so text that could
// be the start of one is held back until the next piece shows whether it is.
//
//   stops = {"\n\n"}:  push("Hello\n") -> "Hello"   ("\n" held back)
//                      push("\nBye")   -> ""        (matched: the output ends at "Hello")
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagedllm::server {

class StopStringMatcher {
 public:
  StopStringMatcher(std::vector<std::string> stops, bool include_stop_in_output)
      : stops_(std::move(stops)), include_stop_(include_stop_in_output) {}

  // Adds decoded text; returns the text that can be sent now. Once a stop string has matched,
  // the output ends there and later text is dropped.
  std::string push(std::string_view text);
  // The text still held back, once no more text will come.
  std::string flush();
  bool matched() const { return matched_; }
  const std::string& matched_stop() const { return matched_stop_; }

 private:
  size_t held_back_length(std::string_view text) const;

  std::vector<std::string> stops_;
  bool include_stop_;
  std::string held_;
  bool matched_ = false;
  std::string matched_stop_;
};

}  // namespace pagedllm::server
