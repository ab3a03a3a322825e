#include "cli/engine_flags.h"

#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "engine/tensor_parallel.h"

namespace pagedllm::cli {

namespace {

// Images (Qwen2-VL / Qwen2.5-VL, docs/MULTIMODAL.md): the projector and the encoder's budgets.
void add_image_flags(CLI::App* cmd, EngineOptions& o) {
  cmd->add_option("--mmproj", o.mmproj,
                  "Vision projector GGUF (llama.cpp's mmproj file) for a GGUF Qwen2-VL / "
                  "Qwen2.5-VL language model; a Hugging Face directory carries its own")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-num-encoder-input-tokens", o.max_num_encoder_input_tokens,
                  "Image embeddings the vision encoder may compute in one step (vLLM's); 0 (the "
                  "default): --max-num-batched-tokens, or the largest image if that is more")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--encoder-cache-size", o.encoder_cache_size,
                  "Image embeddings, in tokens, the encoder cache holds for requests still "
                  "prefilling (vLLM's); 0 (the default): the encoder budget")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-image-pixels", o.max_image_pixels,
                  "Images with more pixels than this are refused from their header, before any "
                  "pixel is decoded (decompression bombs); 0 (the default): PIL's 89478485")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace

void add_engine_flags(CLI::App* cmd, EngineOptions& o) {
  cmd->add_option("--model", o.model,
                  "Model: a GGUF file, a Hugging Face directory (or org/name in the local HF "
                  "cache), or a llama2.c checkpoint (.bin)")
      ->required();
  cmd->add_option("--tokenizer", o.tokenizer,
                  "Tokenizer file for models without one (llama2.c tokenizer.bin)");
  cmd->add_option("--max-model-len", o.max_model_len,
                  "Longest sequence (prompt + output) in tokens; 0 (the default): the model's "
                  "own context length")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--block-size", o.block_size, "Tokens per KV-cache block")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-num-batched-tokens", o.max_num_batched_tokens,
                  "Token budget of one engine step (chunked prefill splits longer prompts)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-num-seqs", o.max_num_seqs, "Most sequences running at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--num-blocks", o.num_blocks,
                  "KV-cache blocks in the pool (null block included); overrides --kv-cache-memory")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-cache-memory", o.kv_cache_memory_gib,
                  "KV-cache budget in GiB (like VLLM_CPU_KVCACHE_SPACE); capped at what "
                  "max-num-seqs full-length sequences need")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--kv-cache-dtype", o.kv_cache_dtype,
                  "KV-cache element type: auto (f32 for f32 weights, else bf16), f32, bf16, "
                  "fp8 (= fp8_e4m3: OCP E4M3 with unit scales as vLLM's, a quarter of f32's "
                  "bytes), or q8_0 (llama.cpp's -ctk/-ctv q8_0: 8-bit codes and an f16 scale per "
                  "32 elements, 34 bytes per 32; head sizes that are multiples of 32)")
      ->capture_default_str()
      ->check(
          CLI::IsMember({"auto", "f32", "bf16", "float32", "bfloat16", "fp8", "fp8_e4m3", "q8_0"}));
  cmd->add_flag("!--no-prefix-caching", o.enable_prefix_caching,
                "Disable prefix caching (reuse of KV blocks across shared prompt prefixes)");
  cmd->add_flag("!--no-chunked-prefill", o.enable_chunked_prefill,
                "Disable chunked prefill: a prompt is scheduled whole or waits");
  cmd->add_option("--speculative-config", o.speculative_config,
                  "Speculative decoding as vLLM's JSON, e.g. '{\"method\": \"ngram\", "
                  "\"num_speculative_tokens\": 4}' (prompt lookup; also prompt_lookup_min/max), "
                  "or '{\"model\": \"small.gguf\", \"num_speculative_tokens\": 4}' (a draft "
                  "model with the same vocabulary); disable_by_batch_size, adaptive (lower K for "
                  "requests whose drafts fail, default true). Greedy and seeded output stay "
                  "exactly as without it");
  add_image_flags(cmd, o);
  cmd->add_option("--threads", o.threads, "Compute threads; default: the physical cores")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--matmul-backend", o.matmul_backend,
                  "bf16 matrix products: auto (oneDNN where it runs AMX, else native), native "
                  "(bit-identical across ISAs and batch sizes) or onednn")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "native", "onednn"}));
  cmd->add_option("--tensor-parallel-size,--tp", o.tensor_parallel_size,
                  "Shard the model over this many processes started by mpirun (mpirun -np N "
                  "pagedllm ...); rank 0 schedules and samples")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--tensor-parallel-timeout", o.tensor_parallel_timeout_s,
                  "Seconds a rank waits for the others in a step before it ends the job")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

bool run_as_tensor_parallel_worker(const EngineOptions& options) {
  join_tensor_parallel(options);  // the job's size against the flag, before anything else
  if (options.tensor_parallel_size <= 1 || distributed::launcher_rank() == 0) return false;
  // Rank 0 decides when the job ends (a signal drains its server first, then stops the ranks).
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, SIG_IGN);
  Engine engine(options);
  engine.run_tensor_parallel_worker();
  return true;
}

std::string read_flag_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + flag + " file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<Engine> open_engine(const EngineOptions& options, const std::string& who) {
  auto engine = std::make_unique<Engine>(options);
  std::cerr << "pagedllm" << (who.empty() ? "" : " " + who) << ": " << engine->describe() << "\n";
  return engine;
}

}  // namespace pagedllm::cli
