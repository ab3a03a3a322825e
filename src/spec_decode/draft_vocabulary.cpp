#include "spec_decode/draft_vocabulary.h"

#include <memory>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm {

namespace {

// A token's text for a message, as a JSON string (control bytes escaped, bad UTF-8 replaced).
std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A token's text as both serializations of one SentencePiece vocabulary write it: GGUF files
// mark a word's leading space with U+2581, llama2.c tokenizer files with a plain space.
std::string normalized(std::string text) {
  static const std::string kSpaceMark = "\xe2\x96\x81";
  for (size_t at = text.find(kSpaceMark); at != std::string::npos;
       at = text.find(kSpaceMark, at + 1)) {
    text.replace(at, kSpaceMark.size(), " ");
  }
  return text;
}

// Whether token id is special (BOS, EOS, control) in either vocabulary: their texts vary by
// file format ("<s>" or "\n<s>\n"), so only ordinary tokens are compared.
bool special_in_either(const Tokenizer& a, const Tokenizer& b, int32_t id) {
  for (const Tokenizer* t : {&a, &b}) {
    if (t->is_special(id) || t->bos_id() == id || t->eos_id() == id) return true;
  }
  return false;
}

}  // namespace

bool check_draft_vocabulary(const std::string& draft_path, const Tokenizer& target) {
  std::unique_ptr<Tokenizer> draft;
  try {
    draft = load_tokenizer_file(draft_path);
  } catch (const std::exception&) {
    return false;  // no vocabulary of its own to compare
  }
  const int vocab = target.vocab_size();
  if (draft->vocab_size() != vocab) return true;  // the draft model's load refuses the size
  int differing = 0;
  int32_t first = -1;
  for (int32_t id = 0; id < vocab; ++id) {
    if (special_in_either(*draft, target, id) ||
        normalized(draft->piece(id)) == normalized(target.piece(id)))
      continue;
    if (differing++ == 0) first = id;
  }
  if (differing == 0) return true;
  throw ConfigError(
      "speculative_config: the draft model's vocabulary differs from the target's (" +
      std::to_string(differing) + " of " + std::to_string(vocab) + " tokens; the first, token " +
      std::to_string(first) + ", is " + quoted(draft->piece(first)) + " in the draft and " +
      quoted(target.piece(first)) + " in the target): their token ids would not mean the same");
}

}  // namespace pagedllm
