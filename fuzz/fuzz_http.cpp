// libFuzzer: raw bytes over a loopback socket into a live in-process server (HTTP parsing by
// cpp-httplib, routing, auth, JSON validation, tokenization, generation and SSE). The server
// must answer or close, and keep serving: every 64th input is followed by a health check (every
// input in the regression replay, which defines PAGEDLLM_FUZZ_HTTP_HEALTH_EVERY=1).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "server/async_engine.h"
#include "server/http_server.h"
#include "server/openai_serving.h"
#include "util/log.h"

#ifndef PAGEDLLM_FUZZ_HTTP_HEALTH_EVERY
#define PAGEDLLM_FUZZ_HTTP_HEALTH_EVERY 64
#endif

using namespace pagedllm;

namespace {

std::string shared_dir() {
  const char* env = std::getenv("PAGEDLLM_SHARED_DIR");
  return env ? env : PAGEDLLM_SHARED_DIR;
}

struct Harness {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<server::ServerMetrics> metrics;
  std::unique_ptr<server::AsyncEngine> async_engine;
  std::unique_ptr<server::OpenAIServing> serving;
  std::unique_ptr<server::HttpServer> http;
  std::thread thread;
  int port = 0;

  Harness() {
    signal(SIGPIPE, SIG_IGN);
    set_log_level(LogLevel::kError);
    EngineOptions o;
    o.model = shared_dir() + "/models/stories260K/stories260K.gguf";
    o.max_model_len = 256;  // the chat seeds (up to 113 prompt tokens) reach generation
    o.threads = 1;
    o.detokenize = false;
    o.delta_outputs = true;
    engine = std::make_unique<Engine>(o);
    metrics = std::make_unique<server::ServerMetrics>("m");
    async_engine =
        std::make_unique<server::AsyncEngine>(*engine, *metrics, server::AsyncEngineOptions{64, 0});
    server::ServingOptions so;
    so.served_model_name = "m";
    so.model_path = o.model;
    so.chat_template_file = shared_dir() + "/vectors/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";
    // Requests with tools and thinking go through the parsers too.
    so.tool_call_parser = "hermes";
    so.enable_auto_tool_choice = true;
    so.reasoning_parser = "qwen3";
    serving = std::make_unique<server::OpenAIServing>(*engine, *async_engine, so);
    server::HttpOptions h;
    h.port = 0;
    h.http_threads = 16;
    h.api_key = "k";
    h.allowed_origins = {"http://a.example"};
    http = std::make_unique<server::HttpServer>(*serving, *metrics, h);
    port = http->bind();
    thread = std::thread([this] { http->serve(); });
  }

  ~Harness() {
    async_engine->shutdown(std::chrono::milliseconds(0));
    http->stop();
    thread.join();
  }
};

// Sends bytes and reads the reply until the server closes or stays quiet for `quiet_ms`.
// (No half-close: httplib drops a connection whose client has shut down its side.)
std::string exchange(int port, const uint8_t* data, size_t size, int quiet_ms) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    char buf[4096];
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, quiet_ms) > 0) {
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return reply;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness harness;
  static int count = 0;
  exchange(harness.port, data, size, 20);
  if (++count % PAGEDLLM_FUZZ_HTTP_HEALTH_EVERY == 0) {
    const std::string health = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    const std::string reply = exchange(
        harness.port, reinterpret_cast<const uint8_t*>(health.data()), health.size(), 5000);
    if (reply.rfind("HTTP/1.1 200", 0) != 0) {  // the server stopped serving
      fprintf(stderr, "health check failed: [%s]\n", reply.c_str());
      std::abort();
    }
  }
  return 0;
}
