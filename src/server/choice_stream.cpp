#include "server/choice_stream.h"

#include <algorithm>

namespace pagedllm::server {

ChoiceStream::ChoiceStream(const Tokenizer& tokenizer, int32_t previous, ChoiceOptions options)
    : tokenizer_(tokenizer),
      options_(std::move(options)),
      detokenizer_(tokenizer, previous, options_.skip_special_tokens),
      stop_(options_.stop, options_.include_stop_str_in_output),
      previous_(previous) {}

LogprobEntry ChoiceStream::make_entry(const SampledToken& s) const {
  auto alternative = [&](int32_t id, float logprob) {
    return TokenAlternative{id, tokenizer_.decode_token(previous_, id, false), logprob};
  };
  LogprobEntry entry{alternative(s.token_id, s.logprob), {}};
  for (const TokenLogprob& t : s.top_logprobs)
    entry.top.push_back(alternative(t.token_id, t.logprob));
  return entry;
}

ChoiceDelta ChoiceStream::consume(const TokenEvent& event) {
  ChoiceDelta delta;
  if (finished_) return delta;
  for (size_t i = 0; i < event.token_ids.size() && !finished_; ++i) {
    const int32_t token = event.token_ids[i];
    ++num_tokens_;
    if (i < event.logprobs.size()) {
      cumulative_logprob_ += event.logprobs[i].logprob;
      if (options_.logprobs) delta.logprobs.push_back(make_entry(event.logprobs[i]));
    }
    previous_ = token;
    last_token_ = token;
    delta.text += stop_.push(detokenizer_.push(token));
    if (stop_.matched()) finish("stop", delta);
  }
  if (!finished_ && event.finished) {
    delta.text += stop_.push(detokenizer_.flush());
    delta.text += stop_.flush();
    finish(stop_.matched() ? "stop" : event.finish_reason, delta);
  }
  text_ += delta.text;
  logprobs_.insert(logprobs_.end(), delta.logprobs.begin(), delta.logprobs.end());
  return delta;
}

void ChoiceStream::finish(const std::string& reason, ChoiceDelta& delta) {
  finished_ = true;
  delta.finished = true;
  finish_reason_ = reason;
}

nlohmann::ordered_json ChoiceStream::stop_reason() const {
  if (stop_.matched()) return stop_.matched_stop();
  const auto& ids = options_.stop_token_ids;
  if (finish_reason_ == "stop" && last_token_ &&
      std::find(ids.begin(), ids.end(), *last_token_) != ids.end())
    return *last_token_;
  return nullptr;
}

}  // namespace pagedllm::server
