#include "cli/tokenize_command.h"

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/subcommand.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string texts_file;
  bool no_add_special = false;
  bool json = false;
};

std::vector<std::string> read_texts(const TokenizeOptions& o) {
  if (o.texts_file.empty()) return {o.text};
  std::ifstream in(o.texts_file, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read --texts-file " + o.texts_file);
  std::vector<std::string> texts;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      texts.push_back(nlohmann::json::parse(line).at("text").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(o.texts_file + ":" + std::to_string(n) +
                                  ": expected {\"text\": \"...\"} (" + e.what() + ")");
    }
  }
  return texts;
}

int run_tokenize(const TokenizeOptions& o) {
  const auto tok = load_tokenizer_file(o.model);
  for (const std::string& text : read_texts(o)) {
    const std::vector<int32_t> ids = tok->encode(text, !o.no_add_special);
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(tok->piece(id));
    if (o.json) {
      // Pieces of a byte vocabulary may be partial UTF-8: escape them rather than fail.
      std::cout << nlohmann::json{{"ids", ids}, {"pieces", pieces}}.dump(
                       -1, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
      continue;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      std::cout << ids[i] << " -> "
                << nlohmann::json(pieces[i]).dump(-1, ' ', false,
                                                  nlohmann::json::error_handler_t::replace)
                << "\n";
    }
  }
  return 0;
}

struct DetokenizeOptions {
  std::string model;
  std::vector<int64_t> ids;
  bool skip_special = false;
};

int run_detokenize(const DetokenizeOptions& o) {
  const auto tok = load_tokenizer_file(o.model);
  std::vector<int32_t> ids;
  for (int64_t id : o.ids) {
    if (id < 0 || id >= tok->vocab_size()) {
      throw std::invalid_argument("token id " + std::to_string(id) +
                                  " is outside the vocabulary (" +
                                  std::to_string(tok->vocab_size()) + " tokens)");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  std::cout << tok->decode(ids, o.skip_special) << "\n";
  return 0;
}

}  // namespace

void add_tokenize_commands(CLI::App& app, int& exit_code) {
  auto [tok, topts] = add_subcommand<TokenizeOptions>(
      app, "tokenize", "Print the token ids and pieces of a text", exit_code,
      [](TokenizeOptions& o, const CLI::App& cmd) {
        if (cmd.count("--text") == 0 && cmd.count("--texts-file") == 0) {
          throw std::invalid_argument("tokenize needs --text or --texts-file");
        }
        return run_tokenize(o);
      });
  tok->add_option("--model", topts->model,
                  "A GGUF file, a Hugging Face directory or tokenizer.json, or a llama2.c "
                  "tokenizer.bin")
      ->required();
  auto* text = tok->add_option("--text", topts->text, "The text to tokenize");
  auto* file = tok->add_option("--texts-file", topts->texts_file,
                               "A JSONL file of {\"text\": ...} lines, tokenized in order");
  text->excludes(file);
  tok->add_flag("--no-add-special", topts->no_add_special,
                "Add no BOS/EOS (add_special_tokens=False); special-token text is still matched");
  tok->add_flag("--json", topts->json, "Print one {\"ids\": [...], \"pieces\": [...]} per input");

  auto [detok, dopts] = add_subcommand<DetokenizeOptions>(
      app, "detokenize", "Print the text of token ids", exit_code, run_detokenize);
  detok
      ->add_option("--model", dopts->model,
                   "A GGUF file, a Hugging Face directory or tokenizer.json, or a llama2.c "
                   "tokenizer.bin")
      ->required();
  detok->add_option("ids", dopts->ids, "Token ids")->required();
  detok->add_flag("--skip-special", dopts->skip_special, "Leave out special tokens such as BOS");
}

}  // namespace pagedllm::cli
