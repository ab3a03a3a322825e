// Real model shapes with random weights (std 0.02, norms 1), for benchmarks: the same file can
// be loaded by pagedllm and llama.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/model_config.h"
#include "loader/model_export.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace pagedllm {

// llama-110m (llama2.c's 110M), llama-1b (Llama-3.2-1B), qwen2-0.5b (Qwen2.5-0.5B), qwen25-vl-3b
// (Qwen2.5-VL-3B's language model), tiny ones for tests (tiny-qwen2-vl and tiny-qwen25-vl: the
// language models of vision_language_preset.h's tiny vision-language models).
ModelConfig preset_config(const std::string& name);
std::vector<std::string> preset_names();

// A synthetic SentencePiece-style vocabulary of `size` tokens: <unk>, <s>, </s>, the 256 byte
// tokens, then "▁"-prefixed and bare letter strings with descending scores.
SentencePieceVocab synthetic_vocab(int size);

// N(0, stddev) values drawn from (stream, index): the same stream gives the same values.
void fill_random_normal(uint64_t stream, double stddev, std::vector<float>& out);

// Deterministic N(0, 0.02) weights (norms 1), drawn from (seed, tensor, index).
WeightSource random_weights(const ModelConfig& config, uint64_t seed);

}  // namespace pagedllm
