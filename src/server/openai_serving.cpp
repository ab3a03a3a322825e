#include "server/openai_serving.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "server/api_error.h"
#include "server/chat_output.h"
#include "server/generation_job.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

namespace pagedllm::server {

namespace {

constexpr std::chrono::milliseconds kPollInterval(100);

int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void warn_ignored(const std::vector<std::string>& ignored) {
  if (ignored.empty()) return;
  std::string names;
  for (const auto& n : ignored) names += (names.empty() ? "" : ", ") + n;
  log_warning("server", "The following fields were present in the request but ignored: " + names);
}

// A text whose length alone proves that its tokens cannot fit max_model_len is refused before
// it is tokenized: no token stands for more than the tokenizer's bound of text bytes.
void check_text_can_fit(const Tokenizer& tok, std::string_view text, const Engine& engine,
                        bool chat) {
  const size_t per_token = tok.max_text_bytes_per_token();
  if (per_token == 0) return;
  const auto at_least = static_cast<int64_t>((text.size() + per_token - 1) / per_token);
  const int64_t limit = engine.max_model_len();
  if (at_least < limit) return;
  const char* what = chat ? "messages" : "prompt";
  throw bad_request("This model's maximum context length is " + std::to_string(limit) +
                        " tokens. However, your " + what + " is " + std::to_string(text.size()) +
                        " bytes, at least " + std::to_string(at_least) + " tokens (no token " +
                        "stands for more than " + std::to_string(per_token) +
                        " bytes), so it was refused before tokenizing.",
                    what);
}

// Checks ids against the vocabulary and fixes max_tokens within max_model_len, where each image
// counts its tokens.
PreparedPrompt prepare(std::vector<int32_t> ids, std::string text, const GenerationRequest& r,
                       const Engine& engine, bool chat, std::vector<ImageInput> images = {}) {
  if (ids.empty()) throw bad_request("the prompt is empty", chat ? "messages" : "prompt");
  for (int32_t id : ids) {
    if (id >= engine.vocab_size())
      throw bad_request("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                            std::to_string(engine.vocab_size()) + ")",
                        "prompt");
  }
  const int64_t len = expanded_prompt_length(ids.size(), images);
  const int64_t limit = engine.max_model_len();
  const char* what = chat ? "messages" : "prompt";
  if (r.max_tokens_given && len + r.params.max_tokens > limit) {
    throw bad_request(
        "This model's maximum context length is " + std::to_string(limit) +
            " tokens. However, you requested " + std::to_string(len + r.params.max_tokens) +
            " tokens (" + std::to_string(len) + " in the " + what + ", " +
            std::to_string(r.params.max_tokens) +
            " in the completion). Please reduce the length of the " + what + " or completion.",
        "max_tokens");
  }
  if (len >= limit) {
    throw bad_request("This model's maximum context length is " + std::to_string(limit) +
                          " tokens. However, your " + what + " has " + std::to_string(len) +
                          " tokens, which leaves no room for the completion.",
                      what);
  }
  PreparedPrompt p{std::move(ids), std::move(text), 0, std::move(images)};
  // Absent max_tokens: completions keep OpenAI's 16 where it fits, chat runs to the limit.
  if (r.max_tokens_given) {
    p.max_tokens = r.params.max_tokens;
  } else {
    const int64_t room = limit - len;
    p.max_tokens = static_cast<int>(chat ? room : std::min<int64_t>(room, r.params.max_tokens));
  }
  if (r.params.min_tokens > p.max_tokens)
    throw bad_request("min_tokens must be less than or equal to max_tokens", "min_tokens");
  return p;
}

// What both streams share: the job, the chunk envelope, and the ending (an error event, or
// the usage chunk when asked for, then [DONE]).
class JobStream : public EventStream {
 public:
  void cancel() override { job_->cancel(); }

 protected:
  JobStream(std::unique_ptr<GenerationJob> job, bool include_usage, ojson base)
      : job_(std::move(job)), include_usage_(include_usage), base_(std::move(base)) {}

  std::string event_with(ojson choice) const {
    ojson j = base_;
    j["choices"] = ojson::array({std::move(choice)});
    if (include_usage_) j["usage"] = nullptr;
    return sse_event(j);
  }

  // Appends the stream's end once the job is over; returns whether the stream goes on.
  bool continues(std::string& out) {
    if (auto error = job_->error()) {
      out += sse_event(error_json(job_->error_status(), *error)) + kSseDone;
      ended_ = true;
      return false;
    }
    if (!job_->done()) return true;
    if (include_usage_) {
      int64_t completion = 0;
      for (size_t i = 0; i < job_->num_choices(); ++i) completion += job_->choice(i).num_tokens();
      ojson last = base_;
      last["choices"] = ojson::array();
      last["usage"] = usage_json(job_->prompt_tokens(), completion);
      out += sse_event(last);
    }
    out += kSseDone;
    ended_ = true;
    return false;
  }

  std::unique_ptr<GenerationJob> job_;
  bool include_usage_;
  ojson base_;
  bool ended_ = false;
};

// The stream of /v1/completions chunks.
class CompletionStream : public JobStream {
 public:
  CompletionStream(std::unique_ptr<GenerationJob> job, CompletionRequest request, ojson base)
      : JobStream(std::move(job), request.include_usage, std::move(base)),
        request_(std::move(request)),
        offsets_(job_->num_choices(), 0),
        echoed_(job_->num_choices(), !request_.echo) {}

  bool next(std::string& out) override {
    if (ended_) return false;
    for (auto& u : job_->poll(kPollInterval)) out += chunk(u.choice, u.delta);
    return continues(out);
  }

 private:
  std::string chunk(size_t i, const ChoiceDelta& delta) {
    std::string text = delta.text;
    if (!echoed_[i]) {
      text = job_->prompts()[job_->prompt_of(i)].text + text;
      echoed_[i] = true;
    }
    if (text.empty() && delta.logprobs.empty() && !delta.finished) return {};
    const ChoiceStream& c = job_->choice(i);
    return event_with(
        {{"index", i},
         {"text", text},
         {"logprobs", request_.top_logprobs ? completion_logprobs_json(delta.logprobs, offsets_[i])
                                            : ojson(nullptr)},
         {"finish_reason", delta.finished ? ojson(c.finish_reason()) : ojson(nullptr)},
         {"stop_reason", delta.finished ? c.stop_reason() : ojson(nullptr)}});
  }

  CompletionRequest request_;
  std::vector<size_t> offsets_;
  std::vector<bool> echoed_;
};

// The stream of /v1/chat/completions chunks: a role chunk per choice, then content or tool-call
// deltas.
class ChatStream : public JobStream {
 public:
  ChatStream(std::unique_ptr<GenerationJob> job, ChatRequest request, ojson base,
             const ChatOutputOptions& output)
      : JobStream(std::move(job), request.include_usage, std::move(base)),
        request_(std::move(request)) {
    for (size_t i = 0; i < job_->num_choices(); ++i) outputs_.emplace_back(output);
  }

  bool next(std::string& out) override {
    if (ended_) return false;
    if (!sent_roles_) {
      for (size_t i = 0; i < job_->num_choices(); ++i)
        out += chunk(i, {{"role", "assistant"}, {"content", ""}}, nullptr, nullptr);
      sent_roles_ = true;
    }
    for (auto& u : job_->poll(kPollInterval)) {
      const ChoiceStream& c = job_->choice(u.choice);
      ChatOutput& output = outputs_[u.choice];
      ojson delta = output.feed(u.delta.text, u.delta.finished);
      if (delta.empty() && u.delta.logprobs.empty() && !u.delta.finished) continue;
      out +=
          chunk(u.choice, std::move(delta),
                request_.top_logprobs ? chat_logprobs_json(u.delta.logprobs) : ojson(nullptr),
                u.delta.finished ? ojson(output.finish_reason(c.finish_reason())) : ojson(nullptr));
    }
    return continues(out);
  }

 private:
  std::string chunk(size_t i, ojson delta, ojson logprobs, ojson finish_reason) {
    ojson choice = {{"index", i},
                    {"delta", std::move(delta)},
                    {"logprobs", std::move(logprobs)},
                    {"finish_reason", finish_reason}};
    if (!finish_reason.is_null()) choice["stop_reason"] = job_->choice(i).stop_reason();
    return event_with(std::move(choice));
  }

  ChatRequest request_;
  std::vector<ChatOutput> outputs_;
  bool sent_roles_ = false;
};

ApiResponse json_response(const ojson& j, int status = 200) {
  return ApiResponse{status, "application/json", to_body(j), nullptr};
}

// A non-streamed response: the selected choices, each as {"index"} + fields(job index, choice)
// + finish and stop reasons, and the usage.
template <typename ChoiceFields>
ApiResponse full_response(const GenerationJob& job, int n, ojson base, ChoiceFields&& fields) {
  ojson choices = ojson::array();
  int64_t completion_tokens = 0;
  for (size_t i : job.selected_choices(n)) {
    const ChoiceStream& c = job.choice(i);
    completion_tokens += c.num_tokens();
    ojson choice = {{"index", choices.size()}};
    choice.update(fields(i, c));
    if (!choice.contains("finish_reason")) choice["finish_reason"] = c.finish_reason();
    choice["stop_reason"] = c.stop_reason();
    choices.push_back(std::move(choice));
  }
  base["choices"] = std::move(choices);
  base["usage"] = usage_json(job.prompt_tokens(), completion_tokens);
  return json_response(base);
}

void run_to_end(GenerationJob& job) {
  job.start();
  job.wait_all();
  if (auto error = job.error()) throw ApiError(job.error_status(), *error);
}

}  // namespace

std::string random_id() {
  static std::mutex mutex;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard lock(mutex);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

OpenAIServing::OpenAIServing(const Engine& engine, AsyncEngine& async_engine,
                             ServingOptions options)
    : engine_(engine),
      async_engine_(async_engine),
      options_(std::move(options)),
      created_(unix_time()) {
  if (!options_.chat_template_file.empty()) {
    chat_template_ = load_chat_template_file(options_.chat_template_file);
  } else if (const std::string source = engine.tokenizer().chat_template(); !source.empty()) {
    try {
      chat_template_ = std::make_unique<ChatTemplate>(source);
    } catch (const std::exception& e) {
      throw std::runtime_error("chat template: " + std::string(e.what()));
    }
  }
  if (engine.supports_images()) {
    const std::vector<int32_t> pad = engine.tokenizer().encode(kImagePadText, false);
    if (pad.size() == 1) image_pad_id_ = pad[0];
  }
}

std::unique_ptr<ChatTemplate> OpenAIServing::load_chat_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read chat template '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return std::make_unique<ChatTemplate>(ss.str());
  } catch (const std::exception& e) {
    throw std::runtime_error("chat template " + path + ": " + e.what());
  }
}

InterruptScope::Check OpenAIServing::preparation_check(const char* field) const {
  const auto start = std::chrono::steady_clock::now();
  return [this, start, field] {
    if (!async_engine_.accepting()) throw ApiError(503, "the server is shutting down");
    const double limit = options_.preprocess_timeout_s;
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    if (limit > 0 && spent.count() > limit) {
      std::ostringstream message;
      message << "preparing the " << field
              << " (chat template, tokenization) took longer than the server's limit of " << limit
              << " s (--preprocess-timeout); send a shorter " << field;
      throw bad_request(message.str(), field);
    }
  };
}

void OpenAIServing::check_model(const std::string& model) const {
  if (!model.empty() && model != options_.served_model_name)
    throw ApiError(404, "The model `" + model + "` does not exist.", "model");
}

std::vector<PreparedPrompt> OpenAIServing::prepare_prompts(const CompletionRequest& r) const {
  InterruptScope preparing(preparation_check("prompt"));
  const Tokenizer& tok = engine_.tokenizer();
  std::vector<PreparedPrompt> prompts;
  for (const Prompt& p : r.prompts) {
    if (const auto* text = std::get_if<std::string>(&p)) {
      check_text_can_fit(tok, *text, engine_, false);
      prompts.push_back(prepare(tok.encode(*text, r.add_special_tokens), *text, r, engine_, false));
    } else {
      const auto& ids = std::get<std::vector<int32_t>>(p);
      std::string echo_text = r.echo ? engine_.decode(ids, false) : std::string();
      prompts.push_back(prepare(ids, std::move(echo_text), r, engine_, false));
    }
  }
  return prompts;
}

void OpenAIServing::compile_structured_outputs(const GenerationRequest& r) const {
  if (!r.params.structured_outputs) return;
  try {
    engine_.check_structured_outputs(*r.params.structured_outputs);
  } catch (const std::invalid_argument& e) {
    throw bad_request(r.structured_param + ": " + e.what(), r.structured_param);
  }
}

ApiResponse OpenAIServing::completions(const std::string& body) {
  CompletionRequest r = parse_completion_request(parse_json_body(body));
  check_model(r.model);
  warn_ignored(r.ignored);
  compile_structured_outputs(r);
  const Tokenizer& tok = engine_.tokenizer();
  std::vector<PreparedPrompt> prompts = prepare_prompts(r);
  const std::string id = "cmpl-" + random_id();
  auto job = std::make_unique<GenerationJob>(async_engine_, tok, r, std::move(prompts), id);
  ojson base = envelope(id, "text_completion", unix_time(), options_.served_model_name);
  if (r.stream) {
    job->start();
    auto stream = std::make_shared<CompletionStream>(std::move(job), std::move(r), std::move(base));
    return ApiResponse{200, "text/event-stream", {}, std::move(stream)};
  }
  run_to_end(*job);
  return full_response(*job, r.n, std::move(base), [&](size_t i, const ChoiceStream& c) {
    size_t offset = 0;
    return ojson{{"text", r.echo ? job->prompts()[job->prompt_of(i)].text + c.text() : c.text()},
                 {"logprobs", r.top_logprobs ? completion_logprobs_json(c.logprobs(), offset)
                                             : ojson(nullptr)}};
  });
}

std::string OpenAIServing::render_chat(const ojson& messages, const ojson& tools,
                                       const ojson& kwargs, bool add_generation_prompt,
                                       bool continue_final_message) const {
  if (!chat_template_) {
    throw bad_request("the model has no chat template; start the server with --chat-template FILE",
                      "messages");
  }
  const Tokenizer& tok = engine_.tokenizer();
  ChatTemplateInputs in;
  in.messages = messages;
  in.tools = tools;
  in.add_generation_prompt = add_generation_prompt;
  in.bos_token = tok.token_text(tok.bos_id());
  in.eos_token = tok.token_text(tok.eos_id());
  if (kwargs.is_object()) in.extra = kwargs;
  std::string text;
  try {
    text = chat_template_->render(in);
  } catch (const ApiError&) {
    throw;  // an InterruptScope's check stopped the rendering
  } catch (const std::exception& e) {
    throw bad_request(std::string("chat template: ") + e.what(), "messages");
  }
  if (continue_final_message) {
    // Cut what the template wrote after the last message, so generation continues it.
    const ojson& last = messages.back();
    if (last.contains("content") && last["content"].is_string()) {
      const std::string& content = last["content"].get_ref<const std::string&>();
      const size_t at = text.rfind(content);
      if (!content.empty() && at != std::string::npos) text.resize(at + content.size());
    }
  }
  return text;
}

PreparedPrompt OpenAIServing::prepare_chat_prompt(const ChatRequest& r) const {
  InterruptScope preparing(preparation_check("messages"));
  check_chat_images(r, engine_.supports_images(), options_.images.limit_per_prompt);
  if (!r.image_urls.empty()) {
    std::string prompt;
    std::vector<int32_t> ids = tokenize_chat_with_images(r, prompt);
    std::vector<ImageInput> images = prepare_chat_images(r, engine_, options_.images.source);
    return prepare(std::move(ids), std::move(prompt), r, engine_, true, std::move(images));
  }
  const std::string prompt = render_chat(r.messages, r.tools, r.template_kwargs,
                                         r.add_generation_prompt, r.continue_final_message);
  const Tokenizer& tok = engine_.tokenizer();
  check_text_can_fit(tok, prompt, engine_, true);
  return prepare(tok.encode(prompt, r.add_special_tokens), prompt, r, engine_, true);
}

std::vector<int32_t> OpenAIServing::tokenize_chat_with_images(const ChatRequest& r,
                                                              std::string& prompt) const {
  const Tokenizer& tok = engine_.tokenizer();
  auto render_and_encode = [&](const ojson& messages) {
    prompt = render_chat(messages, r.tools, r.template_kwargs, r.add_generation_prompt,
                         r.continue_final_message);
    check_text_can_fit(tok, prompt, engine_, true);
    return tok.encode(prompt, r.add_special_tokens);
  };
  std::vector<int32_t> ids = render_and_encode(r.messages);
  // A template that only prints text parts (or only takes strings) wrote no placeholder.
  if (std::find(ids.begin(), ids.end(), image_pad_id_) == ids.end())
    ids = render_and_encode(messages_with_placeholder_text(r.messages));
  check_image_placeholders(ids, image_pad_id_, r.image_urls.size());
  return ids;
}

ChatOutputOptions OpenAIServing::chat_output_options(const ChatRequest& r) const {
  ChatOutputOptions o;
  o.tool_choice = r.tool_choice;
  o.tools = r.tools;
  o.reasoning_parser = options_.reasoning_parser;
  if (r.template_kwargs.is_object()) {
    auto it = r.template_kwargs.find("enable_thinking");
    if (it != r.template_kwargs.end() && it->is_boolean()) o.thinking_enabled = it->get<bool>();
  }
  const bool auto_calls = options_.enable_auto_tool_choice && !options_.tool_call_parser.empty();
  if (r.tool_choice.mode == ToolChoice::Mode::kAuto) {
    // As vLLM: an explicit "auto" needs a parser; tools without tool_choice are rendered into
    // the prompt and the answer stays content.
    if (r.tool_choice.given && !auto_calls)
      throw bad_request(
          "\"auto\" tool choice requires the server to run with --enable-auto-tool-choice and "
          "--tool-call-parser",
          "tool_choice");
    if (auto_calls) o.tool_call_parser = options_.tool_call_parser;
  }
  return o;
}

void OpenAIServing::constrain_chat_output(ChatRequest& r, const ChatOutputOptions& output) const {
  if (r.tool_choice.mode == ToolChoice::Mode::kRequired ||
      r.tool_choice.mode == ToolChoice::Mode::kNamed) {
    r.params.structured_outputs =
        tool_call_constraint(r.tool_choice, r.tools, r.parallel_tool_calls);
    r.structured_param = "tools";
  }
  // A model that thinks first is free until its reasoning ends; the constraint is the answer's.
  if (r.params.structured_outputs && !output.reasoning_parser.empty() && output.thinking_enabled)
    r.params.structured_outputs->start_after = engine_.tokenizer().encode("</think>", false);
}

ApiResponse OpenAIServing::chat_completions(const std::string& body) {
  ChatRequest r = parse_chat_request(parse_json_body(body));
  check_model(r.model);
  warn_ignored(r.ignored);
  const ChatOutputOptions output = chat_output_options(r);
  constrain_chat_output(r, output);
  compile_structured_outputs(r);
  const Tokenizer& tok = engine_.tokenizer();
  std::vector<PreparedPrompt> prompts;
  prompts.push_back(prepare_chat_prompt(r));
  const std::string id = "chatcmpl-" + random_id();
  auto job = std::make_unique<GenerationJob>(async_engine_, tok, r, std::move(prompts), id);
  ojson base = envelope(id, r.stream ? "chat.completion.chunk" : "chat.completion", unix_time(),
                        options_.served_model_name);
  if (r.stream) {
    job->start();
    auto stream =
        std::make_shared<ChatStream>(std::move(job), std::move(r), std::move(base), output);
    return ApiResponse{200, "text/event-stream", {}, std::move(stream)};
  }
  run_to_end(*job);
  return full_response(*job, r.n, std::move(base), [&](size_t, const ChoiceStream& c) {
    ChatOutput choice(output);
    ojson message = choice.message(c.text());
    return ojson{{"message", std::move(message)},
                 {"logprobs", r.top_logprobs ? chat_logprobs_json(c.logprobs()) : ojson(nullptr)},
                 {"finish_reason", choice.finish_reason(c.finish_reason())}};
  });
}

ApiResponse OpenAIServing::tokenize(const std::string& body) const {
  TokenizeRequest r = parse_tokenize_request(parse_json_body(body));
  check_model(r.model);
  InterruptScope preparing(preparation_check(r.prompt ? "prompt" : "messages"));
  const Tokenizer& tok = engine_.tokenizer();
  const std::string text =
      r.prompt ? *r.prompt
               : render_chat(r.messages, nullptr, nullptr, r.add_generation_prompt, false);
  const std::vector<int32_t> ids = tok.encode(text, r.add_special_tokens);
  ojson j = {{"count", ids.size()}, {"max_model_len", engine_.max_model_len()}, {"tokens", ids}};
  if (r.return_token_strs) {
    ojson strs = ojson::array();
    for (int32_t id : ids) strs.push_back(tok.piece(id));
    j["token_strs"] = std::move(strs);
  } else {
    j["token_strs"] = nullptr;
  }
  return json_response(j);
}

ApiResponse OpenAIServing::detokenize(const std::string& body) const {
  DetokenizeRequest r = parse_detokenize_request(parse_json_body(body));
  check_model(r.model);
  for (int32_t id : r.tokens) {
    if (id >= engine_.vocab_size())
      throw bad_request("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                            std::to_string(engine_.vocab_size()) + ")",
                        "tokens");
  }
  InterruptScope preparing(preparation_check("tokens"));
  return json_response({{"prompt", engine_.decode(r.tokens, true)}});
}

ApiResponse OpenAIServing::models() const {
  ojson model = {{"id", options_.served_model_name},
                 {"object", "model"},
                 {"created", created_},
                 {"owned_by", "pagedllm"},
                 {"root", options_.model_path},
                 {"parent", nullptr},
                 {"max_model_len", engine_.max_model_len()}};
  return json_response({{"object", "list"}, {"data", ojson::array({std::move(model)})}});
}

}  // namespace pagedllm::server
