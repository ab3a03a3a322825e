#include "cli/bench_structured_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cli/subcommand.h"
#include "structured/maskbench.h"
#include "tokenizer/load_tokenizer.h"

namespace pagedllm::cli {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
namespace st = structured;

struct StructuredBenchOptions {
  std::string dataset;
  std::string tokenizer;
  bool json_output = false;
  bool show_problems = false;
  int limit = 0;
};

void print_table(const json& r, size_t masks) {
  const json& m = r["mask_us"];
  const json& c = r["compile_us"];
  std::printf("| | pagedllm |\n|---|---|\n");
  std::printf(
      "| mask time per token, mean / p50 / p90 / p99 / p99.9 / max (µs) | %.0f / %.0f / "
      "%.0f / %.0f / %.0f / %.0f |\n",
      m["mean"].get<double>(), m["p50"].get<double>(), m["p90"].get<double>(),
      m["p99"].get<double>(), m["p999"].get<double>(), m["max"].get<double>());
  std::printf("| compile time p50 / p75 / p90 / p99 (µs) | %.0f / %.0f / %.0f / %.0f |\n",
              c["p50"].get<double>(), c["p75"].get<double>(), c["p90"].get<double>(),
              c["p99"].get<double>());
  std::printf("| schemas passing (all tests right) | %d of %d (%.1f %%) |\n",
              r["passing"].get<int>(), r["schemas"].get<int>(),
              100.0 * r["passing"].get<int>() / std::max(1, r["schemas"].get<int>()));
  std::printf("| compile errors / crashes / timeouts | %d / %d / %d |\n",
              r["compile_errors"].get<int>(), r["crashes"].get<int>(), r["timeouts"].get<int>());
  std::printf("| valid instances wrongly rejected | %d of %d |\n", r["valid_rejected"].get<int>(),
              r["valid_instances"].get<int>());
  std::printf("| invalid instances wrongly accepted | %d of %d |\n",
              r["invalid_accepted"].get<int>(), r["invalid_instances"].get<int>());
  std::printf("\n%zu masks timed.\n", masks);
}

int run_bench_structured(StructuredBenchOptions& o) {
  std::unique_ptr<Tokenizer> tokenizer = load_tokenizer_file(o.tokenizer);
  const auto vocab = st::TokenVocabulary::from_tokenizer(*tokenizer);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(o.dataset)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (o.limit > 0 && files.size() > static_cast<size_t>(o.limit)) {
    files.resize(static_cast<size_t>(o.limit));
  }
  st::MaskBenchTally tally;
  for (const auto& path : files) st::run_maskbench_file(path, *tokenizer, vocab, tally);
  if (o.show_problems) {
    for (const std::string& p : tally.problems) std::cerr << p << "\n";
  }
  const size_t masks = tally.mask_us.size();
  const json r = st::maskbench_report(tally);
  if (o.json_output) {
    std::cout << r.dump() << "\n";
  } else {
    print_table(r, masks);
  }
  return 0;
}

}  // namespace

void add_bench_structured_subcommand(CLI::App* bench, int& exit_code) {
  auto [s, o] = add_subcommand<StructuredBenchOptions>(
      *bench, "structured",
      "The MaskBench counterpart: compile each JSON schema of a folder, walk each test "
      "instance's tokens through the grammar's token masks (one thread)",
      exit_code, run_bench_structured);
  s->add_option("--dataset", o->dataset, "Folder of MaskBench JSON files")
      ->required()
      ->check(CLI::ExistingDirectory);
  s->add_option("--tokenizer", o->tokenizer,
                "tokenizer.json, a Hugging Face directory or a GGUF file")
      ->required()
      ->check(CLI::ExistingPath);
  s->add_option("--limit", o->limit, "Only the first N files (by name)")
      ->check(CLI::NonNegativeNumber);
  s->add_flag("--show-problems", o->show_problems,
              "List each compile error, crash, wrongly rejected or accepted instance on stderr");
  s->add_flag("--json", o->json_output,
              "Print one JSON object (schemas, passing, compile_errors, ..., mask_us, compile_us)");
}

}  // namespace pagedllm::cli
