#include "cli/image_prompt.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "server/chat_images.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::vector<uint8_t> read_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read --image file '" + path + "'");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ojson user_message(const std::string& text, size_t num_images) {
  ojson content = ojson::array();
  for (size_t i = 0; i < num_images; ++i) content.push_back({{"type", "image"}});
  content.push_back({{"type", "text"}, {"text", text}});
  return ojson::array({{{"role", "user"}, {"content", std::move(content)}}});
}

std::string render(const ChatTemplate& chat, const Tokenizer& tok, const ojson& messages) {
  ChatTemplateInputs in;
  in.messages = messages;
  in.add_generation_prompt = true;
  in.bos_token = tok.token_text(tok.bos_id());
  in.eos_token = tok.token_text(tok.eos_id());
  try {
    return chat.render(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("chat template: ") + e.what());
  }
}

int32_t image_pad_id(const Tokenizer& tok) {
  const std::vector<int32_t> ids = tok.encode(server::kImagePadText, false);
  if (ids.size() != 1) throw std::runtime_error("the vocabulary has no <|image_pad|> token");
  return ids[0];
}

}  // namespace

ImagePrompt build_image_prompt(const Engine& engine, const std::string& text,
                               const std::vector<std::string>& image_files) {
  if (!engine.supports_images()) {
    throw std::runtime_error(
        "--image: this model takes no images (no vision encoder; a GGUF model needs --mmproj)");
  }
  const Tokenizer& tok = engine.tokenizer();
  const int32_t pad = image_pad_id(tok);
  ImagePrompt p;
  const std::string source = tok.chat_template();
  if (source.empty()) {
    for (size_t i = 0; i < image_files.size(); ++i) p.text += server::kImagePlaceholderText;
    p.text += text;
    p.token_ids = tok.encode(p.text, true);
  } else {
    const ChatTemplate chat(source);
    const ojson messages = user_message(text, image_files.size());
    p.text = render(chat, tok, messages);
    p.token_ids = tok.encode(p.text, false);
    // A template that ignores image parts: the placeholders as text, as the server does.
    if (std::find(p.token_ids.begin(), p.token_ids.end(), pad) == p.token_ids.end()) {
      p.text = render(chat, tok, server::messages_with_placeholder_text(messages));
      p.token_ids = tok.encode(p.text, false);
    }
  }
  server::check_image_placeholders(p.token_ids, pad, image_files.size());
  for (const std::string& file : image_files) {
    try {
      p.images.push_back(engine.prepare_image(read_image_file(file)));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("--image " + file + ": " + e.what());
    }
  }
  return p;
}

}  // namespace pagedllm::cli
