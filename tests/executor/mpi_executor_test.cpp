// Tensor parallelism end to end: `mpirun -np N pagedllm generate --tensor-parallel-size N` on one
// machine gives the single process's greedy tokens, and its logprobs within 1e-4 (the ranks add
// the row-parallel partial sums in another order), under batching, chunked prefill, preemption
// and prefix caching; and a job whose ranks disagree stops with one message.
#include "executor/mpi_executor.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_runner.h"

namespace pagedllm::test {
namespace {

const std::string kMpirun = "timeout 120 mpirun --allow-run-as-root --oversubscribe";

// `command` through the shell; stdout and stderr apart. In sanitizer builds LeakSanitizer
// leaves Open MPI's own allocations alone (openmpi.lsan.supp): full stacks, and plugins kept
// loaded, so that the suppressions can see which library allocated.
CliResult run_shell(const std::string& command) {
  static int calls = 0;
  const std::string err_path = temp_path("mpi_stderr." + std::to_string(calls++) + ".txt");
  const std::string env = "export LSAN_OPTIONS=suppressions=" PAGEDLLM_SOURCE_DIR
                          "/tests/executor/openmpi.lsan.supp:fast_unwind_on_malloc=0 "
                          "OMPI_MCA_mca_base_component_disable_dlclose=1; ";
  FILE* pipe = popen((env + command + " 2>" + err_path).c_str(), "r");
  CliResult r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  return r;
}

void skip_without_mpi() {
  if (!distributed::built_with_mpi()) GTEST_SKIP() << "built without MPI (libopenmpi-dev)";
}

// Six prompts, two pairs sharing a long prefix (prefix caching), run together (batching) with
// a 16-token step budget (chunked prefill) in a pool too small for all (preemption).
std::string prompts_file() {
  std::ostringstream os;
  const std::vector<std::vector<int>> prompts = {
      {1, 43, 47, 61, 78, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41},
      {1, 43, 47, 61, 78, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 99},
      {1, 20, 30, 40},
      {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26},
      {1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 70},
      {1, 2}};
  for (const auto& p : prompts) os << nlohmann::json{{"prompt_token_ids", p}}.dump() << "\n";
  return write_temp("tp-prompts.jsonl", os.str());
}

const std::string kGenerateFlags =
    " --temperature 0 --ignore-eos --max-tokens 40 --logprobs 3 --json --block-size 4"
    " --max-model-len 96 --max-num-batched-tokens 16 --max-num-seqs 4 --num-blocks 48"
    " --threads 1";

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  return lines;
}

// Rank k of a step's top logprobs is told apart from its neighbours by more than tolerance
// (the last one listed has an unknown neighbour below it).
bool stands_apart(const nlohmann::json& top, size_t k, double tolerance) {
  const auto at = [&](size_t i) { return top[i]["logprob"].get<double>(); };
  return (k == 0 || at(k - 1) - at(k) > tolerance) && k + 1 < top.size() &&
         at(k) - at(k + 1) > tolerance;
}

// near_ties: the model's sums differ in their last bits between the ranks and one process
// (q8_0 activations, bf16-rounded queries), so two tokens whose logprobs lie within tolerance
// may trade places. Greedy decoding then parts at such a near tie of one process's top two,
// and the rest of that prompt is not compared; at least 4 of the 6 prompts must agree whole.
void expect_same_answers(const CliResult& tp, const CliResult& one, double tolerance,
                         bool near_ties = false) {
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(tp.code, 0) << tp.err;
  const auto want = json_lines(one.out), got = json_lines(tp.out);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(want.size(), 6u);
  int whole = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i]["logprobs"].size(), 40u);
    ASSERT_EQ(want[i]["token_ids"].size(), 40u);
    bool parted = false;
    for (size_t t = 0; t < want[i]["logprobs"].size() && !parted; ++t) {
      const auto& w = want[i]["logprobs"][t];
      const auto& g = got[i]["logprobs"][t];
      const auto& top = w["top_logprobs"];
      if (near_ties && got[i]["token_ids"][t] != want[i]["token_ids"][t]) {
        ASSERT_GE(top.size(), 2u);
        EXPECT_LE(top[0]["logprob"].get<double>() - top[1]["logprob"].get<double>(), tolerance)
            << "prompt " << i << " parted at step " << t << " without a near tie";
        parted = true;
      }
      EXPECT_NEAR(g["logprob"].get<double>(), w["logprob"].get<double>(), tolerance);
      ASSERT_EQ(g["top_logprobs"].size(), top.size());
      for (size_t k = 0; k < top.size(); ++k) {
        if (!near_ties || stands_apart(top, k, tolerance)) {
          EXPECT_EQ(g["top_logprobs"][k]["token_id"], top[k]["token_id"])
              << "prompt " << i << " step " << t;
        }
        EXPECT_NEAR(g["top_logprobs"][k]["logprob"].get<double>(), top[k]["logprob"].get<double>(),
                    tolerance);
      }
    }
    if (!parted) {
      EXPECT_EQ(got[i]["token_ids"], want[i]["token_ids"]) << "prompt " << i;
      ++whole;
    }
  }
  EXPECT_GE(whole, near_ties ? 4 : 6);
}

void expect_tp_matches_one_process(const std::string& model, int ranks, double tolerance = 1e-4,
                                   bool near_ties = false) {
  const std::string args =
      "generate --model " + model + " --prompts-file " + prompts_file() + kGenerateFlags;
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  const CliResult tp = run_shell(kMpirun + " -np " + std::to_string(ranks) + " " + PAGEDLLM_BINARY +
                                 " " + args + " --tensor-parallel-size " + std::to_string(ranks));
  expect_same_answers(tp, one, tolerance, near_ties);
  EXPECT_NE(tp.err.find("tensor_parallel=0/" + std::to_string(ranks)), std::string::npos) << tp.err;
}

struct SharedModel {
  std::string name, flags;
};

class TensorParallelSharedModel : public ::testing::TestWithParam<SharedModel> {};

TEST_P(TensorParallelSharedModel, TwoRanksGiveTheSingleProcessTokensAndLogprobs) {
  skip_without_mpi();
  expect_tp_matches_one_process(GetParam().flags, 2);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TensorParallelSharedModel,
    ::testing::Values(
        SharedModel{"stories260K", model_path("stories260K/stories260K.gguf")},
        SharedModel{"babyllama", model_path("babyllama/model5000.bin") + " --tokenizer " +
                                     model_path("babyllama/tok105.bin")},
        SharedModel{"aidreams260K", model_path("aidreams260K/aidreams260K.bin") + " --tokenizer " +
                                        model_path("aidreams260K/tok512.bin")}),
    [](const auto& info) { return info.param.name; });

std::string make_tiny_tp(const std::string& dtype) {
  const std::string path = temp_path("tiny-tp-" + dtype + ".gguf");
  const CliResult made = run_shell(std::string(PAGEDLLM_BINARY) + " make-model --preset tiny-tp " +
                                   "--dtype " + dtype + " --out " + path);
  EXPECT_EQ(made.code, 0) << made.err;
  return path;
}

TEST(TensorParallel, TwoAndFourRanksOfAPresetWithEightHeadsAndFourKvHeads) {
  skip_without_mpi();
  const std::string path = make_tiny_tp("f32");
  expect_tp_matches_one_process(path, 2);
  expect_tp_matches_one_process(path, 4);
}

// Q8_0 shards split on block boundaries. The activations are quantized to int8 too, and the
// bf16 cache's attention rounds the queries to bf16 (as llama.cpp's does), so a last-bit
// difference of the summed hidden state can move one code or one rounding: logprobs agree to
// 1e-2, greedy tokens up to a near tie (this random-weight model's logprobs lie within a few
// thousandths of each other).
TEST(TensorParallel, TwoAndFourRanksOfAQ8Model) {
  skip_without_mpi();
  const std::string path = make_tiny_tp("q8_0");
  expect_tp_matches_one_process(path, 2, 1e-2, true);
  expect_tp_matches_one_process(path, 4, 1e-2, true);
}

TEST(TensorParallel, ARankWithAnotherModelStopsTheJobWithOneMessage) {
  skip_without_mpi();
  const std::string common = " --max-tokens 4 --threads 1 --tensor-parallel-size 2";
  const CliResult r =
      run_shell(kMpirun + " -np 1 " + PAGEDLLM_BINARY + " generate --model " +
                model_path("stories260K/stories260K.gguf") + common + " : -np 1 " +
                PAGEDLLM_BINARY + " generate --model " + model_path("stories260K/stories260K.bin") +
                " --tokenizer " + model_path("stories260K/tok512.bin") + common);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 124) << "the job hung";
  const std::string message = "rank 1 loaded another model (1056540 bytes";
  const size_t at = r.err.find(message);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(message, at + 1), std::string::npos) << "said more than once:\n" << r.err;
  EXPECT_EQ(r.err.find("pagedllm: error:", r.err.find("pagedllm: error:") + 1), std::string::npos)
      << r.err;
}

// Only rank 0 samples, so only it holds grammar matchers; the other ranks follow its tokens.
TEST(TensorParallel, ConstrainedOutputIsTheSingleProcessOne) {
  skip_without_mpi();
  const std::string args = "generate --model " + model_path("stories260K/stories260K.gguf") +
                           " --prompts-file " + prompts_file() +
                           " --temperature 0 --max-tokens 40 --json --threads 1 --regex "
                           "'[a-z ]{1,30}[.!]'";
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  const CliResult tp =
      run_shell(kMpirun + " -np 2 " + PAGEDLLM_BINARY + " " + args + " --tensor-parallel-size 2");
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(tp.code, 0) << tp.err;
  const auto want = json_lines(one.out), got = json_lines(tp.out);
  ASSERT_EQ(got.size(), 6u);
  ASSERT_EQ(want.size(), 6u);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i]["token_ids"], want[i]["token_ids"]) << "prompt " << i;
    const std::string text = want[i]["text"];
    EXPECT_TRUE(std::regex_match(text, std::regex("[a-z ]{1,30}[.!]"))) << text;
  }
}

// Rank 0 samples and proposes; the drafts reach the other ranks in the step message, so
// n-gram and draft-model speculation give the single-process greedy tokens. The draft model is
// loaded on rank 0 only.
TEST(TensorParallel, SpeculationGivesTheSingleProcessTokens) {
  skip_without_mpi();
  const std::string model = model_path("stories260K/stories260K.gguf");
  const std::string args =
      "generate --model " + model + " --prompts-file " + prompts_file() + kGenerateFlags;
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  ASSERT_EQ(one.code, 0) << one.err;
  const auto want = json_lines(one.out);
  ASSERT_EQ(want.size(), 6u);
  for (const std::string& config :
       {std::string(R"({"method": "ngram", "num_speculative_tokens": 4})"),
        R"({"method": "draft_model", "model": ")" + model + R"(", "num_speculative_tokens": 3})"}) {
    SCOPED_TRACE(config);
    const CliResult tp =
        run_shell(kMpirun + " -np 2 " + PAGEDLLM_BINARY + " " + args +
                  " --tensor-parallel-size 2 --speculative-config '" + config + "'");
    ASSERT_EQ(tp.code, 0) << tp.err;
    const auto got = json_lines(tp.out);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i]["token_ids"], want[i]["token_ids"]) << "prompt " << i;
    }
    EXPECT_NE(tp.err.find(" accepted ("), std::string::npos) << tp.err;
    size_t draft_loads = 0;
    for (size_t at = tp.err.find("[spec_decode] draft model"); at != std::string::npos;
         at = tp.err.find("[spec_decode] draft model", at + 1)) {
      ++draft_loads;
    }
    EXPECT_EQ(draft_loads, config.find("draft_model") != std::string::npos ? 1u : 0u) << tp.err;
  }
}

// Every rank encodes the step's images (the step message carries their pixels) and gathers the
// same embedding rows for its shard.
TEST(TensorParallel, AnImageRequestGivesTheSingleProcessTokens) {
  skip_without_mpi();
  const std::string dir = temp_path("tp-tiny-qwen2-vl"), png = temp_path("tp-image.png");
  const CliResult made =
      run_shell(std::string(PAGEDLLM_BINARY) +
                " make-model --preset tiny-qwen2-vl --format safetensors --out " + dir);
  ASSERT_EQ(made.code, 0) << made.err;
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import numpy as np; from PIL import Image; "
                         "Image.fromarray(np.random.RandomState(2).randint(0, 256, (90, 70, 3), "
                         "dtype=np.uint8)).save('" +
                         png + "')\"")
                            .c_str()),
            0);
  const std::string args = "generate --model " + dir + " --image " + png + " --image " + png +
                           " --prompt 'Compare them.' --temperature 0 --max-tokens 12 --logprobs 0"
                           " --max-num-batched-tokens 16 --max-num-seqs 4 --json --threads 1";
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  const CliResult tp =
      run_shell(kMpirun + " -np 2 " + PAGEDLLM_BINARY + " " + args + " --tensor-parallel-size 2");
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(tp.code, 0) << tp.err;
  const auto want = json_lines(one.out), got = json_lines(tp.out);
  ASSERT_EQ(want.size(), 1u) << one.out;
  ASSERT_EQ(got.size(), 1u) << tp.out;
  EXPECT_EQ(got[0]["token_ids"], want[0]["token_ids"]);
  EXPECT_EQ(got[0]["prompt_token_ids"], want[0]["prompt_token_ids"]);
}

TEST(TensorParallel, AFlagThatDoesNotMatchTheJobSizeIsRefused) {
  const std::string model = model_path("stories260K/stories260K.gguf");
  const CliResult alone = run_shell(std::string(PAGEDLLM_BINARY) + " generate --model " + model +
                                    " --tensor-parallel-size 2");
  EXPECT_EQ(alone.code, 1);
  EXPECT_NE(alone.err.find("--tensor-parallel-size 2 does not match the 1 process(es) of this "
                           "job: start one process per rank (mpirun -np 2"),
            std::string::npos)
      << alone.err;
  skip_without_mpi();
  const CliResult two =
      run_shell(kMpirun + " -np 2 " + PAGEDLLM_BINARY + " generate --model " + model);
  EXPECT_NE(two.code, 0);
  EXPECT_NE(two.err.find("--tensor-parallel-size 1 does not match the 2 process(es)"),
            std::string::npos)
      << two.err;
}

// What tp_fault.sh saw: "key: value" lines, then the job's stderr.
std::string fault_value(const std::string& report, const std::string& key) {
  const size_t at = report.find(key + ": ");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 2;
  return report.substr(begin, report.find('\n', begin) - begin);
}

// env: NP and FAULT_RANK for tp_fault.sh ("NP=4 FAULT_RANK=2"), or empty.
CliResult run_fault(const std::string& mode, const std::string& mpirun_flags = "",
                    const std::string& env = "") {
  std::string label = "fault-" + mode + mpirun_flags + env;
  std::replace_if(
      label.begin(), label.end(), [](char c) { return c == ' ' || c == '='; }, '-');
  return run_shell(env + " timeout 120 bash " PAGEDLLM_SOURCE_DIR "/tests/executor/tp_fault.sh " +
                   std::string(PAGEDLLM_BINARY) + " " + model_path("stories260K/stories260K.gguf") +
                   " " + mode + " " + temp_path(label) + " " + mpirun_flags);
}

// When a rank dies, mpirun's launcher sends SIGTERM to the others and SIGKILL a second later.
// Rank 0 takes the SIGTERM as a shutdown that gives each collective 0.3 s: the one that the dead
// rank never joins fails in time, so the stream in flight ends with a 503 error event and
// [DONE], the request after it gets 503, rank 0 names rank 1, and the job ends non-zero.
TEST(TensorParallelFaults, ARankKilledMidStreamIsAnsweredWith503AndEndsTheJobNonZero) {
  skip_without_mpi();
  const CliResult r = run_fault("kill");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(fault_value(r.out, "started"), "yes") << r.out;
  EXPECT_EQ(fault_value(r.out, "ended"), "yes") << r.out;
  EXPECT_NE(fault_value(r.out, "exit"), "0") << r.out;
  EXPECT_LE(std::stoi(fault_value(r.out, "seconds")), 20) << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_error"), "\"code\":503") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_done"), "1") << "the stream ends with [DONE]";
  // The request 0.2 s after the kill gets 503, or no connection where the launcher's SIGKILL
  // already ended the server (000): never tokens.
  const std::string after = fault_value(r.out, "after_code");
  EXPECT_TRUE(after == "503" || after == "000") << r.out;
  EXPECT_NE(r.out.find("rank 1 did not answer: it hangs or died"), std::string::npos) << r.out;
}

// A frozen rank never answers: rank 0's step timeout (3 s here) fails the stream in flight and
// the request that waited with 503 (OpenAI-style error), and the job ends non-zero.
TEST(TensorParallelFaults, AHungRankIsAnsweredWith503AndTheJobEnds) {
  skip_without_mpi();
  const CliResult r = run_fault("stop");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(fault_value(r.out, "ended"), "yes") << r.out;
  EXPECT_NE(fault_value(r.out, "exit"), "0") << r.out;
  EXPECT_LE(std::stoi(fault_value(r.out, "seconds")), 20) << r.out;
  EXPECT_NE(r.out.find("did not complete within 3 s: rank 1 did not answer: it hangs or died"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(fault_value(r.out, "after_code"), "503") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_error"), "\"code\":503") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_done"), "1") << "the stream ends with [DONE]";
}

// Of four ranks, rank 2 freezes: rank 0 asks the others where they wait, and its error names
// rank 2 alone as the one that did not answer. Ranks 1 and 3 answered: they wait in the same
// collective, or rank 3 in an earlier one when its part of the step message was to come through
// rank 2 (a broadcast tree).
TEST(TensorParallelFaults, RankZeroNamesTheRankThatHangs) {
  skip_without_mpi();
  const CliResult r = run_fault("stop", "", "NP=4 FAULT_RANK=2");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(fault_value(r.out, "ended"), "yes") << r.out;
  EXPECT_EQ(fault_value(r.out, "after_code"), "503") << r.out;
  const size_t at =
      r.out.find("did not complete within 3 s: rank 2 did not answer: it hangs or died; ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string rest = r.out.substr(at, r.out.find('\n', at) - at);
  const bool together = rest.find("ranks 1, 3 wait in this one") != std::string::npos;
  const bool three_behind = rest.find("rank 3 still wait") != std::string::npos &&
                            rest.find("rank 1 wait in this one") != std::string::npos;
  EXPECT_TRUE(together || three_behind) << rest;
}

// A real two-host run on one machine: one rank in each of two network namespaces joined by a
// veth pair, MPI over TCP between them (tp_netns.sh); skipped where namespaces cannot be made.
TEST(TensorParallelNetns, TwoRanksInTwoNamespacesOverTcpGiveTheSingleProcessAnswers) {
  skip_without_mpi();
  const std::string args = "generate --model " + model_path("stories260K/stories260K.gguf") +
                           " --prompts-file " + prompts_file() + kGenerateFlags;
  const CliResult tp =
      run_shell("timeout 120 bash " PAGEDLLM_SOURCE_DIR "/tests/executor/tp_netns.sh " +
                temp_path("netns") + " " + PAGEDLLM_BINARY + " " + args);
  if (tp.code == 77) GTEST_SKIP() << "no network namespace on this machine: " << tp.err;
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  expect_same_answers(tp, one, 1e-4);
  EXPECT_NE(tp.err.find("launched on 10.77.0.2 in pagedllm-b-"), std::string::npos)
      << "rank 1 did not start in the second namespace:\n"
      << tp.err;
}

// The same across a link of 1 ms each way (tc netem where the kernel has it, else link_emulator
// between two TUN devices): latency changes when each collective completes, not what it sums.
TEST(TensorParallelNetns, OverALinkOfOneMillisecondEachWayTheAnswersStayTheSame) {
  skip_without_mpi();
  const std::string args = "generate --model " + model_path("stories260K/stories260K.gguf") +
                           " --prompts-file " + prompts_file() + kGenerateFlags;
  const CliResult tp =
      run_shell("LINK_DELAY=1ms LINK_EMULATOR=" PAGEDLLM_LINK_EMULATOR
                " timeout 120 bash " PAGEDLLM_SOURCE_DIR "/tests/executor/tp_netns.sh " +
                temp_path("netns-delay") + " " + PAGEDLLM_BINARY + " " + args);
  if (tp.code == 77) GTEST_SKIP() << "no network namespace on this machine: " << tp.err;
  const CliResult one = run_shell(std::string(PAGEDLLM_BINARY) + " " + args);
  expect_same_answers(tp, one, 1e-4);
}

// Every "NAME=value" line of OUT, in order.
std::vector<double> values_named(const std::string& out, const std::string& name) {
  std::vector<double> values;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(name + "=", 0) == 0) values.push_back(std::stod(line.substr(name.size() + 1)));
  return values;
}

CliResult check_link(const std::string& delay_us, const std::string& rate_mbit) {
  return run_shell("timeout 60 bash " PAGEDLLM_SOURCE_DIR
                   "/tests/executor/link_emulator_check.sh " PAGEDLLM_LINK_EMULATOR " " +
                   temp_path("link") + " " + delay_us + " " + rate_mbit);
}

// link_emulator, the stand-in for sch_netem: a datagram's round trip takes at least its two
// one-way delays, and 2 MB at 40 Mbit/s at least 0.4 s; without delay and rate both are quick,
// so that the wait is the emulator's doing.
TEST(LinkEmulator, DelaysEachDirectionAndPacesToItsRate) {
  const CliResult shaped = check_link("20000", "40");
  if (shaped.code == 77) GTEST_SKIP() << shaped.err;
  ASSERT_EQ(shaped.code, 0) << shaped.out << shaped.err;
  const std::vector<double> rtts = values_named(shaped.out, "rtt_ms");
  ASSERT_EQ(rtts.size(), 5u) << shaped.out;
  for (double rtt : rtts) {
    EXPECT_GE(rtt, 40.0);
    EXPECT_LT(rtt, 1000.0);
  }
  const std::vector<double> transfer = values_named(shaped.out, "transfer_s");
  ASSERT_EQ(transfer.size(), 1u) << shaped.out;
  EXPECT_GE(transfer[0], 0.4);
  EXPECT_LT(transfer[0], 20.0);

  const CliResult bare = check_link("0", "0");
  ASSERT_EQ(bare.code, 0) << bare.out << bare.err;
  std::vector<double> bare_rtts = values_named(bare.out, "rtt_ms");
  ASSERT_EQ(bare_rtts.size(), 5u) << bare.out;
  std::sort(bare_rtts.begin(), bare_rtts.end());
  EXPECT_LT(bare_rtts[2], 20.0);
  EXPECT_LT(values_named(bare.out, "transfer_s").at(0), 0.4);
}

// With `mpirun --enable-recovery` the job outlives a dead rank long enough for rank 0's step
// timeout: the stream in flight and the waiting request get 503, rank 0 says why and ends the
// job. (Open MPI 4.1's mpirun then exits 0 whatever the ranks did: docs/SCALE-OUT.md.)
TEST(TensorParallelFaults, WithEnableRecoveryAKilledRankIsAnsweredWith503) {
  skip_without_mpi();
  const CliResult r = run_fault("kill", "--enable-recovery");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(fault_value(r.out, "ended"), "yes") << r.out;
  EXPECT_NE(r.out.find("pagedllm: error: the engine failed: tensor-parallel step failed"),
            std::string::npos)
      << r.out;
  EXPECT_LE(std::stoi(fault_value(r.out, "seconds")), 20) << r.out;
  EXPECT_EQ(fault_value(r.out, "after_code"), "503") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_error"), "\"code\":503") << r.out;
}

// SIGTERM to rank 0 drains as one process does: the stream in flight ends normally, a new
// request is refused with 503, then rank 0 tells the other ranks to stop and all exit 0.
TEST(TensorParallelFaults, SigtermToRankZeroDrainsThenStopsEveryRank) {
  skip_without_mpi();
  const CliResult r = run_fault("term");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(fault_value(r.out, "ended"), "yes") << r.out;
  EXPECT_EQ(fault_value(r.out, "exit"), "0") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_done"), "1") << r.out;
  EXPECT_EQ(fault_value(r.out, "stream_error"), "") << r.out;
  EXPECT_EQ(fault_value(r.out, "after_code"), "503") << r.out;
  EXPECT_NE(r.out.find("received SIGTERM"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace pagedllm::test
