// One choice of a completion as the client sees it: token events from the engine become text
// (whole UTF-8 characters, stop strings held back and trimmed), logprob entries and a finish
// reason. Runs on the HTTP thread that serves the request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/async_engine.h"
#include "server/stop_strings.h"
#include "tokenizer/incremental_detokenizer.h"

namespace pagedllm::server {

struct TokenAlternative {
  int32_t token_id = 0;
  std::string text;  // the token's text at this position (may be part of a character)
  float logprob = 0;
};

struct LogprobEntry {
  TokenAlternative sampled;
  std::vector<TokenAlternative> top;
};

// What one batch of events added to a choice.
struct ChoiceDelta {
  std::string text;
  std::vector<LogprobEntry> logprobs;
  bool finished = false;
};

struct ChoiceOptions {
  std::vector<std::string> stop;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  bool logprobs = false;  // collect a LogprobEntry per token
  std::vector<int32_t> stop_token_ids;
};

class ChoiceStream {
 public:
  // `previous` is the prompt's last token (the context of the first output token's text).
  ChoiceStream(const Tokenizer& tokenizer, int32_t previous, ChoiceOptions options);

  ChoiceDelta consume(const TokenEvent& event);
  bool finished() const { return finished_; }
  // "stop" or "length" ("abort" when the engine ended it).
  const std::string& finish_reason() const { return finish_reason_; }
  // The stop string or stop token id that ended the choice; null otherwise.
  nlohmann::ordered_json stop_reason() const;
  // True when a stop string ended the choice before the engine did: the engine request must be
  // aborted.
  bool stopped_by_string() const { return stop_.matched(); }
  int num_tokens() const { return num_tokens_; }
  double cumulative_logprob() const { return cumulative_logprob_; }
  const std::string& text() const { return text_; }
  const std::vector<LogprobEntry>& logprobs() const { return logprobs_; }

 private:
  LogprobEntry make_entry(const SampledToken& s) const;
  void finish(const std::string& reason, ChoiceDelta& delta);

  const Tokenizer& tokenizer_;
  ChoiceOptions options_;
  IncrementalDetokenizer detokenizer_;
  StopStringMatcher stop_;
  int32_t previous_;
  int num_tokens_ = 0;
  double cumulative_logprob_ = 0;
  std::optional<int32_t> last_token_;
  bool finished_ = false;
  std::string finish_reason_;
  std::string text_;
  std::vector<LogprobEntry> logprobs_;
};

}  // namespace pagedllm::server
