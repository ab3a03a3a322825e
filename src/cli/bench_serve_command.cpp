#include "cli/bench_serve_command.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/subcommand.h"
#include "util/latency_stats.h"
#include "util/progress_bar.h"

namespace pagedllm::cli {

namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct BenchServeOptions {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = "/v1/completions";
  std::string model;  // empty: the first of /v1/models
  std::string api_key;
  int num_prompts = 1000;
  double request_rate = std::numeric_limits<double>::infinity();
  int max_concurrency = 0;   // 0: no limit
  std::string dataset_path;  // JSONL; empty: random token prompts
  int random_input_len = 1024;
  int random_output_len = 128;
  double random_range_ratio = 0.0;
  int random_vocab_size = 0;  // 0: the server's, found through /detokenize
  bool ignore_eos = false;
  uint64_t seed = 0;
  std::vector<std::string> goodput;
  std::string save_result;
};

struct BenchRequest {
  json prompt;        // a string or token ids
  int input_len = 0;  // tokens, when known up front (random prompts)
  int output_len = 0;
};

struct RequestResult {
  bool success = false;
  std::string error;
  double ttft = 0, latency = 0;
  std::vector<double> itl;  // gaps between successive content chunks
  int prompt_tokens = 0, output_tokens = 0;
};

std::vector<BenchRequest> random_requests(const BenchServeOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto length = [&](int mean) {
    const int lo = std::max(1, static_cast<int>(mean * (1.0 - o.random_range_ratio)));
    const int hi = std::max(lo, static_cast<int>(mean * (1.0 + o.random_range_ratio)));
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  // Ids above the first few keep clear of BOS/EOS and other special tokens.
  const int first = std::min(10, o.random_vocab_size - 1);
  std::uniform_int_distribution<int> token(first, o.random_vocab_size - 1);
  std::vector<BenchRequest> requests;
  for (int i = 0; i < o.num_prompts; ++i) {
    BenchRequest r;
    r.input_len = length(o.random_input_len);
    r.output_len = length(o.random_output_len);
    r.prompt = json::array();
    for (int t = 0; t < r.input_len; ++t) r.prompt.push_back(token(rng));
    requests.push_back(std::move(r));
  }
  return requests;
}

// JSONL lines of {"prompt": "..." or [ids], "output_len" or "max_tokens": N}, cycled.
std::vector<BenchRequest> file_requests(const BenchServeOptions& o) {
  std::ifstream in(o.dataset_path);
  if (!in) throw std::runtime_error("cannot open dataset '" + o.dataset_path + "'");
  std::vector<BenchRequest> lines;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("prompt"))
      throw std::runtime_error(o.dataset_path + ":" + std::to_string(n) +
                               ": needs a JSON object with \"prompt\"");
    BenchRequest r;
    r.prompt = j["prompt"];
    r.output_len = j.value("output_len", j.value("max_tokens", o.random_output_len));
    lines.push_back(std::move(r));
  }
  if (lines.empty()) throw std::runtime_error("dataset '" + o.dataset_path + "' has no prompts");
  std::vector<BenchRequest> requests;
  for (int i = 0; i < o.num_prompts; ++i) requests.push_back(lines[i % lines.size()]);
  return requests;
}

// Sends one streaming request and times its chunks.
RequestResult send_request(const BenchServeOptions& o, const BenchRequest& req) {
  RequestResult r;
  httplib::Client client(o.base_url);
  client.set_read_timeout(600);
  client.set_connection_timeout(30);
  json body = {{"model", o.model},
               {"max_tokens", req.output_len},
               {"temperature", 0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.ignore_eos) body["ignore_eos"] = true;
  if (o.endpoint.find("chat") != std::string::npos) {
    body["messages"] = json::array({{{"role", "user"}, {"content", req.prompt}}});
  } else {
    body["prompt"] = req.prompt;
  }
  httplib::Request http;
  http.method = "POST";
  http.path = o.endpoint;
  http.body = body.dump();
  http.set_header("Content-Type", "application/json");
  if (!o.api_key.empty()) http.set_header("Authorization", "Bearer " + o.api_key);
  const auto start = Clock::now();
  auto last = start;
  bool first = true;
  std::string buffer;
  http.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0 || event == "data: [DONE]") continue;
      const json j = json::parse(event.substr(6), nullptr, false);
      if (j.is_discarded()) continue;
      if (j.contains("error")) r.error = j["error"].value("message", "error event");
      if (j.contains("usage") && j["usage"].is_object()) {
        r.prompt_tokens = j["usage"].value("prompt_tokens", 0);
        r.output_tokens = j["usage"].value("completion_tokens", 0);
      }
      if (!j.contains("choices") || j["choices"].empty()) continue;
      const json& c = j["choices"][0];
      const bool has_text =
          (c.contains("text") && !c["text"].get<std::string>().empty()) ||
          (c.contains("delta") && c["delta"].contains("content") &&
           c["delta"]["content"].is_string() && !c["delta"]["content"].get<std::string>().empty());
      if (!has_text) continue;
      const auto now = Clock::now();
      if (first) {
        r.ttft = std::chrono::duration<double>(now - start).count();
        first = false;
      } else {
        r.itl.push_back(std::chrono::duration<double>(now - last).count());
      }
      last = now;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client.send(http, res, error);
  r.latency = std::chrono::duration<double>(Clock::now() - start).count();
  if (!sent) {
    r.error = httplib::to_string(error);
  } else if (res.status != 200) {
    // The server's own words when it sent an OpenAI-style error, else the start of the body
    // (which the stream reader received: it has no SSE events in it).
    const std::string& text = res.body.empty() ? buffer : res.body;
    const json body = json::parse(text, nullptr, false);
    const bool openai_error = body.is_object() && body.contains("error") &&
                              body["error"].is_object() && body["error"].contains("message") &&
                              body["error"]["message"].is_string();
    r.error = "HTTP " + std::to_string(res.status) + ": " +
              (openai_error ? body["error"]["message"].get<std::string>() : text.substr(0, 200));
  }
  if (r.prompt_tokens == 0) r.prompt_tokens = req.input_len;
  r.success = r.error.empty() && !first;
  return r;
}

// "ttft:500" -> {"ttft", 0.5 s}
std::map<std::string, double> parse_goodput(const std::vector<std::string>& specs) {
  std::map<std::string, double> slo;
  for (const std::string& s : specs) {
    const size_t colon = s.find(':');
    const std::string name = s.substr(0, colon);
    if (colon == std::string::npos || (name != "ttft" && name != "tpot" && name != "e2el"))
      throw std::runtime_error("--goodput takes ttft:MS, tpot:MS or e2el:MS, got '" + s + "'");
    slo[name] = std::stod(s.substr(colon + 1)) / 1000.0;
  }
  return slo;
}

// The vocabulary size of the server's model: the first id /detokenize refuses, found by
// bisection (vLLM and pagedllm both answer 400 for an id outside the vocabulary).
int discover_vocab_size(const BenchServeOptions& o) {
  httplib::Client client(o.base_url);
  httplib::Headers headers;
  if (!o.api_key.empty()) headers.emplace("Authorization", "Bearer " + o.api_key);
  auto accepted = [&](int id) {
    const json body = {{"model", o.model}, {"tokens", {id}}};
    auto res = client.Post("/detokenize", headers, body.dump(), "application/json");
    if (!res) throw std::runtime_error("cannot reach " + o.base_url + "/detokenize");
    return res->status == 200;
  };
  if (!accepted(0)) {
    throw std::runtime_error(o.base_url + "/detokenize does not answer; give --random-vocab-size");
  }
  int lo = 0, hi = 1 << 24;  // lo is accepted, hi is not (no vocabulary is that large)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (accepted(mid) ? lo : hi) = mid;
  }
  return hi;
}

std::string discover_model(const BenchServeOptions& o) {
  httplib::Client client(o.base_url);
  httplib::Headers headers;
  if (!o.api_key.empty()) headers.emplace("Authorization", "Bearer " + o.api_key);
  auto res = client.Get("/v1/models", headers);
  if (!res || res->status != 200)
    throw std::runtime_error("cannot list models at " + o.base_url + "/v1/models");
  const json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || j["data"].empty())
    throw std::runtime_error(o.base_url + "/v1/models lists no model");
  return j["data"][0]["id"].get<std::string>();
}

// Sends all requests with Poisson arrivals (or all at once) under the concurrency limit.
std::vector<RequestResult> run_requests(const BenchServeOptions& o,
                                        const std::vector<BenchRequest>& requests,
                                        double& duration) {
  std::vector<RequestResult> results(requests.size());
  std::mutex mutex;
  std::condition_variable cv;
  int active = 0;
  size_t finished = 0;
  ProgressBar bar("bench serve");
  std::mt19937_64 rng(o.seed + 1);
  std::exponential_distribution<double> gap(std::isinf(o.request_rate) ? 1.0 : o.request_rate);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  auto next_arrival = start;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!std::isinf(o.request_rate)) {
      next_arrival +=
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
      std::this_thread::sleep_until(next_arrival);
    }
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return o.max_concurrency <= 0 || active < o.max_concurrency; });
      ++active;
    }
    threads.emplace_back([&, i] {
      results[i] = send_request(o, requests[i]);
      std::lock_guard lock(mutex);
      --active;
      bar.update(++finished, requests.size());
      cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  duration = std::chrono::duration<double>(Clock::now() - start).count();
  return results;
}

json summary_json(const LatencySummary& s) {
  return {{"mean", s.mean * 1e3},
          {"median", s.median * 1e3},
          {"p90", s.p90 * 1e3},
          {"p99", s.p99 * 1e3}};
}

json report(const BenchServeOptions& o, const std::vector<RequestResult>& results,
            double duration) {
  const auto slo = parse_goodput(o.goodput);
  int completed = 0, good = 0;
  int64_t input_tokens = 0, output_tokens = 0;
  std::vector<double> ttft, tpot, itl, e2el;
  std::map<std::string, int> failures;  // by reason
  for (const RequestResult& r : results) {
    if (!r.success) {
      ++failures[r.error.empty() ? "no content in the response" : r.error];
      continue;
    }
    ++completed;
    input_tokens += r.prompt_tokens;
    output_tokens += r.output_tokens;
    ttft.push_back(r.ttft);
    e2el.push_back(r.latency);
    const double request_tpot =
        r.output_tokens > 1 ? (r.latency - r.ttft) / (r.output_tokens - 1) : 0.0;
    if (r.output_tokens > 1) tpot.push_back(request_tpot);
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    const bool meets = (!slo.count("ttft") || r.ttft <= slo.at("ttft")) &&
                       (!slo.count("tpot") || request_tpot <= slo.at("tpot")) &&
                       (!slo.count("e2el") || r.latency <= slo.at("e2el"));
    good += meets ? 1 : 0;
  }
  json j = {{"base_url", o.base_url},
            {"endpoint", o.endpoint},
            {"model", o.model},
            {"num_prompts", o.num_prompts},
            {"request_rate", std::isinf(o.request_rate) ? json("inf") : json(o.request_rate)},
            {"max_concurrency", o.max_concurrency > 0 ? json(o.max_concurrency) : json(nullptr)},
            {"duration", duration},
            {"completed", completed},
            {"failed", static_cast<int>(results.size()) - completed},
            {"total_input_tokens", input_tokens},
            {"total_output_tokens", output_tokens},
            {"request_throughput", completed / duration},
            {"request_goodput", slo.empty() ? json(nullptr) : json(good / duration)},
            {"output_throughput", output_tokens / duration},
            {"total_token_throughput", (input_tokens + output_tokens) / duration},
            {"ttft_ms", summary_json(summarize(ttft))},
            {"tpot_ms", summary_json(summarize(tpot))},
            {"itl_ms", summary_json(summarize(itl))},
            {"e2el_ms", summary_json(summarize(e2el))},
            {"failures_by_reason", failures}};
  return j;
}

void print_report(const json& j) {
  auto line = [](const char* name, const std::string& value) {
    std::printf("%-40s %s\n", name, value.c_str());
  };
  auto num = [](double v, int digits = 2) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string(buf);
  };
  std::printf("============ Serving Benchmark Result ============\n");
  line("Successful requests:", std::to_string(j["completed"].get<int>()));
  line("Failed requests:", std::to_string(j["failed"].get<int>()));
  line("Benchmark duration (s):", num(j["duration"]));
  line("Total input tokens:", std::to_string(j["total_input_tokens"].get<int64_t>()));
  line("Total generated tokens:", std::to_string(j["total_output_tokens"].get<int64_t>()));
  line("Request throughput (req/s):", num(j["request_throughput"]));
  if (!j["request_goodput"].is_null()) line("Request goodput (req/s):", num(j["request_goodput"]));
  line("Output token throughput (tok/s):", num(j["output_throughput"]));
  line("Total Token throughput (tok/s):", num(j["total_token_throughput"]));
  const std::pair<const char*, const char*> sections[] = {
      {"ttft_ms", "Time to First Token"},
      {"tpot_ms", "Time per Output Token (excl. 1st token)"},
      {"itl_ms", "Inter-token Latency"},
      {"e2el_ms", "End-to-end Latency"}};
  for (const auto& [key, title] : sections) {
    std::printf("%s\n", (std::string("---- ") + title + " ----").c_str());
    const std::string short_name = std::string(key).substr(0, std::string(key).find('_'));
    std::string upper = short_name;
    for (auto& c : upper) c = static_cast<char>(std::toupper(c));
    for (const char* stat : {"mean", "median", "p90", "p99"}) {
      const std::string label = std::string(stat == std::string("mean")     ? "Mean"
                                            : stat == std::string("median") ? "Median"
                                            : stat == std::string("p90")    ? "P90"
                                                                            : "P99") +
                                " " + upper + " (ms):";
      line(label.c_str(), num(j[key][stat]));
    }
  }
  std::printf("==================================================\n");
  for (const auto& [reason, count] : j["failures_by_reason"].items()) {
    std::printf("failed %d: %s\n", count.get<int>(), reason.c_str());
  }
}

int run_bench_serve(BenchServeOptions& o) {
  parse_goodput(o.goodput);  // bad specs fail before any request
  if (o.model.empty()) o.model = discover_model(o);
  if (o.dataset_path.empty() && o.random_vocab_size == 0) {
    o.random_vocab_size = discover_vocab_size(o);
    std::cerr << "bench serve: the server's vocabulary has " << o.random_vocab_size << " tokens\n";
  }
  const auto requests = o.dataset_path.empty() ? random_requests(o) : file_requests(o);
  std::cerr << "bench serve: " << requests.size() << " requests to " << o.base_url << o.endpoint
            << " (model " << o.model << ", rate "
            << (std::isinf(o.request_rate) ? std::string("inf") : std::to_string(o.request_rate))
            << "/s, max concurrency "
            << (o.max_concurrency > 0 ? std::to_string(o.max_concurrency) : "none") << ")\n";
  double duration = 0;
  const auto results = run_requests(o, requests, duration);
  const json j = report(o, results, duration);
  print_report(j);
  if (!o.save_result.empty()) {
    std::ofstream out(o.save_result);
    if (!out) throw std::runtime_error("cannot write '" + o.save_result + "'");
    out << j.dump(2) << "\n";
  }
  return j["failed"].get<int>() == 0 ? 0 : 1;
}

}  // namespace

void add_bench_serve_subcommand(CLI::App* bench, int& exit_code) {
  auto [s, o] = add_subcommand<BenchServeOptions>(
      *bench, "serve",
      "Benchmark a running OpenAI-compatible server (like `vllm bench serve`): streaming "
      "requests with Poisson arrivals; TTFT, TPOT, ITL, throughput and goodput",
      exit_code, run_bench_serve);
  s->add_option("--base-url", o->base_url, "Server address")->capture_default_str();
  s->add_option("--endpoint", o->endpoint, "/v1/completions or /v1/chat/completions")
      ->capture_default_str();
  s->add_option("--model", o->model, "Model name to send; default: the first of /v1/models");
  s->add_option("--api-key", o->api_key, "Sent as 'Authorization: Bearer KEY'");
  s->add_option("--num-prompts", o->num_prompts, "Requests to send")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s->add_option("--request-rate", o->request_rate,
                "Mean requests per second (Poisson arrivals); inf (the default) sends all at once")
      ->check(CLI::Validator(
          [](std::string& v) {
            const double rate = std::strtod(v.c_str(), nullptr);
            return rate > 0 ? std::string() : "must be a positive number or inf";
          },
          "RATE"));
  s->add_option("--max-concurrency", o->max_concurrency, "Most requests in flight; 0: no limit")
      ->check(CLI::NonNegativeNumber);
  s->add_option("--dataset-path", o->dataset_path,
                "JSONL of {\"prompt\": text or ids, \"output_len\": N}; default: random prompts")
      ->check(CLI::ExistingFile);
  s->add_option("--random-input-len", o->random_input_len, "Prompt tokens of random prompts")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s->add_option("--random-output-len", o->random_output_len, "max_tokens of each request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s->add_option("--random-range-ratio", o->random_range_ratio,
                "Lengths drawn uniformly within ±ratio of the means")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  s->add_option("--random-vocab-size", o->random_vocab_size,
                "Random prompt token ids are drawn below this; default: the server's vocabulary "
                "size, found through /detokenize")
      ->check(CLI::Range(11, 1 << 30));
  s->add_flag("--ignore-eos", o->ignore_eos, "Ask for exactly max_tokens per request");
  s->add_option("--seed", o->seed, "Seed of prompts and arrival times")->capture_default_str();
  s->add_option("--goodput", o->goodput,
                "Service-level objectives, e.g. --goodput ttft:500 tpot:50 (milliseconds)");
  s->add_option("--save-result", o->save_result, "Write the results as JSON to this file");
}

}  // namespace pagedllm::cli
