#include "pagedllm/engine.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "engine/engine_core.h"
#include "engine/tensor_parallel.h"
#include "executor/mpi_executor.h"
#include "kernels/cpu/bf16_batch_tile.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_onednn.h"
#include "kernels/kv_cache.h"
#include "loader/hf_cache.h"
#include "loader/load_model.h"
#include "model/model_factory.h"
#include "model/vision_model.h"
#include "multimodal/image_input.h"
#include "spec_decode/draft_vocabulary.h"
#include "spec_decode/speculative_config.h"
#include "structured/grammar_cache.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/load_tokenizer.h"
#include "util/log.h"
#include "util/progress_bar.h"

namespace pagedllm {

namespace {

// PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN set to 1 or true, as vLLM reads VLLM_ALLOW_LONG_MAX_MODEL_LEN.
bool allow_long_max_model_len() {
  const char* env = std::getenv("PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN");
  if (!env) return false;
  const std::string v = env;
  return v == "1" || v == "true" || v == "True";
}

// Physical cores: distinct (package, core) pairs, falling back to the logical count.
int physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  for (unsigned cpu = 0; cpu < 4096; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream core(base + "core_id"), package(base + "physical_package_id");
    if (!core || !package) break;
    std::string c, p;
    core >> c;
    package >> p;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int>(cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

// Image tokens of the largest image the processor makes (max_pixels after smart_resize): one per
// merged patch of (patch_size * merge_size)^2 pixels.
int largest_image_tokens(const Qwen2VLImageProcessorConfig& p) {
  const int64_t factor = static_cast<int64_t>(p.patch_size) * p.merge_size;
  return static_cast<int>(std::min<int64_t>(p.max_pixels / (factor * factor), 1 << 30));
}

std::string hex_of(const ImageHash& h) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high),
                static_cast<unsigned long long>(h.low));
  return buf;
}

// A GGUF language model names its vision tokens only in its vocabulary.
std::optional<int32_t> special_token_id(const Tokenizer& tokenizer, const std::string& text) {
  const std::vector<int32_t> ids = tokenizer.encode(text, false);
  if (ids.size() != 1 || !tokenizer.is_special(ids[0])) return std::nullopt;
  return ids[0];
}

}  // namespace

// What prepare_image makes: the encoder's input and its content hash, shared by the requests
// that send the same image.
struct ImageData {
  std::shared_ptr<const EncoderInput> input;
  std::string identifier;
};

struct Engine::Impl {
  struct Tracked {
    RequestOutput out;
    std::unique_ptr<IncrementalDetokenizer> detokenizer;
  };

  EngineOptions options;
  std::shared_ptr<const ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
  EngineConfig config;
  std::unique_ptr<PagedKVCache> kv_cache;
  std::unique_ptr<Model> model;
  std::unique_ptr<EngineCore> core;
  std::unordered_map<std::string, Tracked> tracked;
  std::vector<RequestOutput> aborted;
  int64_t next_id = 0;
  int threads = 1;
  DType kv_dtype = DType::kF32;
  distributed::Communicator* tp = nullptr;  // the tensor-parallel job; null in one process
  MpiExecutor* tp_executor = nullptr;
  // Structured outputs: requests' grammars, compiled when they arrive, shared with the runner.
  std::shared_ptr<structured::TokenGrammarCache> grammars;
  // Images: the vision half of a vision-language model; null for text-only models.
  std::shared_ptr<VisionModel> vision;

  static DType resolve_kv_dtype(const std::string& name, DType weights) {
    if (name == "f32" || name == "float32") return DType::kF32;
    if (name == "bf16" || name == "bfloat16") return DType::kBF16;
    // vLLM's fp8: E4M3 with unit scales (no calibration), a quarter of f32's bytes.
    if (name == "fp8" || name == "fp8_e4m3") return DType::kF8E4M3;
    // llama.cpp's -ctk/-ctv q8_0: 8-bit codes with an f16 scale per 32 elements.
    if (name == "q8_0") return DType::kQ8_0;
    // auto: f32 for f32 weights; bf16 for the rest, as vLLM's 16-bit model dtype and
    // llama.cpp's f16 default cache give quantized files: half f32's bytes, which long-context
    // decode streams once per token.
    if (name == "auto") return weights == DType::kF32 ? DType::kF32 : DType::kBF16;
    throw ConfigError("kv_cache_dtype must be auto, f32, bf16, fp8 (fp8_e4m3) or q8_0, got '" +
                      name + "'");
  }

  explicit Impl(const EngineOptions& o) : options(o) {
    options.model = resolve_model_path(o.model);
    tp = join_tensor_parallel(o);
    ModelFingerprint fingerprint;
    weights = load_rank_weights(options.model, tp, fingerprint);
    const ModelConfig& mc = weights->config;
    threads = o.threads > 0 ? o.threads : physical_cores();
    omp_set_num_threads(threads);
    try {
      cpu::set_matmul_backend(o.matmul_backend == "auto"
                                  ? cpu::matmul_backend_from_env()
                                  : cpu::parse_matmul_backend(o.matmul_backend));
    } catch (const std::invalid_argument& e) {
      throw ConfigError(e.what());
    }

    auto& s = config.scheduler;
    s.max_model_len = o.max_model_len > 0 ? o.max_model_len : mc.max_seq_len;
    if (s.max_model_len > mc.max_seq_len) {
      const std::string what = "max_model_len " + std::to_string(s.max_model_len) +
                               " exceeds the model's context length " +
                               std::to_string(mc.max_seq_len);
      // vLLM's VLLM_ALLOW_LONG_MAX_MODEL_LEN: the user takes the risk of positions the model
      // was not trained on (benchmarks at depth on small presets, RoPE-scaled fine-tunes).
      if (!allow_long_max_model_len()) {
        throw ConfigError(what + " (PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN=1 allows it)");
      }
      log_warning("engine", what + ": allowed by PAGEDLLM_ALLOW_LONG_MAX_MODEL_LEN; outputs past " +
                                std::to_string(mc.max_seq_len) + " tokens may be wrong");
    }
    s.max_num_seqs = o.max_num_seqs;
    s.max_num_batched_tokens = o.max_num_batched_tokens;
    s.enable_chunked_prefill = o.enable_chunked_prefill;
    config.speculative = parse_speculative_config(o.speculative_config);
    config.speculative.replay_sequences = o.speculative_replay;
    config.speculative.target_vocab_size = mc.vocab_size;
    const DType weight_dtype =
        weights->layers.empty() ? DType::kF32 : weights->layers[0].w_up.dtype;
    kv_dtype = resolve_kv_dtype(o.kv_cache_dtype, weight_dtype);
    auto& c = config.cache;
    c.block_size = o.block_size;
    c.enable_prefix_caching = o.enable_prefix_caching;
    c.num_blocks = o.num_blocks;
    // The model of this architecture says what one block holds; the pool is sized from that.
    auto kv_spec = [&](int blocks) {
      return model_kv_cache_spec(*weights, blocks, c.block_size, kv_dtype);
    };
    const bool sized_from_budget = c.num_blocks <= 0;
    if (sized_from_budget) {
      c.kv_cache_memory_bytes = static_cast<int64_t>(o.kv_cache_memory_gib * (1LL << 30));
      c.resolve_num_blocks(kv_spec(1).bytes_per_block());
    }
    if (o.max_model_len <= 0) fit_max_model_len_to_pool(mc.max_seq_len);
    if (sized_from_budget) {
      // No point holding more than every sequence at full length, plus the null block.
      c.num_blocks = std::min(c.num_blocks, s.max_num_seqs * config.max_num_blocks_per_req() + 1);
    }
    if (!s.enable_chunked_prefill)
      s.max_num_batched_tokens = std::max(s.max_num_batched_tokens, s.max_model_len);
    config.validate();
    load_vision(o);
    tokenizer = load_tokenizer(options.model, o.tokenizer, mc.vocab_size);
    if (config.speculative.method == SpeculativeMethod::kDraftModel &&
        !check_draft_vocabulary(config.speculative.draft_model, *tokenizer)) {
      log_info("engine", "draft model " + config.speculative.draft_model +
                             ": no vocabulary of its own to compare with the target's; its "
                             "vocabulary size is checked");
    }
    if (vision && !o.mmproj.empty()) take_vision_token_ids();
    kv_cache = std::make_unique<PagedKVCache>(kv_spec(c.num_blocks));
    ProgressBar bar("loading " + options.model);
    model = create_model(
        weights,
        {s.max_num_batched_tokens, [&bar](size_t done, size_t total) { bar.update(done, total); }},
        shard_of(tp, mc.vocab_size));
    model->bind_kv_cache(*kv_cache);
    RunnerOptions runner;
    runner.vision = vision;
    runner.grammars = grammars =
        std::make_shared<structured::TokenGrammarCache>([this, vocab = mc.vocab_size] {
          return structured::TokenVocabulary::from_tokenizer(*tokenizer, vocab);
        });
    if (!tp) {
      core = std::make_unique<EngineCore>(config, *model, runner);
      return;
    }
    tensor_parallel_handshake(*tp, options, fingerprint, config);
    auto executor = std::make_unique<MpiExecutor>(config, *model, *tp, runner);
    tp_executor = executor.get();
    core = std::make_unique<EngineCore>(config, std::move(executor));
  }

  // As llama.cpp does with a context that does not fit: a model whose own context is longer
  // than the KV pool holds serves what fits (when --max-model-len was not given), and says so.
  void fit_max_model_len_to_pool(int model_context) {
    auto& s = config.scheduler;
    const auto& c = config.cache;
    const int64_t fits = static_cast<int64_t>(c.num_usable_blocks()) * c.block_size;
    if (fits >= s.max_model_len || fits < c.block_size) return;
    s.max_model_len = static_cast<int>(fits);
    log_warning("engine", "the model's context of " + std::to_string(model_context) +
                              " tokens does not fit the KV cache (" +
                              std::to_string(c.num_usable_blocks()) + " blocks of " +
                              std::to_string(c.block_size) + " tokens): max_model_len lowered to " +
                              std::to_string(fits) +
                              "; raise --kv-cache-memory, or set --max-model-len to choose");
  }

  // The vision encoder and the encoder budget and cache, in vLLM's sense: by default one step
  // may encode max_num_batched_tokens of embeddings, or the largest image if that is more.
  void load_vision(const EngineOptions& o) {
    auto loaded = load_vision_model(options.model, o.mmproj);
    if (!loaded) return;
    vision = std::const_pointer_cast<VisionModel>(loaded);
    if (vision->encoder->config().out_hidden_size != weights->config.dim) {
      throw ConfigError("the vision encoder's output width (" +
                        std::to_string(vision->encoder->config().out_hidden_size) +
                        ") is not the language model's (" + std::to_string(weights->config.dim) +
                        "): --mmproj belongs to another model");
    }
    auto& s = config.scheduler;
    const int largest = std::min(largest_image_tokens(vision->processor), s.max_model_len);
    s.max_num_encoder_input_tokens = o.max_num_encoder_input_tokens > 0
                                         ? o.max_num_encoder_input_tokens
                                         : std::max(s.max_num_batched_tokens, largest);
    s.encoder_cache_size =
        o.encoder_cache_size > 0 ? o.encoder_cache_size : s.max_num_encoder_input_tokens;
    log_info("engine", "vision encoder from " + vision->source + " (" +
                           to_string(vision->encoder->config().matmul_dtype) +
                           " matrix products): encoder budget " +
                           std::to_string(s.max_num_encoder_input_tokens) +
                           " tokens per step, encoder cache " +
                           std::to_string(s.encoder_cache_size) + " tokens");
  }

  void take_vision_token_ids() {
    VisionTokenIds& ids = vision->mrope.ids;
    const std::pair<const char*, int32_t*> names[] = {{"<|vision_start|>", &ids.vision_start},
                                                      {"<|vision_end|>", &ids.vision_end},
                                                      {"<|image_pad|>", &ids.image_pad},
                                                      {"<|video_pad|>", &ids.video_pad}};
    for (const auto& [text, id] : names) {
      if (auto found = special_token_id(*tokenizer, text)) *id = *found;
    }
  }

  void require_vision() const {
    if (vision) return;
    throw std::invalid_argument("this model takes no images (" + options.model +
                                " has no vision encoder; a GGUF model needs --mmproj)");
  }

  static ImagePixelOverrides overrides_of(const ImageOptions& o) {
    ImagePixelOverrides overrides;
    if (o.min_pixels > 0) overrides.min_pixels = o.min_pixels;
    if (o.max_pixels > 0) overrides.max_pixels = o.max_pixels;
    return overrides;
  }

  ImageInput prepare_image(std::span<const uint8_t> bytes, const ImageOptions& o) const {
    require_vision();
    ImageDecodeOptions decode;
    if (options.max_image_pixels > 0) decode.max_pixels = options.max_image_pixels;
    return to_input(prepare_qwen2vl_image(bytes, vision->processor, overrides_of(o), decode));
  }

  ImageInput prepare_image_rgb(std::span<const uint8_t> rgb, int width, int height,
                               const ImageOptions& o) const {
    require_vision();
    if (width <= 0 || height <= 0 ||
        rgb.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 3)
      throw std::invalid_argument("image pixels must be height x width x 3 bytes of RGB");
    Image image(width, height, 3);
    std::copy(rgb.begin(), rgb.end(), image.pixels.begin());
    return to_input(prepare_qwen2vl_image(image, vision->processor, overrides_of(o)));
  }

  static ImageInput to_input(PreparedImage prepared) {
    auto input = std::make_shared<EncoderInput>();
    input->pixel_values = std::move(prepared.processed.pixel_values);
    input->grid_t = prepared.processed.grid.t;
    input->grid_h = prepared.processed.grid.h;
    input->grid_w = prepared.processed.grid.w;
    auto data = std::make_shared<ImageData>(ImageData{std::move(input), hex_of(prepared.hash)});
    return ImageInput{std::move(data), prepared.num_tokens, prepared.source_width,
                      prepared.source_height};
  }

  // Widens each image's one pad token to its num_tokens pads and records where they lie.
  std::vector<MultiModalFeature> place_images(std::vector<int32_t>& ids,
                                              const std::vector<ImageInput>& images) const {
    require_vision();
    std::vector<GridTHW> grids;
    for (const ImageInput& image : images) {
      if (!image.data || !image.data->input)
        throw std::invalid_argument("an image was not made by prepare_image");
      const EncoderInput& in = *image.data->input;
      grids.push_back({in.grid_t, in.grid_h, in.grid_w});
    }
    ExpandedPrompt expanded =
        expand_image_placeholders(ids, vision->mrope.ids, grids, vision->mrope.spatial_merge_size);
    std::vector<MultiModalFeature> features;
    for (size_t k = 0; k < images.size(); ++k) {
      features.push_back({images[k].data->identifier, expanded.images[k].offset,
                          expanded.images[k].length, images[k].data->input});
    }
    ids = std::move(expanded.tokens);
    return features;
  }

  std::string add(std::vector<int32_t> ids, const SamplingParams& params, std::string id,
                  std::vector<MultiModalFeature> features = {}) {
    if (id.empty()) id = std::to_string(next_id++);
    for (int32_t t : ids) {
      if (t < 0 || t >= weights->config.vocab_size) {
        throw std::invalid_argument("token id " + std::to_string(t) +
                                    " is outside the vocabulary [0, " +
                                    std::to_string(weights->config.vocab_size) + ")");
      }
    }
    if (tracked.count(id)) throw std::invalid_argument("request id '" + id + "' is already in use");
    // Compiled now, on the caller's thread: a grammar that does not compile is the caller's
    // error, and the step that first samples under it finds it in the cache.
    if (params.structured_outputs) grammars->get(*params.structured_outputs);
    Tracked t;
    t.out.request_id = id;
    t.out.prompt_token_ids = ids;
    const int32_t previous = ids.empty() ? -1 : ids.back();
    if (options.detokenize)
      t.detokenizer = std::make_unique<IncrementalDetokenizer>(*tokenizer, previous);
    if (options.delta_outputs) t.out.prompt_token_ids.clear();
    auto request = std::make_unique<Request>(id, std::move(ids), params, tokenizer->eos_id());
    request->mm_features = std::move(features);
    core->add_request(std::move(request));
    tracked.emplace(id, std::move(t));
    return id;
  }

  // Time in the vision encoder, where this process runs it.
  double encoder_seconds() const {
    if (!vision) return 0.0;
    try {
      const EncoderRunner* e = core->runner().encoder();
      return e ? e->encoder_seconds() : 0.0;
    } catch (const std::logic_error&) {
      return 0.0;  // tensor parallelism: no runner in this process's executor
    }
  }

  std::vector<RequestOutput> step() {
    std::vector<RequestOutput> results;
    results.swap(aborted);
    for (const EngineCoreOutput& o : core->step()) {
      auto it = tracked.find(o.req_id);
      if (it == tracked.end()) continue;
      RequestOutput& out = it->second.out;
      IncrementalDetokenizer* detokenizer = it->second.detokenizer.get();
      if (options.delta_outputs) {
        out.token_ids.clear();
        out.logprobs.clear();
        out.text.clear();
      }
      out.new_token_ids = o.new_token_ids;
      out.new_text.clear();
      for (int32_t token : o.new_token_ids) {
        out.token_ids.push_back(token);
        if (detokenizer) out.new_text += detokenizer->push(token);
      }
      out.logprobs.insert(out.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      if (o.finish_reason) {
        if (detokenizer) out.new_text += detokenizer->flush();
        out.finished = true;
        out.finish_reason = to_string(*o.finish_reason);
      }
      out.text += out.new_text;
      results.push_back(out);
      if (out.finished) tracked.erase(it);
    }
    return results;
  }
};

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>(options)) {}
Engine::~Engine() = default;

std::string Engine::add_request(std::vector<int32_t> ids, const SamplingParams& params,
                                std::string request_id) {
  return impl_->add(std::move(ids), params, std::move(request_id));
}

std::string Engine::add_request(const std::string& prompt, const SamplingParams& params,
                                std::string request_id) {
  return impl_->add(impl_->tokenizer->encode(prompt, true), params, std::move(request_id));
}

std::string Engine::add_request(std::vector<int32_t> ids, std::vector<ImageInput> images,
                                const SamplingParams& params, std::string request_id) {
  if (images.empty()) return impl_->add(std::move(ids), params, std::move(request_id));
  std::vector<MultiModalFeature> features = impl_->place_images(ids, images);
  return impl_->add(std::move(ids), params, std::move(request_id), std::move(features));
}

bool Engine::supports_images() const {
  return impl_->vision != nullptr;
}

ImageInput Engine::prepare_image(std::span<const uint8_t> bytes,
                                 const ImageOptions& options) const {
  return impl_->prepare_image(bytes, options);
}

ImageInput Engine::prepare_image_rgb(std::span<const uint8_t> rgb, int width, int height,
                                     const ImageOptions& options) const {
  return impl_->prepare_image_rgb(rgb, width, height, options);
}

void Engine::check_structured_outputs(const StructuredOutputs& outputs) const {
  impl_->grammars->get(outputs);
}

void Engine::abort_request(const std::string& request_id) {
  auto it = impl_->tracked.find(request_id);
  if (it == impl_->tracked.end()) return;
  const std::string id = request_id;
  impl_->core->abort_requests(std::span(&id, 1));
  RequestOutput out = std::move(it->second.out);
  out.new_token_ids.clear();
  if (impl_->options.delta_outputs) {
    out.token_ids.clear();
    out.logprobs.clear();
    out.text.clear();
  }
  out.new_text = it->second.detokenizer ? it->second.detokenizer->flush() : std::string();
  out.text += out.new_text;
  out.finished = true;
  out.finish_reason = "abort";
  impl_->aborted.push_back(std::move(out));
  impl_->tracked.erase(it);
}

std::vector<RequestOutput> Engine::step() {
  return impl_->step();
}

bool Engine::has_unfinished_requests() const {
  return impl_->core->has_unfinished_requests() || !impl_->aborted.empty();
}

std::vector<RequestOutput> Engine::generate(const std::vector<std::vector<int32_t>>& prompts,
                                            const SamplingParams& params) {
  std::vector<std::string> ids;
  for (const auto& p : prompts) ids.push_back(add_request(p, params));
  std::map<std::string, RequestOutput> done;
  std::map<std::string, RequestOutput> partial;  // accumulates deltas when delta_outputs is on
  while (done.size() < ids.size()) {
    for (auto& out : step()) {
      if (impl_->options.delta_outputs) {
        RequestOutput& acc = partial[out.request_id];
        acc.token_ids.insert(acc.token_ids.end(), out.token_ids.begin(), out.token_ids.end());
        acc.logprobs.insert(acc.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
        acc.text += out.text;
        if (out.finished) {
          out.token_ids = std::move(acc.token_ids);
          out.logprobs = std::move(acc.logprobs);
          out.text = std::move(acc.text);
        }
      }
      if (out.finished) done[out.request_id] = std::move(out);
    }
  }
  std::vector<RequestOutput> ordered;
  for (const auto& id : ids) ordered.push_back(std::move(done.at(id)));
  return ordered;
}

std::vector<RequestOutput> Engine::generate(const std::vector<std::string>& prompts,
                                            const SamplingParams& params) {
  std::vector<std::vector<int32_t>> ids;
  for (const auto& p : prompts) ids.push_back(encode(p, true));
  return generate(ids, params);
}

std::vector<int32_t> Engine::encode(const std::string& text, bool add_special) const {
  return impl_->tokenizer->encode(text, add_special);
}

std::string Engine::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->tokenizer->decode(std::vector<int32_t>(ids.begin(), ids.end()), skip_special);
}

int Engine::vocab_size() const {
  return impl_->weights->config.vocab_size;
}
int64_t Engine::kv_cache_tokens() const {
  const auto& c = impl_->config.cache;
  return static_cast<int64_t>(c.num_usable_blocks()) * c.block_size;
}

int Engine::max_model_len() const {
  return impl_->config.scheduler.max_model_len;
}
std::optional<int32_t> Engine::eos_token_id() const {
  return impl_->tokenizer->eos_id();
}

EngineStats Engine::stats() const {
  const Scheduler& s = impl_->core->scheduler();
  const auto& kv = s.kv_cache_manager();
  const SpecDecodingStats& spec = s.spec_decoding_stats();
  return EngineStats{s.num_running(),
                     s.num_waiting(),
                     kv.usage(),
                     s.num_preemptions_total(),
                     kv.prefix_cache_stats().queries,
                     kv.prefix_cache_stats().hits,
                     spec.num_drafts,
                     spec.num_draft_tokens,
                     spec.num_accepted_tokens,
                     spec.accepted_per_position,
                     s.encoder_cache().usage(),
                     s.num_encoded_images(),
                     s.num_encoded_image_tokens(),
                     impl_->encoder_seconds()};
}

std::vector<std::string> Engine::last_step_admitted() const {
  std::vector<std::string> ids;
  const SchedulerOutput& so = impl_->core->last_scheduler_output();
  for (const auto& r : so.scheduled_new_reqs) ids.push_back(r.req_id);
  for (const auto& r : so.scheduled_cached_reqs)
    if (r.resumed_from_preemption) ids.push_back(r.req_id);
  return ids;
}

int Engine::last_step_num_scheduled_tokens() const {
  return impl_->core->last_scheduler_output().total_num_scheduled_tokens;
}

const Tokenizer& Engine::tokenizer() const {
  return *impl_->tokenizer;
}

bool Engine::is_tensor_parallel_worker() const {
  return impl_->tp && impl_->tp->rank() != 0;
}

void Engine::run_tensor_parallel_worker() {
  if (!is_tensor_parallel_worker()) throw std::logic_error("not a tensor-parallel worker rank");
  impl_->tp_executor->run_worker();
}

size_t Engine::weight_bytes() const {
  return impl_->model->linear_weight_bytes();
}

std::string Engine::describe() const {
  const auto& mc = impl_->weights->config;
  const auto& c = impl_->config;
  const auto& w = *impl_->weights;
  std::ostringstream os;
  os << "model=" << w.source << " arch=" << mc.architecture << " dim=" << mc.dim
     << " layers=" << mc.n_layers << " heads=" << mc.n_heads << "/" << mc.n_kv_heads
     << " vocab=" << mc.vocab_size << " weights=" << weight_type_mix(w)
     << " embedding=" << to_string(w.token_embedding.dtype) << " threads=" << impl_->threads;
  if (impl_->tp) os << " tensor_parallel=" << impl_->tp->rank() << "/" << impl_->tp->size();
  os << " kv_blocks=" << c.cache.num_blocks - 1 << "x" << c.cache.block_size << " tokens ("
     << std::fixed;
  os.precision(1);
  const auto mib = [&](int64_t blocks) {
    return static_cast<double>(impl_->kv_cache->spec().bytes_per_block() * blocks) / (1 << 20);
  };
  const DType kv = impl_->kv_dtype;
  os << mib(c.cache.num_blocks) << " MiB "
     << (kv == DType::kBF16     ? "bf16"
         : kv == DType::kF8E4M3 ? "fp8_e4m3"
         : kv == DType::kQ8_0   ? "q8_0"
                                : "f32");
  // Why the pool has this size: what every sequence at full length needs, and the budget.
  if (impl_->options.num_blocks > 0) {
    os << ", --num-blocks";
  } else {
    os << "; max_num_seqs x max_model_len need "
       << mib(int64_t{c.scheduler.max_num_seqs} * c.max_num_blocks_per_req() + 1) << " MiB, budget "
       << impl_->options.kv_cache_memory_gib * 1024 << " MiB";
  }
  os << ") max_model_len=" << c.scheduler.max_model_len
     << " max_num_batched_tokens=" << c.scheduler.max_num_batched_tokens
     << " max_num_seqs=" << c.scheduler.max_num_seqs
     << " prefix_caching=" << (c.cache.enable_prefix_caching ? "on" : "off")
     << " chunked_prefill=" << (c.scheduler.enable_chunked_prefill ? "on" : "off")
     << " speculative=" << pagedllm::describe(c.speculative);
  if (impl_->vision) {
    os << " vision=" << impl_->vision->source
       << " encoder_budget=" << c.scheduler.max_num_encoder_input_tokens
       << " encoder_cache=" << c.scheduler.encoder_cache_size;
  }
  os << " isa=" << cpu::to_string(cpu::active_isa())
     << " matmul=" << cpu::describe_matmul_backend();
  if (cpu::active_isa() >= cpu::Isa::kAvx512Bf16)
    os << " bf16_batches=" << cpu::describe_bf16_batch_tile();
  os << " cpu=[" << cpu::cpu_flags_summary() << "]";
  return os.str();
}

}  // namespace pagedllm
