#include "server/generation_job.h"

#include <algorithm>
#include <numeric>

#include "util/interrupt.h"

namespace pagedllm::server {

GenerationJob::GenerationJob(AsyncEngine& engine, const Tokenizer& tokenizer,
                             const GenerationRequest& request, std::vector<PreparedPrompt> prompts,
                             const std::string& id_prefix)
    : engine_(engine),
      prompts_(std::move(prompts)),
      best_of_(request.best_of),
      channel_(std::make_shared<RequestChannel>()) {
  ChoiceOptions options{request.stop, request.include_stop_str_in_output,
                        request.skip_special_tokens, request.top_logprobs.has_value(),
                        request.params.stop_token_ids};
  for (size_t p = 0; p < prompts_.size(); ++p) {
    for (int j = 0; j < best_of_; ++j) {
      const size_t index = choices_.size();
      Submission s;
      s.request_id = id_prefix + "-" + std::to_string(index);
      s.choice = index;
      s.prompt_token_ids = prompts_[p].token_ids;
      s.images = prompts_[p].images;
      s.params = request.params;
      s.params.max_tokens = prompts_[p].max_tokens;
      // Distinct seeds so that n seeded samples differ from each other yet repeat across calls.
      if (s.params.seed) s.params.seed = *s.params.seed + static_cast<uint64_t>(j);
      if (request.top_logprobs) s.params.logprobs = *request.top_logprobs;
      // Ranking best_of candidates needs each sampled token's logprob.
      if (best_of_ > request.n && !s.params.logprobs) s.params.logprobs = 0;
      const int32_t previous = prompts_[p].token_ids.back();
      choices_.push_back(std::make_unique<ChoiceStream>(tokenizer, previous, options));
      request_ids_.push_back(s.request_id);
      submissions_.push_back(std::move(s));
    }
  }
  engine_finished_.assign(choices_.size(), false);
}

GenerationJob::~GenerationJob() {
  cancel();
}

void GenerationJob::start() {
  engine_.submit(std::move(submissions_), channel_);
  started_ = true;
}

std::vector<GenerationJob::Update> GenerationJob::poll(std::chrono::milliseconds timeout) {
  std::vector<Update> updates;
  std::vector<std::string> stopped;
  for (TokenEvent& event : channel_->wait(timeout)) {
    const size_t i = event.choice;
    ChoiceStream& choice = *choices_[i];
    const bool was_finished = choice.finished();
    if (event.finished) engine_finished_[i] = true;
    ChoiceDelta delta = choice.consume(event);
    if (was_finished) continue;
    if (choice.finished() && !engine_finished_[i]) {
      // A stop string ended it: abort the engine request; nothing more to wait for.
      stopped.push_back(request_ids_[i]);
      engine_finished_[i] = true;
    }
    updates.push_back({i, std::move(delta)});
  }
  if (!stopped.empty()) engine_.abort(stopped, "stop");
  return updates;
}

void GenerationJob::wait_all() {
  while (!done() && !error()) {
    check_interruption();  // a client that left: the caller's scope throws, and ~GenerationJob
                           // aborts
    poll(std::chrono::milliseconds(100));
  }
}

bool GenerationJob::done() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const auto& c) { return c->finished(); });
}

void GenerationJob::cancel() {
  if (!started_) return;
  std::vector<std::string> running;
  for (size_t i = 0; i < choices_.size(); ++i)
    if (!engine_finished_[i]) running.push_back(request_ids_[i]);
  if (!running.empty()) engine_.abort(running, "abort");
  std::fill(engine_finished_.begin(), engine_finished_.end(), true);
}

int64_t GenerationJob::prompt_tokens() const {
  int64_t total = 0;
  for (const auto& p : prompts_) total += p.num_tokens();
  return total;
}

int64_t PreparedPrompt::num_tokens() const {
  int64_t total = static_cast<int64_t>(token_ids.size());
  for (const ImageInput& image : images) total += image.num_tokens - 1;
  return total;
}

std::vector<size_t> GenerationJob::selected_choices(int n) const {
  std::vector<size_t> all(choices_.size());
  std::iota(all.begin(), all.end(), 0);
  if (best_of_ == n) return all;  // every choice, in order
  std::vector<size_t> best;
  for (size_t p = 0; p < prompts_.size(); ++p) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(p * best_of_);
    std::stable_sort(first, first + best_of_, [&](size_t a, size_t b) {
      return choices_[a]->cumulative_logprob() > choices_[b]->cumulative_logprob();
    });
    best.insert(best.end(), first, first + n);
  }
  return best;
}

}  // namespace pagedllm::server
