// Engine configuration, named as vLLM names it so that a vLLM user finds the same knobs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pagedllm {

// Thrown for a configuration that can never work (refused at start-up).
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

enum class SchedulingPolicy { kFcfs, kPriority };

SchedulingPolicy parse_scheduling_policy(const std::string& name);
const char* to_string(SchedulingPolicy policy);

struct CacheConfig {
  int block_size = 16;
  // Total blocks in the pool, the null block 0 included. 0 means "derive from
  // kv_cache_memory_bytes" (see resolve_num_blocks).
  int num_blocks = 0;
  int64_t kv_cache_memory_bytes = 0;
  bool enable_prefix_caching = true;

  // Sets num_blocks from the memory budget when it was not given explicitly.
  // bytes_per_block covers K and V of every layer for one block.
  void resolve_num_blocks(int64_t bytes_per_block);
  int num_usable_blocks() const { return num_blocks - 1; }
};

struct SchedulerConfig {
  int max_model_len = 2048;
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  bool enable_chunked_prefill = true;
  // 0 disables. A prefill longer than this is split into chunks of at most this many tokens.
  int long_prefill_token_threshold = 0;
  // 0 means unlimited. At most this many requests may end a step with a partial prefill.
  int max_num_partial_prefills = 0;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Images: the encoder outputs (embeddings) one step may compute, and how many the encoder
  // cache holds; a request with an image larger than either is refused.
  int max_num_encoder_input_tokens = 0;
  int encoder_cache_size = 0;
};

// Speculative decoding, with vLLM's --speculative-config names. Proposals are made by the worker
// after each step's sampling and verified in the next step (spec_decode/).
enum class SpeculativeMethod {
  kNone,
  kNgram,       // prompt lookup: the tokens after the latest earlier match of the last n tokens
  kReplay,      // benchmarks only: the continuation of a recorded run, as an upper bound
  kDraftModel,  // a smaller model with the same vocabulary, drafting greedily
};

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::kNone;
  int num_speculative_tokens = 0;  // K: the most draft tokens a request verifies per step
  int prompt_lookup_min = 2;       // n-gram sizes tried, longest first
  int prompt_lookup_max = 4;
  // No proposals in a step whose batch holds at least this many requests; 0 never disables.
  int disable_by_batch_size = 0;
  // Lower K for a request whose drafts are mostly rejected (spec_decode/draft_length.h).
  bool adaptive = true;
  // kDraftModel: the draft model's file (GGUF, HF directory or llama2.c checkpoint), and the
  // target's vocabulary size (set by the engine), which the draft's must equal.
  std::string draft_model;
  int target_vocab_size = 0;
  // kReplay: prompts followed by what an earlier run generated for them.
  std::vector<std::vector<int32_t>> replay_sequences;

  bool enabled() const { return method != SpeculativeMethod::kNone && num_speculative_tokens > 0; }
};

const char* to_string(SpeculativeMethod method);

struct EngineConfig {
  CacheConfig cache;
  SchedulerConfig scheduler;
  SpeculativeConfig speculative;

  int max_num_blocks_per_req() const {
    return (scheduler.max_model_len + cache.block_size - 1) / cache.block_size;
  }
  // Throws ConfigError naming the first setting that cannot work.
  void validate() const;
};

}  // namespace pagedllm
