// Reads Hugging Face's tokenizer.json (BPE models, byte-level or SentencePiece-style) and the
// tokenizer_config.json beside it (bos/eos, add_bos_token/add_eos_token, chat_template).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tokenizer/bpe_tokenizer.h"

namespace pagedllm {

// config_json may be empty. Throws ModelLoadError naming `source` and what is wrong.
std::unique_ptr<BpeTokenizer> tokenizer_from_json(std::string_view tokenizer_json,
                                                  std::string_view config_json,
                                                  const std::string& source);

// `path` is a tokenizer.json file or a directory holding one; tokenizer_config.json is read from
// the same directory when present.
std::unique_ptr<BpeTokenizer> load_hf_tokenizer(const std::string& path);

}  // namespace pagedllm
