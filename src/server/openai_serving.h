// The OpenAI endpoints without HTTP: a JSON body in, an ApiResponse out. Validation and
// tokenization run on the calling (HTTP) thread; generation goes through the AsyncEngine.
// Keeping HTTP out makes these testable and fuzzable on their own.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "pagedllm/engine.h"
#include "server/async_engine.h"
#include "server/chat_images.h"
#include "server/chat_output.h"
#include "server/generation_job.h"
#include "server/openai_request.h"
#include "util/interrupt.h"

namespace pagedllm::server {

// A Server-Sent Events body produced piece by piece.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Appends the next events to `out` (waiting briefly for them); false once the stream ended.
  virtual bool next(std::string& out) = 0;
  // The client went away: abort what is still generating.
  virtual void cancel() = 0;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::shared_ptr<EventStream> stream;  // set for streaming responses (body unused)
};

struct ServingOptions {
  std::string served_model_name;
  std::string model_path;
  std::string chat_template_file;  // empty: the model's own template
  // Longest a request may spend being prepared (chat template, tokenization, detokenization
  // for echo) before it is refused with 400; 0: no limit.
  double preprocess_timeout_s = 30;
  // vLLM's --tool-call-parser, --enable-auto-tool-choice and --reasoning-parser (docs/TOOLS.md).
  std::string tool_call_parser;
  bool enable_auto_tool_choice = false;
  std::string reasoning_parser;
  // Image parts of chat messages: where their bytes may come from, and how many a prompt takes.
  ChatImageOptions images;
};

class OpenAIServing {
 public:
  // Throws std::runtime_error when --chat-template cannot be read or parsed.
  OpenAIServing(const Engine& engine, AsyncEngine& async_engine, ServingOptions options);

  // Each throws ApiError for a request that cannot be served.
  ApiResponse completions(const std::string& body);
  ApiResponse chat_completions(const std::string& body);
  ApiResponse tokenize(const std::string& body) const;
  ApiResponse detokenize(const std::string& body) const;
  ApiResponse models() const;

  const std::string& model_name() const { return options_.served_model_name; }
  bool has_chat_template() const { return chat_template_ != nullptr; }
  // Reads and compiles a template file; throws std::runtime_error naming the file and the
  // problem. serve calls it before loading the model, so a bad template fails at once.
  static std::unique_ptr<ChatTemplate> load_chat_template_file(const std::string& path);

 private:
  std::string render_chat(const nlohmann::ordered_json& messages,
                          const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs,
                          bool add_generation_prompt, bool continue_final_message) const;
  void check_model(const std::string& model) const;
  // How the request's choices become messages; 400 for tool_choice "auto" without the flags.
  ChatOutputOptions chat_output_options(const ChatRequest& r) const;
  // The request's output constraint: a forced tool call's, and after the reasoning of a model
  // that thinks first.
  void constrain_chat_output(ChatRequest& r, const ChatOutputOptions& output) const;
  // Compiles the request's output constraint now, on this thread: 400 when it does not.
  void compile_structured_outputs(const GenerationRequest& r) const;
  std::vector<PreparedPrompt> prepare_prompts(const CompletionRequest& r) const;
  PreparedPrompt prepare_chat_prompt(const ChatRequest& r) const;
  // The rendered and tokenized prompt of a chat with images: the template's parts, or the
  // placeholders as text for a template that ignores image parts.
  std::vector<int32_t> tokenize_chat_with_images(const ChatRequest& r, std::string& prompt) const;
  // For an InterruptScope around a request's preparation: stops it at shutdown (it could not
  // be queued anyway) and past preprocess_timeout_s. `field` names the input in the error.
  InterruptScope::Check preparation_check(const char* field) const;

  const Engine& engine_;
  AsyncEngine& async_engine_;
  ServingOptions options_;
  std::unique_ptr<ChatTemplate> chat_template_;
  int32_t image_pad_id_ = -1;  // the model's <|image_pad|>, for a model that takes images
  int64_t created_;
};

// A random id suffix such as "3f9c1a...", for request ids.
std::string random_id();

}  // namespace pagedllm::server
