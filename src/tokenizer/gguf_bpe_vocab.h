// A GGUF "gpt2" vocabulary (byte-level BPE: tokenizer.ggml.tokens, .merges, .token_type, .pre)
// as a BpeTokenizer, with the pre-tokenizer regexes llama.cpp uses for each tokenizer.ggml.pre.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "tokenizer/bpe_tokenizer.h"

namespace pagedllm {

// Throws ModelLoadError for missing or inconsistent keys and for an unknown pre-tokenizer.
std::unique_ptr<BpeTokenizer> gpt2_tokenizer_from_gguf(const GGUFFile& gguf,
                                                       const std::vector<std::string>& tokens);

// llama.cpp's regexes for a tokenizer.ggml.pre name, applied one after another, each isolating
// its matches; empty when the name is unknown.
std::vector<std::string> gguf_pre_tokenizer_regexes(const std::string& pre);

}  // namespace pagedllm
