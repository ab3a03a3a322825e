// Finds and loads the tokenizer for a model: the vocabulary embedded in a GGUF file, or a
// separate llama2.c tokenizer.bin (--tokenizer).
#pragma once

#include <memory>
#include <string>

#include "format/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace pagedllm {

// tokenizer_path may be empty. Throws ModelLoadError with a one-line reason.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_path,
                                          const std::string& tokenizer_path, int vocab_size);
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GGUFFile& gguf);

// A tokenizer on its own: a GGUF file's vocabulary, a Hugging Face directory or tokenizer.json
// (tokenizer_config.json beside it is read too), or a llama2.c tokenizer.bin.
std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path);

}  // namespace pagedllm
