// The HTTP front end (cpp-httplib): routes, API key, CORS, body limit, error JSON, and SSE
// streaming. Every request is handled on one of the server's own threads; the engine loop is
// never one of them.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/metrics.h"
#include "server/openai_serving.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace pagedllm::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                           // 0: any free port (see port())
  std::string api_key;                       // empty: no key needed
  std::vector<std::string> allowed_origins;  // CORS; "*" allows any
  size_t max_body_bytes = 8u << 20;
  int http_threads = 512;  // connections served at once (each stream holds one)
  bool webui = true;       // the chat page at / (webui/, embedded at build time)
};

class HttpServer {
 public:
  HttpServer(OpenAIServing& serving, ServerMetrics& metrics, HttpOptions options);
  // Without the API behind it yet: bind() the port first (so that a port in use fails before
  // a model loads), attach() the API once it exists, then serve(). Connections that arrive in
  // between wait in the listen backlog.
  HttpServer(ServerMetrics& metrics, HttpOptions options);
  ~HttpServer();

  // Binds the port (throws std::runtime_error when it cannot). Returns the port bound.
  int bind();
  void attach(OpenAIServing& serving);
  // Serves until stop() (call after bind() and attach()); returns when the listener has closed
  // and connections are done.
  void serve();
  // Waits until every streamed response has written its last event (each ends once the engine
  // has finished or aborted its requests), at most `timeout`; false if some are still open.
  // Call after the engine has shut down and before stop(), which cuts open streams.
  bool wait_for_streams(std::chrono::milliseconds timeout);
  void stop();
  int port() const { return port_; }
  // Whether / answers with the chat page: asked for, and built into this binary.
  bool serves_webui() const;

 private:
  void register_routes();
  void register_webui_routes();
  void log_rejection(const httplib::Request& req, const httplib::Response& res);
  std::string allowed_origin(const std::string& origin) const;

  OpenAIServing* serving_ = nullptr;
  ServerMetrics& metrics_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::atomic<int> listen_fd_{-1};
  std::atomic<int> open_streams_{0};
  std::atomic<int64_t> rejected_{0};
  int port_ = 0;
};

}  // namespace pagedllm::server
