// The Llama-family forward pass (Llama 2/3, Mistral, Qwen2/2.5/3, and the Qwen2-VL / Qwen2.5-VL
// language model, whose RoPE is M-RoPE) over the paged KV cache: embedding (rows the inputs
// give overwrite their tokens'), then per layer RMSNorm, QKV (+bias, +Q/K norm), RoPE from
// positions (or mrope_positions), reshape_and_cache, paged attention with GQA, output
// projection, RMSNorm, SwiGLU MLP; logits only at logits_indices.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rope.h"
#include "kernels/kv_cache.h"
#include "loader/model_weights.h"
#include "model/linear_layer.h"
#include "model/model.h"
#include "model/tensor_parallel.h"
#include "util/aligned_allocator.h"

namespace pagedllm {

class LlamaModel : public Model {
 public:
  // max_tokens bounds the tokens of one step (the scheduler's max_num_batched_tokens).
  // Packs the linear weights for the GEMM kernels (progress(done, total) per layer) and lets
  // the kernel drop the mapped pages they came from.
  // The KV cache comes later, through bind_kv_cache() (the engine sizes it from
  // kv_cache_spec()).
  // With `tensor_parallel`, the weights are one rank's shard (loader/weight_shard.h).
  LlamaModel(std::shared_ptr<const ModelWeights> weights, int max_tokens,
             const std::function<void(size_t, size_t)>& progress = {},
             TensorParallelShard tensor_parallel = {});
  // The same, bound to `kv_cache` at once.
  LlamaModel(std::shared_ptr<const ModelWeights> weights, PagedKVCache& kv_cache, int max_tokens,
             const std::function<void(size_t, size_t)>& progress = {});

  int vocab_size() const override { return weights_->config.vocab_size; }
  KVCacheSpec kv_cache_spec(int num_blocks, int block_size, DType dtype) const override {
    return kv_cache_spec(weights_->config, num_blocks, block_size, dtype);
  }
  void bind_kv_cache(PagedKVCache& cache) override;
  void forward(const ModelInputs& inputs, std::span<float> logits) override;
  const ModelConfig& config() const { return weights_->config; }
  // Bytes of packed linear weights one forward pass reads whatever its batch: the floor on the
  // memory traffic of a decode step.
  size_t linear_weight_bytes() const override;

  // The KV geometry this model needs, for sizing the cache before the model is built.
  static KVCacheSpec kv_cache_spec(const ModelConfig& config, int num_blocks, int block_size,
                                   DType dtype = DType::kF32);

 private:
  // This step's rotary angles into rope_: from positions, or for an M-RoPE model from
  // mrope_positions when the step has them (a text-only step's three rows equal positions).
  void compute_rope_angles(const ModelInputs& in);
  // The step's input embeddings: token rows, then the rows the inputs overwrite.
  void embed(const ModelInputs& in, float* out) const;
  // Layer `layer` for every token of the step. With out_rows, only the K and V of every token
  // and the output rows' hidden states: afterwards x_ row r holds the row of token
  // in.logits_indices[r], for r < num_logits (call only for the last layer, whose other rows
  // nothing reads).
  void attention_block(int layer, const ModelInputs& in, int tokens, bool out_rows = false);
  // Moves the output rows (in.logits_indices) of x_ and q_ to their first num_logits rows and
  // describes them as each request's queries at their positions, for the last layer's
  // attention.
  cpu::AttentionBatch gather_output_rows(const ModelInputs& in);
  // After the qkv product: q normed (where the layer has q/k norms) and rotated into q_, k the
  // same, and k and v stored to the cache.
  void rope_and_cache(const LayerWeights& w, const ModelInputs& in, int tokens,
                      const KVCacheLayer& cache);
  void mlp_block(int layer, int tokens);
  // A row-parallel product's partial sums (rows x dim in xb_) summed over the ranks.
  void reduce_partial_sums(int rows);

  struct LayerLinears {
    LinearLayer qkv, o, gate_up, down;
  };

  std::shared_ptr<const ModelWeights> weights_;
  std::vector<LayerLinears> linears_;
  LinearLayer output_;
  TensorParallelShard tensor_parallel_;
  PagedKVCache* kv_cache_ = nullptr;
  int max_tokens_;
  std::vector<float> inv_freq_;
  cpu::RopeAngles rope_;  // this step's, set at the start of forward()
  // Workspace, sized once for max_tokens.
  // On cache lines: oneDNN's AMX kernels read and write whole 64-byte rows (aligned_allocator.h).
  using Activations = std::vector<float, AlignedAllocator<float>>;
  Activations x_, xb_, qkv_, q_, attn_, gate_up_, gate_, last_, share_logits_;
  std::vector<int32_t> out_positions_;  // gather_output_rows()'s batch
};

}  // namespace pagedllm
