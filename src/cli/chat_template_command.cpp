#include "cli/chat_template_command.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "chat/chat_template.h"
#include "cli/subcommand.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm::cli {

namespace {

struct ChatTemplateOptions {
  std::string model;
  std::string template_file;
  std::string messages_file;
  bool add_generation_prompt = false;
  std::string bos_token, eos_token;
  std::string date;
};

std::string read_text(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string("cannot read ") + what + " " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int run(const ChatTemplateOptions& o, bool bos_given, bool eos_given) {
  ChatTemplateInputs in;
  std::string source;
  if (!o.model.empty()) {
    const auto tok = load_tokenizer_file(o.model);
    source = tok->chat_template();
    if (source.empty()) throw std::invalid_argument(o.model + ": has no chat template");
    in.bos_token = tok->token_text(tok->bos_id());
    in.eos_token = tok->token_text(tok->eos_id());
  } else {
    source = read_text(o.template_file, "--template");
  }
  if (bos_given) in.bos_token = o.bos_token;
  if (eos_given) in.eos_token = o.eos_token;
  nlohmann::ordered_json doc;
  try {
    doc = nlohmann::ordered_json::parse(read_text(o.messages_file, "--messages"));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(o.messages_file + ": not JSON (" + e.what() + ")");
  }
  if (doc.is_object()) {
    if (!doc.contains("messages") || !doc["messages"].is_array()) {
      throw std::invalid_argument(o.messages_file + ": expected {\"messages\": [...]} or an array");
    }
    in.messages = doc["messages"];
    if (doc.contains("tools")) in.tools = doc["tools"];
  } else if (doc.is_array()) {
    in.messages = doc;
  } else {
    throw std::invalid_argument(o.messages_file + ": expected an array of messages");
  }
  in.add_generation_prompt = o.add_generation_prompt;
  in.date = o.date;
  const ChatTemplate tmpl(source);
  std::cout << tmpl.render(in);
  std::cout.flush();
  return 0;
}

}  // namespace

void add_chat_template_command(CLI::App& app, int& exit_code) {
  auto [cmd, o] = add_subcommand<ChatTemplateOptions>(
      app, "chat-template", "Render a chat template for a conversation", exit_code,
      [](ChatTemplateOptions& opts, const CLI::App& c) {
        if (c.count("--model") == 0 && c.count("--template") == 0) {
          throw std::invalid_argument("chat-template needs --model or --template");
        }
        return run(opts, c.count("--bos-token") > 0, c.count("--eos-token") > 0);
      });
  auto* model = cmd->add_option("--model", o->model,
                                "Take the template, BOS and EOS from this model's tokenizer (GGUF, "
                                "HF directory or tokenizer.json)");
  auto* file = cmd->add_option("--template", o->template_file,
                               "A Jinja template file (bos/eos are empty unless given)");
  model->excludes(file);
  cmd->add_option("--messages", o->messages_file,
                  "A JSON file: an array of messages, or {\"messages\": [...], \"tools\": [...]}")
      ->required();
  cmd->add_flag("--add-generation-prompt", o->add_generation_prompt,
                "End with the assistant turn's opening, as for generation");
  cmd->add_option("--bos-token", o->bos_token, "The bos_token the template sees");
  cmd->add_option("--eos-token", o->eos_token, "The eos_token the template sees");
  cmd->add_option("--date", o->date, "YYYY-MM-DD that strftime_now() sees (default: today)");
}

}  // namespace pagedllm::cli
