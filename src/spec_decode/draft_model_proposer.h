// Draft-model speculation (vLLM's "draft_model" method, llama.cpp's --model-draft): a smaller
// model with the target's vocabulary guesses the next K tokens greedily, one forward pass per
// draft, batched over the requests that want drafts.
//
// The draft keeps its own paged KV cache, in blocks of its own pool, so the target's scheduler
// never sees it. Which of a request's positions hold valid draft KV is settled by comparing
// the tokens the draft last fed with the request's tokens now: whatever the target accepted,
// rejected, recomputed after preemption or took from its prefix cache, the longest common
// prefix is what the draft may reuse, and it computes the rest.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/kv_cache.h"
#include "model/forward_inputs.h"
#include "model/model.h"
#include "spec_decode/proposer.h"

namespace pagedllm {

class DraftModelProposer : public Proposer {
 public:
  // Loads config.draft_model. Throws ConfigError when its vocabulary differs from the target's
  // (target_vocab) or it cannot be loaded.
  DraftModelProposer(const SpeculativeConfig& config, int target_vocab, int max_model_len,
                     int max_num_seqs);
  ~DraftModelProposer() override;

  bool batched() const override { return true; }
  void propose(std::span<const int32_t> tokens, int max_drafts,
               std::vector<int32_t>& drafts) const override;
  void propose_batch(std::span<ProposalRequest> requests) override;
  void forget(const std::string& req_id) override;

  int free_blocks() const { return static_cast<int>(free_blocks_.size()); }

 private:
  struct Sequence {
    std::vector<int32_t> blocks;
    std::vector<int32_t> fed;  // tokens whose K and V the draft cache holds, from position 0
  };
  struct Row {  // one request in a forward pass
    Sequence* seq;
    std::vector<int32_t> tokens;  // fed this pass, from position seq->fed.size()
  };

  bool reserve(Sequence& seq, int num_positions);
  // Feeds each row's tokens and writes the argmax of each row's last logits to next[r].
  void forward(std::span<Row> rows, std::vector<int32_t>& next);
  void catch_up(Sequence& seq, std::span<const int32_t> tokens, int32_t& first_draft);

  int block_size_ = 16;
  int max_blocks_per_seq_ = 0;
  int max_pass_tokens_ = 0;
  int vocab_ = 0;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PagedKVCache> cache_;
  std::vector<int32_t> free_blocks_;
  std::unordered_map<std::string, Sequence> sequences_;
  ModelInputs in_;
  std::vector<int32_t> table_;
  std::vector<float> logits_;
};

}  // namespace pagedllm
