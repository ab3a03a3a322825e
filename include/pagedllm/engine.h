// pagedllm's public C++ API: the counterpart of vLLM's LLMEngine (add_request / step / abort)
// and LLM.generate. One header, one library (libpagedllm).
//
//   pagedllm::Engine engine({.model = "stories260K.gguf"});
//   pagedllm::SamplingParams p;
//   p.temperature = 0;
//   for (const auto& out : engine.generate({"Once upon a time"}, p)) std::cout << out.text;
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pagedllm/sampling.h"

namespace pagedllm {

class Tokenizer;

struct EngineOptions {
  std::string model;      // GGUF file, llama2.c checkpoint (or HF directory where supported)
  std::string tokenizer;  // separate tokenizer file (llama2.c tokenizer.bin); empty: the model's
  int max_model_len = 0;  // 0: the model's context length
  int block_size = 16;
  int max_num_batched_tokens = 2048;
  int max_num_seqs = 256;
  int num_blocks = 0;                // 0: from kv_cache_memory_gib
  double kv_cache_memory_gib = 4.0;  // the counterpart of VLLM_CPU_KVCACHE_SPACE
  // "auto" (bf16 for bf16/f16 weights, else f32), "f32" or "bf16".
  std::string kv_cache_dtype = "auto";
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  int threads = 0;  // 0: the physical cores
  // bf16 matrix products: "auto" (oneDNN where it has AMX), "native" (bit-identical across
  // ISAs and batch sizes) or "onednn". Process-wide, like the thread count.
  std::string matmul_backend = "auto";
  // Off, outputs carry only token ids and logprobs; the caller detokenizes (a server does it on
  // its own threads so that a step never waits on text).
  bool detokenize = true;
  // On, an output holds only this step's tokens, text and logprobs: no cumulative copies, so a
  // step costs the same at token 10 and token 10,000.
  bool delta_outputs = false;
  // Speculative decoding, vLLM's --speculative-config JSON (empty: off), e.g.
  // {"method": "ngram", "num_speculative_tokens": 4}.
  std::string speculative_config;
  // For {"method": "replay"} (benchmarks): prompts followed by what an earlier run generated.
  std::vector<std::vector<int32_t>> speculative_replay;
  // Tensor parallelism over MPI (docs/SCALE-OUT.md): the ranks of `mpirun -np N`, each holding
  // a shard of the weights and KV cache; 1 runs in this process alone and needs no MPI.
  int tensor_parallel_size = 1;
  // A collective that waits longer than this for a rank (dead or hung) ends the whole job.
  double tensor_parallel_timeout_s = 60.0;

  // Images (Qwen2-VL / Qwen2.5-VL; docs/MULTIMODAL.md). A Hugging Face directory carries its
  // vision encoder; a GGUF language model takes llama.cpp's projector file here.
  std::string mmproj;
  // Encoder tokens (image embeddings) one step may compute, vLLM's max_num_encoder_input_tokens;
  // 0: max_num_batched_tokens, raised to the largest image max_pixels allows.
  int max_num_encoder_input_tokens = 0;
  // Image embeddings the encoder cache holds, in tokens; 0: the encoder budget.
  int encoder_cache_size = 0;
  // Images with more pixels than this are refused before their pixels are decoded (0: 64 Mpx).
  int64_t max_image_pixels = 0;
};

struct RequestOutput {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> token_ids;  // all generated so far, EOS included when it ended the request
  std::string text;                // all generated text so far, special tokens skipped
  std::vector<int32_t> new_token_ids;  // generated in this step
  std::string new_text;                // completed in this step (whole UTF-8 characters)
  std::vector<SampledToken> logprobs;  // per generated token, when asked for
  bool finished = false;
  std::string finish_reason;  // "stop", "length" or "abort" once finished
};

// Per-image preprocessing bounds (vLLM's mm_processor_kwargs min_pixels / max_pixels); 0 takes
// the model's preprocessor_config.json.
struct ImageOptions {
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
};

struct ImageData;  // decoded, resized and normalised pixels, opaque to callers

// An image ready for add_request (Engine::prepare_image makes it).
struct ImageInput {
  std::shared_ptr<const ImageData> data;
  int64_t num_tokens = 0;  // the <|image_pad|> tokens it fills in the prompt
  int width = 0;           // as decoded, before resizing
  int height = 0;
};

struct EngineStats {
  int num_running = 0;
  int num_waiting = 0;
  double kv_cache_usage = 0.0;  // fraction of usable KV blocks in use
  int64_t num_preemptions = 0;
  int64_t prefix_cache_queries = 0;  // tokens looked up
  int64_t prefix_cache_hits = 0;     // tokens found
  // Speculative decoding (vLLM's spec_decode counters).
  int64_t spec_num_drafts = 0;           // verify steps that carried drafts
  int64_t spec_num_draft_tokens = 0;     // drafts verified
  int64_t spec_num_accepted_tokens = 0;  // drafts accepted
  std::vector<int64_t> spec_accepted_per_position;
  // Images.
  double encoder_cache_usage = 0.0;  // fraction of the encoder cache in use
  int64_t num_encoded_images = 0;    // images run through the vision encoder
  int64_t num_encoded_image_tokens = 0;
  double encoder_seconds = 0.0;  // time spent in the vision encoder
};

class Engine {
 public:
  // Throws std::runtime_error (one line naming the cause) for a model or setting that fails.
  explicit Engine(const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Both return the request id (generated when empty). Throws std::invalid_argument for a
  // request that could never complete (e.g. prompt + max_tokens > max_model_len).
  std::string add_request(std::vector<int32_t> prompt_token_ids, const SamplingParams& params,
                          std::string request_id = {});
  std::string add_request(const std::string& prompt, const SamplingParams& params,
                          std::string request_id = {});
  // A prompt with images: the token ids hold one <|image_pad|> per image, in order, as a chat
  // template renders image parts; the engine widens each to the image's num_tokens pads (so
  // the request's prompt, and its usage, counts them). Throws std::invalid_argument when the
  // model takes no images, the pads and images disagree, or an image exceeds the encoder budget.
  std::string add_request(std::vector<int32_t> prompt_token_ids, std::vector<ImageInput> images,
                          const SamplingParams& params, std::string request_id = {});
  void abort_request(const std::string& request_id);
  // True for a model with a vision encoder.
  bool supports_images() const;
  // Decodes (PNG, JPEG, WebP, GIF) and preprocesses an image file's bytes for this model.
  // Thread-safe: the server prepares images on its HTTP threads. Throws std::invalid_argument
  // with a one-line reason for bad bytes, an image too large, or a model without images.
  ImageInput prepare_image(std::span<const uint8_t> bytes, const ImageOptions& options = {}) const;
  // The same for decoded pixels: `rgb` holds height rows of width RGB triplets (8 bits each).
  ImageInput prepare_image_rgb(std::span<const uint8_t> rgb, int width, int height,
                               const ImageOptions& options = {}) const;
  // Compiles a structured-output constraint for this model's vocabulary (kept for the request
  // that will carry it); throws std::invalid_argument saying what does not compile.
  // Thread-safe: the server checks on its HTTP threads, so a slow schema never holds up a step.
  void check_structured_outputs(const StructuredOutputs& outputs) const;
  // Runs one engine step; returns an output for every request that progressed or finished.
  std::vector<RequestOutput> step();
  bool has_unfinished_requests() const;

  // Runs prompts to completion through continuous batching; outputs in the prompts' order.
  std::vector<RequestOutput> generate(const std::vector<std::string>& prompts,
                                      const SamplingParams& params);
  std::vector<RequestOutput> generate(const std::vector<std::vector<int32_t>>& prompts,
                                      const SamplingParams& params);

  std::vector<int32_t> encode(const std::string& text, bool add_special = true) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  int vocab_size() const;
  int max_model_len() const;
  std::optional<int32_t> eos_token_id() const;
  EngineStats stats() const;
  // What the last step() scheduled: the requests admitted for the first time (or resumed after
  // preemption) and the total token count, for queue-time and throughput metrics.
  std::vector<std::string> last_step_admitted() const;
  int last_step_num_scheduled_tokens() const;
  // Thread-safe for encode/decode: the server tokenizes and detokenizes on its HTTP threads.
  const Tokenizer& tokenizer() const;
  // A one-line summary of what the engine chose (threads, blocks, dtype...), for logs.
  std::string describe() const;
  // Bytes of packed linear weights each forward pass reads (decode's memory floor).
  size_t weight_bytes() const;
  // Tokens the KV pool holds: its usable blocks times the block size.
  int64_t kv_cache_tokens() const;

  // Tensor parallelism: true on the ranks other than 0. They hold a shard of the model but
  // schedule nothing: instead of add_request/step they call run_tensor_parallel_worker(), which
  // follows rank 0's steps and returns when rank 0's Engine is destroyed.
  bool is_tensor_parallel_worker() const;
  void run_tensor_parallel_worker();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagedllm
