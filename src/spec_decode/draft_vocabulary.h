// A draft model proposes token ids that the target verifies, so both must mean the same text by
// each id: vLLM assumes it, llama.cpp's speculative tools compare the vocabularies' token
// texts. Comparing sizes alone lets two vocabularies of 512 different tokens through.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace pagedllm {

// Throws ConfigError naming the first token whose text differs, when the draft model at
// draft_path carries a vocabulary (a GGUF file's, a Hugging Face directory's) of the target's
// size whose token texts differ. Returns false when the draft has no vocabulary of its own (a
// llama2.c file), so only its size can be checked; a vocabulary of another size passes here,
// and the draft model's load refuses it.
bool check_draft_vocabulary(const std::string& draft_path, const Tokenizer& target);

}  // namespace pagedllm
