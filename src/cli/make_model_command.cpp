#include "cli/make_model_command.h"

#include <iostream>
#include <map>

#include "cli/subcommand.h"
#include "format/gguf_file.h"
#include "loader/model_arch.h"
#include "model/presets.h"
#include "model/vision_language_preset.h"
#include "tokenizer/load_tokenizer.h"
#include "util/progress_bar.h"

namespace pagedllm::cli {

namespace {

struct MakeModelOptions {
  std::string preset;
  std::string dtype = "f32";
  std::string format = "gguf";
  std::string tokenizer;
  std::string out;
  std::string mmproj;  // vision-language presets as GGUF: the projector file
  uint64_t seed = 0;
  int vocab_size = 0;     // 0: the preset's
  int max_model_len = 0;  // 0: the preset's
};

// q4_k_m and q5_k_m are llama.cpp's mixes: Q6_K for attn_v, ffn_down and output.
void parse_dtype(const std::string& s, ExportSpec& spec) {
  if (s == "q4_k_m" || s == "q5_k_m") {
    spec.dtype = s == "q4_k_m" ? DType::kQ4_K : DType::kQ5_K;
    spec.sensitive_dtype = DType::kQ6_K;
    return;
  }
  static const std::map<std::string, DType> names = {
      {"f32", DType::kF32},   {"f16", DType::kF16},   {"bf16", DType::kBF16},
      {"q8_0", DType::kQ8_0}, {"q4_0", DType::kQ4_0}, {"q4_1", DType::kQ4_1},
      {"q5_0", DType::kQ5_0}, {"q5_1", DType::kQ5_1}, {"iq4_nl", DType::kIQ4_NL},
      {"q2_k", DType::kQ2_K}, {"q3_k", DType::kQ3_K}, {"q4_k", DType::kQ4_K},
      {"q5_k", DType::kQ5_K}, {"q6_k", DType::kQ6_K}, {"iq4_xs", DType::kIQ4_XS}};
  auto it = names.find(s);
  if (it == names.end())
    throw std::invalid_argument("unknown --dtype '" + s +
                                "' (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, "
                                "q3_k, q4_k, q5_k, q6_k, iq4_xs, q4_k_m, q5_k_m)");
  spec.dtype = it->second;
}

SentencePieceVocab vocab_for(const MakeModelOptions& o, int vocab_size) {
  if (o.tokenizer.empty()) return synthetic_vocab(vocab_size);
  if (GGUFFile::has_magic(o.tokenizer)) {
    throw std::invalid_argument("--tokenizer takes a llama2.c tokenizer.bin here");
  }
  return read_llama2c_tokenizer(o.tokenizer, vocab_size);
}

// A Qwen2-VL-family preset: the whole model (vision tower, tokenizer, chat template).
void write_vision_language(const MakeModelOptions& o, const ExportSpec& spec,
                           const Progress& progress) {
  const VisionLanguagePreset preset = vision_language_preset(o.preset);
  if (!o.tokenizer.empty())
    throw std::invalid_argument("--tokenizer: " + o.preset + " writes its own tokenizer");
  if (o.format == "gguf") {
    if (o.mmproj.empty())
      throw std::invalid_argument(o.preset + " as gguf needs --mmproj FILE for the vision tower");
    write_vision_language_gguf(preset, spec, o.seed, o.out, o.mmproj, progress);
  } else if (o.format == "safetensors") {
    write_vision_language_hf_directory(preset, spec, o.seed, o.out, progress);
  } else {
    throw std::invalid_argument("unknown --format '" + o.format + "' (gguf, safetensors)");
  }
}

int run(const MakeModelOptions& o) {
  ExportSpec spec;
  spec.config = preset_config(o.preset);
  // A draft model must share its target's vocabulary (and hold its context): a small preset
  // can take a larger one's.
  if (o.vocab_size > 0) spec.config.vocab_size = o.vocab_size;
  if (o.max_model_len > 0) spec.config.max_seq_len = o.max_model_len;
  parse_dtype(o.dtype, spec);
  // The random weights are drawn in the layout the GGUF file stores, so none is permuted.
  spec.source_rope = find_arch(spec.config.architecture)->gguf_rope_style;
  spec.name = o.preset;
  const WeightSource source = random_weights(spec.config, o.seed);
  ProgressBar bar("writing " + o.out);
  auto progress = [&bar](size_t done, size_t total) { bar.update(done, total); };
  if (is_vision_language_preset(o.preset)) {
    write_vision_language(o, spec, progress);
  } else if (!o.mmproj.empty()) {
    throw std::invalid_argument("--mmproj: " + o.preset + " has no vision tower");
  } else if (o.format == "gguf") {
    spec.vocab = vocab_for(o, spec.config.vocab_size);
    export_gguf(spec, source, o.out, progress);
  } else if (o.format == "safetensors") {
    export_hf_directory(spec, source, o.out, progress);
  } else {
    throw std::invalid_argument("unknown --format '" + o.format + "' (gguf, safetensors)");
  }
  std::cerr << "pagedllm: wrote " << o.preset << " (" << o.dtype << ", " << o.format << ") to "
            << o.out << "\n";
  return 0;
}

}  // namespace

void add_make_model_command(CLI::App& app, int& exit_code) {
  auto [cmd, o] = add_subcommand<MakeModelOptions>(
      app, "make-model",
      "Write a model of a real shape with random weights (std 0.02, norms 1), for "
      "benchmarks; GGUF files use llama.cpp's tensor names and metadata keys",
      exit_code, run);
  cmd->add_option("--preset", o->preset,
                  "llama-110m, llama-1b, qwen2-0.5b, qwen25-vl-3b, or for tests tiny, "
                  "tiny-kquant, tiny-tp, tiny-llama3, tiny-qwen2, tiny-qwen3, tiny-qwen2-vl, "
                  "tiny-qwen25-vl")
      ->required();
  cmd->add_option("--dtype", o->dtype,
                  "Weight type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, "
                  "q4_k, q5_k, q6_k, iq4_xs, or the mixes q4_k_m and q5_k_m (Q6_K for attn_v, "
                  "ffn_down, output); rows that hold no whole block stay f32")
      ->capture_default_str();
  cmd->add_option("--format", o->format, "gguf (one file) or safetensors (an HF directory)")
      ->capture_default_str();
  cmd->add_option("--tokenizer", o->tokenizer,
                  "Embed this llama2.c tokenizer.bin instead of a synthetic vocabulary (GGUF)");
  cmd->add_option("--seed", o->seed, "Seed of the random weights")->capture_default_str();
  cmd->add_option(
         "--vocab-size", o->vocab_size,
         "Vocabulary size instead of the preset's (e.g. llama-110m with llama-1b's 128256, "
         "to draft for it)")
      ->check(CLI::Range(259, 1 << 20));
  cmd->add_option("--context-length", o->max_model_len, "Context length instead of the preset's")
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_option("--out", o->out, "Output file (gguf) or directory (safetensors)")->required();
  cmd->add_option("--mmproj", o->mmproj,
                  "Vision-language presets as gguf: write the vision tower here, as llama.cpp's "
                  "mmproj file");
}

}  // namespace pagedllm::cli
