#include "core/config.h"

#include <string>

namespace pagedllm {

namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError(message);
}

}  // namespace

SchedulingPolicy parse_scheduling_policy(const std::string& name) {
  if (name == "fcfs") return SchedulingPolicy::kFcfs;
  if (name == "priority") return SchedulingPolicy::kPriority;
  throw ConfigError("unknown scheduling policy '" + name + "' (expected fcfs or priority)");
}

const char* to_string(SchedulingPolicy policy) {
  return policy == SchedulingPolicy::kFcfs ? "fcfs" : "priority";
}

const char* to_string(SpeculativeMethod method) {
  switch (method) {
    case SpeculativeMethod::kNone:
      return "none";
    case SpeculativeMethod::kNgram:
      return "ngram";
    case SpeculativeMethod::kReplay:
      return "replay";
    case SpeculativeMethod::kDraftModel:
      return "draft_model";
  }
  return "?";
}

void CacheConfig::resolve_num_blocks(int64_t bytes_per_block) {
  if (num_blocks > 0) return;
  require(bytes_per_block > 0, "bytes per KV block must be positive");
  require(kv_cache_memory_bytes > 0, "set either num_blocks or a KV-cache memory budget");
  const int64_t blocks = kv_cache_memory_bytes / bytes_per_block;
  require(blocks <= INT32_MAX, "KV-cache memory budget gives more blocks than supported");
  num_blocks = static_cast<int>(blocks);
}

void EngineConfig::validate() const {
  const auto& c = cache;
  const auto& s = scheduler;
  require(c.block_size > 0, "block_size must be positive, got " + std::to_string(c.block_size));
  require(c.num_blocks >= 2, "num_blocks must be at least 2 (block 0 is the null block), got " +
                                 std::to_string(c.num_blocks));
  require(s.max_model_len > 0, "max_model_len must be positive");
  require(s.max_num_batched_tokens > 0, "max_num_batched_tokens must be positive");
  require(s.max_num_seqs > 0, "max_num_seqs must be positive");
  require(s.long_prefill_token_threshold >= 0, "long_prefill_token_threshold must be >= 0");
  require(s.max_num_partial_prefills >= 0, "max_num_partial_prefills must be >= 0");
  require(s.max_num_batched_tokens >= s.max_num_seqs,
          "max_num_batched_tokens (" + std::to_string(s.max_num_batched_tokens) +
              ") must be >= max_num_seqs (" + std::to_string(s.max_num_seqs) + ")");
  require(s.enable_chunked_prefill || s.max_num_batched_tokens >= s.max_model_len,
          "with chunked prefill off, max_num_batched_tokens (" +
              std::to_string(s.max_num_batched_tokens) + ") must be >= max_model_len (" +
              std::to_string(s.max_model_len) + "), or no long prompt could ever be scheduled");
  const auto& sp = speculative;
  require(sp.num_speculative_tokens >= 0 && sp.num_speculative_tokens <= 64,
          "num_speculative_tokens must be in [0, 64], got " +
              std::to_string(sp.num_speculative_tokens));
  require(sp.prompt_lookup_min >= 1 && sp.prompt_lookup_min <= sp.prompt_lookup_max,
          "prompt_lookup_min must be >= 1 and <= prompt_lookup_max");
  require(sp.disable_by_batch_size >= 0, "disable_by_batch_size must be >= 0");
  require(c.num_usable_blocks() >= max_num_blocks_per_req(),
          "the KV pool has " + std::to_string(c.num_usable_blocks()) + " usable blocks but one " +
              std::to_string(s.max_model_len) + "-token request needs " +
              std::to_string(max_num_blocks_per_req()) + " blocks of " +
              std::to_string(c.block_size));
}

}  // namespace pagedllm
