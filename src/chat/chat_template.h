// A model's chat template (Jinja2, as tokenizer_config.json or GGUF ships it), compiled once and
// rendered per request with the messages, tools and special tokens, as Hugging Face's
// apply_chat_template renders it.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/jinja_value.h"

namespace pagedllm {

using jinja::TemplateError;

struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: none
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
  std::string date;  // YYYY-MM-DD that strftime_now sees; empty: today
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more template variables
};

class ChatTemplate {
 public:
  // Throws TemplateError when the template cannot be parsed.
  explicit ChatTemplate(const std::string& source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;

  // Throws TemplateError for raise_exception() and for errors met while rendering.
  std::string render(const ChatTemplateInputs& inputs) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace pagedllm
