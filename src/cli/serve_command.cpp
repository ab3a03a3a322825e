#include "cli/serve_command.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/engine_flags.h"
#include "cli/subcommand.h"
#include "distributed/communicator.h"
#include "loader/hf_cache.h"
#include "server/async_engine.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/openai_serving.h"
#include "server/reasoning_parser.h"
#include "server/tool_call_parser.h"
#include "util/log.h"

namespace pagedllm::cli {

namespace {

// How long a collective may wait once rank 0 of a tensor-parallel job is shutting down.
constexpr double kShutdownCollectiveSeconds = 0.3;

struct ServeOptions {
  EngineOptions engine;
  server::HttpOptions http;
  std::string served_model_name;
  std::string chat_template;
  int max_waiting_requests = 1024;
  double max_body_mib = 8;
  double shutdown_timeout_s = 5;
  double preprocess_timeout_s = 30;
  double log_stats_interval_s = 5;
  std::string log_level = "info";
  bool no_webui = false;
  std::string tool_call_parser;
  bool enable_auto_tool_choice = false;
  std::string reasoning_parser;
  // Images in chat messages (docs/SERVER.md, "Images").
  std::string allowed_local_media_path;
  std::string limit_mm_per_prompt;
  double image_fetch_timeout_s = 10;
  std::vector<std::string> allowed_media_domains;
};

// The image flags, checked before the model loads.
server::ChatImageOptions chat_image_options(const ServeOptions& o) {
  server::ChatImageOptions images;
  if (!o.limit_mm_per_prompt.empty())
    images.limit_per_prompt = server::parse_limit_mm_per_prompt(o.limit_mm_per_prompt);
  if (!o.allowed_local_media_path.empty()) {
    try {
      images.source.allowed_local_media_path =
          server::canonical_media_directory(o.allowed_local_media_path);
    } catch (const server::ImageSourceError& e) {
      throw std::runtime_error(std::string("--allowed-local-media-path: ") + e.what());
    }
  }
  images.source.timeout_s = o.image_fetch_timeout_s;
  for (std::string domain : o.allowed_media_domains) {
    for (char& c : domain) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    images.source.allowed_domains.push_back(std::move(domain));
  }
  return images;
}

// The parser names exist, and auto tool choice has a parser: checked before the model loads.
void check_parser_flags(const ServeOptions& o) {
  if (o.enable_auto_tool_choice && o.tool_call_parser.empty())
    throw std::runtime_error("--enable-auto-tool-choice needs --tool-call-parser");
  if (!o.tool_call_parser.empty()) server::make_tool_call_parser(o.tool_call_parser, nullptr);
  if (!o.reasoning_parser.empty()) server::make_reasoning_parser(o.reasoning_parser);
}

// SIGINT/SIGTERM are blocked in every thread and taken by sigwait on the main thread, so a
// signal never lands inside the engine or a socket call.
sigset_t shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Set once the orderly shutdown is over: the process is then on its way out by itself (which
// takes a while under AddressSanitizer), and the watchdog must not turn that into a failure.
std::atomic<bool> shutdown_finished{false};

// Once shutdown has begun, the process ends within the grace period plus one second whatever
// is still running (a thread stuck on a slow client, a long tokenization), and a second signal
// ends it at once.
void start_shutdown_watchdog(const sigset_t& signals, double grace_s) {
  std::thread([signals, grace_s] {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(grace_s + 1.0));
    while (true) {
      const auto left = deadline - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) break;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      const timespec limit{static_cast<time_t>(ns / 1000000000),
                           static_cast<long>(ns % 1000000000)};
      siginfo_t info;
      const int sig = sigtimedwait(&signals, &info, &limit);
      // The engine's failure handler signals this process to shut down; during a shutdown
      // (a tensor-parallel peer died, and the launcher's SIGTERM came first) that is not a
      // second signal from outside, and exiting on it would cut the 503s being written.
      if (sig > 0 && info.si_code == SI_USER && info.si_pid == getpid()) continue;
      if (sig > 0) {
        log(LogLevel::kWarning, "server", "second signal: exiting now");
        std::_Exit(128 + sig);
      }
      if (errno != EINTR) break;  // the time is up
    }
    if (shutdown_finished) return;
    log(LogLevel::kWarning, "server",
        "shutdown still unfinished after " + std::to_string(grace_s + 1.0) + " s: exiting now");
    std::_Exit(1);
  }).detach();
}

int run_serve(ServeOptions& o) {
  set_log_level(parse_log_level(o.log_level));
  const sigset_t signals = shutdown_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);     // a client that hangs up must not kill the server
  o.engine.detokenize = false;  // the HTTP threads detokenize
  o.engine.delta_outputs = true;
  if (run_as_tensor_parallel_worker(o.engine)) return 0;

  // Everything that can be checked without the model is checked before it loads: the model
  // path, the chat template and the port.
  if (!std::filesystem::exists(resolve_model_path(o.engine.model))) {
    throw std::runtime_error(o.engine.model + ": no such file or directory");
  }
  if (!o.chat_template.empty()) server::OpenAIServing::load_chat_template_file(o.chat_template);
  check_parser_flags(o);
  const server::ChatImageOptions images = chat_image_options(o);
  const std::string name = o.served_model_name.empty()
                               ? std::filesystem::path(o.engine.model).filename().string()
                               : o.served_model_name;
  server::ServerMetrics metrics(name);
  o.http.max_body_bytes = static_cast<size_t>(o.max_body_mib * (1 << 20));
  o.http.webui = !o.no_webui;
  server::HttpServer http(metrics, o.http);
  const int port = http.bind();

  Engine engine(o.engine);
  log_info("engine", engine.describe());
  // As vLLM warms up before serving: one tiny request pays the first step's one-time costs
  // (workspaces growing, first touches of buffers; 0.25 s for llama-110m), not the first client.
  {
    SamplingParams warm_up;
    warm_up.max_tokens = 1;
    engine.generate(std::vector<std::vector<int32_t>>{{0}}, warm_up);
  }
  server::AsyncEngine async_engine(engine, metrics,
                                   {o.max_waiting_requests, o.log_stats_interval_s});
  // A failed step (a tensor-parallel rank died or hangs) has answered its requests with 503;
  // the server then shuts down as on SIGTERM, and exits non-zero below.
  async_engine.on_engine_failure([](const std::string&) { kill(getpid(), SIGTERM); });
  server::OpenAIServing serving(
      engine, async_engine,
      {name, o.engine.model, o.chat_template, o.preprocess_timeout_s, o.tool_call_parser,
       o.enable_auto_tool_choice, o.reasoning_parser, images});
  http.attach(serving);
  if (!o.tool_call_parser.empty() || !o.reasoning_parser.empty()) {
    log_info("server",
             "tool calls: " +
                 (o.enable_auto_tool_choice ? "auto with the " + o.tool_call_parser + " parser"
                                            : std::string("forced only")) +
                 "; reasoning: " + (o.reasoning_parser.empty() ? "none" : o.reasoning_parser));
  }
  log_info("server",
           std::string("chat template: ") +
               (serving.has_chat_template() ? "yes" : "none (chat completions answer 400)"));
  const std::string url = "http://" + o.http.host + ":" + std::to_string(port);
  std::printf("pagedllm: serving %s on %s\n", name.c_str(), url.c_str());
  std::printf(
      "try: curl %s/v1/completions -H 'Content-Type: application/json' -d "
      "'{\"model\": \"%s\", \"prompt\": \"Once upon a time\", \"max_tokens\": 64}'\n",
      url.c_str(), name.c_str());
  if (serving.has_chat_template()) {
    std::printf(
        "     curl %s/v1/chat/completions -H 'Content-Type: application/json' -d "
        "'{\"messages\": [{\"role\": \"user\", \"content\": \"Once upon a time\"}], "
        "\"max_tokens\": 64}'\n",
        url.c_str());
  }
  if (http.serves_webui()) std::printf("chat in a browser: %s/\n", url.c_str());
  std::fflush(stdout);

  std::thread http_thread([&http] {
    // httplib's worker threads start here and inherit the name, so per-thread CPU time tells
    // HTTP work from engine work (see scripts/bench-serve.sh).
    pthread_setname_np(pthread_self(), "pagedllm-http");
    http.serve();
  });
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  log_info("server", std::string("received ") + (signal_number == SIGINT ? "SIGINT" : "SIGTERM") +
                         ": no new requests; finishing " +
                         std::to_string(async_engine.num_in_flight()) + " in flight");
  if (distributed::Communicator::active()) {
    // mpirun's launcher sends this SIGTERM too when another rank died, and SIGKILL a second
    // later (odls_base_sigkill_timeout): a collective that a dead peer never joins must fail
    // before that, so that the streams in flight are answered with 503.
    distributed::Communicator::world().hurry(kShutdownCollectiveSeconds);
  }
  start_shutdown_watchdog(signals, o.shutdown_timeout_s);
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout_s * 1000));
  async_engine.shutdown(grace);
  // Every stream has its final event queued by now; let the HTTP threads write it (and
  // [DONE]) before the listener stops, which ends open streams mid-way.
  if (!http.wait_for_streams(std::chrono::seconds(1))) {
    log(LogLevel::kWarning, "server", "some streams were still being written at shutdown");
  }
  http.stop();
  http_thread.join();
  shutdown_finished = true;
  log_info("server", "stopped");
  if (auto failure = async_engine.engine_failure())
    throw std::runtime_error("the engine failed: " + *failure);
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto [cmd, o] = add_subcommand<ServeOptions>(
      app, "serve",
      "Serve the model over an OpenAI-compatible HTTP API (/v1/completions, "
      "/v1/chat/completions, /v1/models, /tokenize, /detokenize, /health, /version, /metrics)",
      exit_code, run_serve);
  add_engine_flags(cmd, o->engine);
  cmd->add_option("--host", o->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->http.port, "Port to listen on; 0 picks a free one")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--served-model-name", o->served_model_name,
                  "Model name clients use; default: the model file's name");
  cmd->add_option("--api-key", o->http.api_key, "Require 'Authorization: Bearer KEY' on /v1 routes")
      ->envname("PAGEDLLM_API_KEY");
  cmd->add_option("--chat-template", o->chat_template,
                  "Jinja chat template file, used instead of the model's own")
      ->check(CLI::ExistingFile);
  cmd->add_option("--allowed-origins", o->http.allowed_origins,
                  "Origins allowed by CORS (repeat or comma-separate; '*' for any); default: none")
      ->delimiter(',');
  cmd->add_option("--max-waiting-requests", o->max_waiting_requests,
                  "Queued requests beyond which new ones get 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-body-mib", o->max_body_mib, "Largest request body in MiB (else 413)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--http-threads", o->http.http_threads,
                  "HTTP worker threads: the most connections (streams) served at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 16384));
  cmd->add_option("--shutdown-timeout", o->shutdown_timeout_s,
                  "Seconds SIGINT/SIGTERM waits for in-flight requests before aborting them")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--preprocess-timeout", o->preprocess_timeout_s,
                  "Seconds a request may spend in chat templating and tokenization before it "
                  "is refused with 400 (a client that disconnects, or a shutdown, stops that "
                  "work at once); 0: no limit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  auto names = [](const std::vector<std::string>& list) {
    std::string joined;
    for (const std::string& n : list) joined += (joined.empty() ? "" : ", ") + n;
    return joined;
  };
  cmd->add_option("--tool-call-parser", o->tool_call_parser,
                  "How tool calls are read from the model's text with tool_choice \"auto\" (" +
                      names(server::tool_call_parser_names()) + "; docs/TOOLS.md)");
  cmd->add_flag("--enable-auto-tool-choice", o->enable_auto_tool_choice,
                "Let the model decide to call tools (tool_choice \"auto\"), read with "
                "--tool-call-parser; without it tools reach the template and answers stay "
                "content, and \"required\" or a named function are forced by a grammar either "
                "way");
  cmd->add_option("--reasoning-parser", o->reasoning_parser,
                  "Put a thinking model's <think>...</think> in the message's reasoning field (" +
                      names(server::reasoning_parser_names()) +
                      "); a structured output then constrains the answer after it");
  cmd->add_option("--allowed-local-media-path", o->allowed_local_media_path,
                  "Directory whose files chat requests may send as file:// image URLs (symlinks "
                  "and '..' leading outside are refused); default: file:// URLs are refused");
  cmd->add_option("--limit-mm-per-prompt", o->limit_mm_per_prompt,
                  "Most images one chat request may carry, as vLLM's JSON: '{\"image\": N}' "
                  "(default 999)");
  cmd->add_option("--allowed-media-domains", o->allowed_media_domains,
                  "Hosts that http(s) image URLs, and each of their redirects, may name (repeat "
                  "or comma-separate); default: any")
      ->delimiter(',');
  cmd->add_option("--image-fetch-timeout", o->image_fetch_timeout_s,
                  "Seconds an http(s) image URL may take to download (5 to connect)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-webui", o->no_webui,
                "Do not serve the chat page at / (the API is unchanged)");
  cmd->add_option("--log-stats-interval", o->log_stats_interval_s,
                  "Seconds between engine stats lines; 0 turns them off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-level", o->log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
}

}  // namespace pagedllm::cli
