// Prompt lookup (vLLM's "ngram" method, llama.cpp's llama-lookup): the last n tokens of the
// request are searched for earlier in its own prompt and output, and the tokens that followed
// that occurrence are proposed. It costs no model and pays off where the answer repeats spans
// of the prompt: code edits, summaries that quote, extraction, multi-turn chat.
#pragma once

#include "spec_decode/proposer.h"

namespace pagedllm {

class NgramProposer : public Proposer {
 public:
  // n-grams of min_n..max_n tokens are tried, longest first.
  NgramProposer(int min_n, int max_n);
  // The continuation of the latest earlier occurrence of the longest suffix that occurs.
  void propose(std::span<const int32_t> tokens, int max_drafts,
               std::vector<int32_t>& drafts) const override;

 private:
  int min_n_;
  int max_n_;
};

}  // namespace pagedllm
