#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "format/gguf_file.h"
#include "loader/load_model.h"
#include "test_paths.h"

namespace pagedllm {
namespace {

using json = nlohmann::json;
using test::run_cli;

TEST(MakeModelCli, WritesLoadableFilesWithLlamaCppNames) {
  for (const char* dtype : {"f32", "bf16", "q8_0", "q4_0"}) {
    SCOPED_TRACE(dtype);
    const std::string path = test::temp_path(std::string("tiny-") + dtype + ".gguf");
    const auto r =
        run_cli(std::string("make-model --preset tiny --dtype ") + dtype + " --out " + path);
    ASSERT_EQ(r.code, 0) << r.err;
    const GGUFFile g(path);
    EXPECT_EQ(g.get_string("general.architecture"), "llama");
    EXPECT_EQ(g.get_int("llama.block_count"), 2);
    EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
    ASSERT_NE(g.tensor("blk.1.ffn_down.weight"), nullptr);
    EXPECT_EQ(g.tensor("blk.0.attn_q.weight")->dims, (std::vector<int64_t>{64, 64}));
    const ModelWeights w = load_model(path);
    EXPECT_EQ(w.config.vocab_size, 512);
    const auto gen =
        run_cli("generate --model " + path +
                " --prompt \"abc\" --max-tokens 4 --temperature 0 --json --ignore-eos");
    ASSERT_EQ(gen.code, 0) << gen.err;
    EXPECT_EQ(json::parse(gen.out)["token_ids"].size(), 4u);
  }
  const std::string hf = test::temp_path("tiny-hf");
  ASSERT_EQ(run_cli("make-model --preset tiny --dtype bf16 --format safetensors --out " + hf).code,
            0);
  EXPECT_EQ(load_model(hf).layers[0].wq.dtype, DType::kBF16);
  EXPECT_NE(run_cli("make-model --preset nope --out /tmp/x.gguf").code, 0);
  EXPECT_NE(run_cli("make-model --preset tiny --dtype q4_0 --format safetensors --out " + hf).code,
            0);
}

TEST(MakeModelCli, WritesKQuantMixesAsLlamaCppDoes) {
  const std::string path = test::temp_path("tiny-kquant-q4_k_m.gguf");
  const auto r = run_cli("make-model --preset tiny-kquant --dtype q4_k_m --out " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  const GGUFFile g(path);
  EXPECT_EQ(g.get_int("general.file_type"), 15);                 // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(g.tensor("blk.0.attn_q.weight")->ggml_type, 12u);    // Q4_K
  EXPECT_EQ(g.tensor("blk.0.attn_v.weight")->ggml_type, 14u);    // Q6_K
  EXPECT_EQ(g.tensor("blk.1.ffn_down.weight")->ggml_type, 14u);  // Q6_K
  EXPECT_EQ(g.tensor("output.weight")->ggml_type, 14u);
  EXPECT_EQ(g.tensor("blk.0.attn_norm.weight")->ggml_type, 0u);  // vectors stay f32
  const auto gen = run_cli("generate --model " + path +
                           " --prompt \"abc\" --max-tokens 4 --temperature 0 --json --ignore-eos");
  ASSERT_EQ(gen.code, 0) << gen.err;
  EXPECT_EQ(json::parse(gen.out)["token_ids"].size(), 4u);
  const auto unknown = run_cli("make-model --preset tiny --dtype iq2_xxs --out " + path);
  EXPECT_NE(unknown.code, 0);
  EXPECT_NE(unknown.err.find("unknown --dtype 'iq2_xxs'"), std::string::npos) << unknown.err;
}

// Every single-type format the loader reads, written by make-model with llama.cpp's type ids
// and run (tiny-kquant's rows hold whole 256-element super-blocks).
TEST(MakeModelCli, WritesAndRunsEveryBlockFormat) {
  const std::pair<const char*, uint32_t> formats[] = {{"q4_1", 3},   {"q5_0", 6},  {"q5_1", 7},
                                                      {"q2_k", 10},  {"q3_k", 11}, {"iq4_nl", 20},
                                                      {"iq4_xs", 23}};
  for (const auto& [dtype, ggml_type] : formats) {
    SCOPED_TRACE(dtype);
    const std::string path = test::temp_path(std::string("tiny-kquant-") + dtype + ".gguf");
    const auto r =
        run_cli(std::string("make-model --preset tiny-kquant --dtype ") + dtype + " --out " + path);
    ASSERT_EQ(r.code, 0) << r.err;
    const GGUFFile g(path);
    EXPECT_EQ(g.tensor("blk.0.attn_q.weight")->ggml_type, ggml_type);
    EXPECT_EQ(g.tensor("blk.1.ffn_down.weight")->ggml_type, ggml_type);
    const auto gen =
        run_cli("generate --model " + path +
                " --prompt \"abc\" --max-tokens 4 --temperature 0 --json --ignore-eos");
    ASSERT_EQ(gen.code, 0) << gen.err;
    EXPECT_EQ(json::parse(gen.out)["token_ids"].size(), 4u);
  }
}

// A small preset with a larger one's vocabulary and context, to draft for it.
TEST(MakeModelCli, VocabularySizeAndContextLengthCanBeSetForADraftModel) {
  const std::string path = test::temp_path("tiny-draft.gguf");
  const auto r =
      run_cli("make-model --preset tiny --vocab-size 640 --context-length 4096 --out " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  const ModelWeights w = load_model(path);
  EXPECT_EQ(w.config.vocab_size, 640);
  EXPECT_EQ(w.config.max_seq_len, 4096);
  EXPECT_NE(run_cli("make-model --preset tiny --vocab-size 7 --out " + path).code, 0);
}

TEST(MakeModelCli, RandomWeightsAreReproducibleFromTheSeed) {
  const std::string a = test::temp_path("seed-a.gguf"), b = test::temp_path("seed-b.gguf");
  ASSERT_EQ(run_cli("make-model --preset tiny --seed 3 --out " + a).code, 0);
  ASSERT_EQ(run_cli("make-model --preset tiny --seed 3 --out " + b).code, 0);
  const GGUFFile fa(a), fb(b);
  const auto* ta = fa.tensor("blk.0.ffn_up.weight");
  const auto* tb = fb.tensor("blk.0.ffn_up.weight");
  ASSERT_EQ(ta->size_bytes, tb->size_bytes);
  EXPECT_EQ(std::memcmp(ta->data, tb->data, ta->size_bytes), 0);
}

// A vision-language preset writes a whole model both ways; the same seed gives the same tokens.
TEST(MakeModelCli, VisionLanguagePresetWritesAnHfDirectoryAndAGgufPair) {
  const std::string dir = test::temp_path("cli-tiny-qwen25-vl");
  const std::string lm = test::temp_path("cli-tiny-qwen25-vl.gguf");
  const std::string mmproj = test::temp_path("cli-tiny-qwen25-vl-mmproj.gguf");
  const std::string preset = "make-model --preset tiny-qwen25-vl --seed 7 ";
  auto r = run_cli(preset + "--format safetensors --out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_cli(preset + "--out " + lm + " --mmproj " + mmproj);
  ASSERT_EQ(r.code, 0) << r.err;
  const GGUFFile g(lm);
  EXPECT_EQ(g.get_string("general.architecture"), "qwen2vl");
  EXPECT_EQ(g.find("qwen2vl.rope.dimension_sections")->ints, (std::vector<int64_t>{2, 3, 3, 0}));
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(g.get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(GGUFFile(mmproj).get_string("clip.projector_type"), "qwen2.5vl_merger");
  std::vector<std::vector<int>> tokens;
  for (const std::string& model : {dir, lm}) {
    const auto gen = run_cli("generate --model " + model +
                             " --prompt \"the cat\" --max-tokens 6 --temperature 0 --json "
                             "--ignore-eos --max-model-len 256");
    ASSERT_EQ(gen.code, 0) << gen.err;
    tokens.push_back(json::parse(gen.out)["token_ids"].get<std::vector<int>>());
  }
  EXPECT_EQ(tokens[0].size(), 6u);
  EXPECT_EQ(tokens[0], tokens[1]);
  r = run_cli(preset + "--out " + lm);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("needs --mmproj FILE"), std::string::npos) << r.err;
}

TEST(BenchCli, LatencyAndThroughputReportJson) {
  const std::string path = test::temp_path("bench-tiny.gguf");
  ASSERT_EQ(run_cli("make-model --preset tiny --out " + path).code, 0);
  auto r = run_cli("bench latency --model " + path + " -p 32 -n 8 -r 2 --json --bandwidth");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0.0);
  const double tg = j["tg_tokens_per_s"].get<double>();
  EXPECT_GT(tg, 0.0);
  // tiny in f32, per layer: qkv 128x64, o 64x64, gate/up 256x64, down 64x128; output 512x64.
  const double weight_bytes = 4.0 * (2 * (128 * 64 + 64 * 64 + 256 * 64 + 64 * 128) + 512 * 64);
  EXPECT_EQ(j["weight_bytes"].get<double>(), weight_bytes);
  EXPECT_GT(j["read_gb_per_s"].get<double>(), 0.0);
  // With two runs the median tg is the mean.
  EXPECT_NEAR(j["tg_weight_gb_per_s"].get<double>(), tg * weight_bytes * 1e-9, 1e-9 * tg);
  EXPECT_GT(j["tg_bandwidth_ratio"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("threads="), std::string::npos);
  r = run_cli("bench throughput --model " + path +
              " --num-prompts 8 --input-len 16 --output-len 8 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  j = json::parse(r.out);
  EXPECT_GT(j["requests_per_s"].get<double>(), 0.0);
  const double elapsed = j["elapsed_s"].get<double>();
  EXPECT_NEAR(j["output_tokens_per_s"].get<double>() * elapsed, 8 * 8, 1e-6 * 64 + 1e-3);
  EXPECT_NEAR(j["total_tokens_per_s"].get<double>() * elapsed, 8 * (16 + 8), 1e-3);
}

// The replay proposer knows tg's answer: every draft is accepted, and each verify step of
// 1 + 4 tokens yields 5.
TEST(BenchCli, LatencyWithReplayDraftsAcceptsEveryDraftAndReportsIt) {
  const std::string path = test::temp_path("bench-spec-tiny.gguf");
  ASSERT_EQ(run_cli("make-model --preset tiny --out " + path).code, 0);
  auto r = run_cli("bench latency --model " + path +
                   " -p 0 -n 16 -r 2 --json --speculative-config "
                   "'{\"method\": \"replay\", \"num_speculative_tokens\": 4}'");
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_GT(j["tg_tokens_per_s"].get<double>(), 0.0);
  // Per rep: the first token comes from the prefill, 15 more from three verify steps of 5, and
  // the last from a plain step: a draft there would pass max_tokens (17 = -n 16 + 1).
  EXPECT_EQ(j["spec_num_drafts"].get<int>(), 2 * 3);
  EXPECT_EQ(j["spec_num_draft_tokens"].get<int>(), 2 * 3 * 4);
  EXPECT_EQ(j["spec_acceptance_rate"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["spec_mean_acceptance_length"].get<double>(), 5.0);
  r = run_cli("bench throughput --model " + path +
              " --num-prompts 4 --input-len 16 --output-len 8 --speculative-config "
              "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("speculative decoding:"), std::string::npos) << r.out;
}

// -d as llama-bench's: pp runs after 64 tokens of context served from the prefix cache (four
// blocks of 16 per repetition), tg after 64 tokens prefilled untimed.
TEST(BenchCli, LatencyAtADepthServesTheContextFromThePrefixCache) {
  const std::string model = test::model_path("stories260K/stories260K.gguf");
  auto r = run_cli("bench latency --model " + model + " -p 16 -n 8 -d 64 -r 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["depth"], 64);
  EXPECT_EQ(j["prefix_cache_hit_tokens"], 3 * 64);
  EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0.0);
  EXPECT_GT(j["tg_tokens_per_s"].get<double>(), 0.0);
  r = run_cli("bench latency --model " + model + " -p 16 -n 8 -d 64 -r 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| pp16 @ d64 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tg8 @ d64 "), std::string::npos) << r.out;
  r = run_cli("bench latency --model " + model + " -p 16 -n 8 -d 64 --no-prefix-caching");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("-d with pp needs prefix caching"), std::string::npos) << r.err;
}

// Without --max-model-len the bench sizes the context to its test, not to the model's own
// (2048 here): a pool of two usable blocks (32 tokens) runs a 16 + 8 test, and `serve` or any
// other engine user that gave no length gets what fits, with a warning naming the numbers.
TEST(BenchCli, WithoutMaxModelLenTheContextIsSizedToTheTest) {
  const std::string model = test::model_path("stories260K/stories260K.gguf");
  auto r = run_cli("bench latency --model " + model + " -p 16 -n 8 -r 1 --num-blocks 3 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("max_model_len=21 "), std::string::npos) << r.err;
  r = run_cli("bench throughput --model " + model +
              " --num-prompts 4 --input-len 16 --output-len 8 --num-blocks 9 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("max_model_len=24 "), std::string::npos) << r.err;
  // A length that was asked for and cannot fit is still an error, with the numbers.
  r = run_cli("bench latency --model " + model +
              " -p 16 -n 8 -r 1 --num-blocks 3 "
              "--max-model-len 512");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("2 usable blocks but one 512-token request needs 32"), std::string::npos)
      << r.err;
  r = run_cli("generate --model " + model + " --prompt Once --max-tokens 4 --num-blocks 5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("the model's context of 2048 tokens does not fit the KV cache (4 blocks of "
                       "16 tokens): max_model_len lowered to 64"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pagedllm

namespace pagedllm {
namespace {

// --structured puts every request under the schema; a schema that does not compile stops the
// bench before it starts, with one line.
TEST(BenchCli, ThroughputUnderAJsonSchemaRunsAndABadSchemaIsOneLine) {
  const std::string model = test::model_path("stories260K/stories260K.gguf");
  const std::string schema = test::temp_path("bench-schema.json");
  std::ofstream(schema) << R"({"type": "array", "items": {"type": "integer"}})";
  auto r = run_cli("bench throughput --model " + model +
                   " --num-prompts 4 --input-len 16 --output-len 12 --json --structured " + schema);
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["structured"], schema);
  EXPECT_NEAR(j["output_tokens_per_s"].get<double>() * j["elapsed_s"].get<double>(), 4 * 12, 1e-3);
  std::ofstream(schema) << R"({"type": "array", "items": {"type": "integr"}})";
  r = run_cli("bench throughput --model " + model +
              " --num-prompts 4 --input-len 16 --output-len 12 --structured " + schema);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("integr"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pagedllm
