// All engine requests behind one HTTP request (prompts x best_of choices), seen from the HTTP
// thread: submits them, turns their token events into per-choice deltas, aborts choices that a
// stop string ended, and aborts everything left when it is cancelled or destroyed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/async_engine.h"
#include "server/choice_stream.h"
#include "server/openai_request.h"

namespace pagedllm::server {

struct PreparedPrompt {
  std::vector<int32_t> token_ids;  // one <|image_pad|> per image
  std::string text;                // for echo
  int max_tokens = 0;
  std::vector<ImageInput> images;  // prepared, in the order of their pads
  // The prompt's tokens as the engine counts them: each image's pad widened to its tokens.
  int64_t num_tokens() const;
};

class GenerationJob {
 public:
  GenerationJob(AsyncEngine& engine, const Tokenizer& tokenizer, const GenerationRequest& request,
                std::vector<PreparedPrompt> prompts, const std::string& id_prefix);
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  // Throws ApiError(503) when the engine's queue is full.
  void start();
  struct Update {
    size_t choice;  // index into choices()
    ChoiceDelta delta;
  };
  // Waits up to `timeout` and returns what changed.
  std::vector<Update> poll(std::chrono::milliseconds timeout);
  // Runs every choice to the end (non-streaming requests). Between polls it runs the thread's
  // interruption checks (util/interrupt.h), whose exception ends the wait.
  void wait_all();
  bool done() const;
  // Set when the engine refused a request; the job is over then.
  std::optional<std::string> error() const { return channel_->error(); }
  int error_status() const { return channel_->error_status(); }
  void cancel();

  size_t num_choices() const { return choices_.size(); }
  const ChoiceStream& choice(size_t i) const { return *choices_[i]; }
  size_t prompt_of(size_t choice) const { return choice / best_of_; }
  const std::vector<PreparedPrompt>& prompts() const { return prompts_; }
  int64_t prompt_tokens() const;
  // The choices to return: the best n of best_of per prompt by cumulative logprob, in order.
  std::vector<size_t> selected_choices(int n) const;

 private:
  AsyncEngine& engine_;
  std::vector<PreparedPrompt> prompts_;
  int best_of_;
  std::vector<std::string> request_ids_;
  std::vector<std::unique_ptr<ChoiceStream>> choices_;
  std::vector<Submission> submissions_;
  std::vector<bool> engine_finished_;
  std::shared_ptr<RequestChannel> channel_;
  bool started_ = false;
};

}  // namespace pagedllm::server
