#include "server/http_server.h"

#include <sys/socket.h>

#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/client_connection.h"
#include "server/openai_response.h"
#include "server/webui_assets.h"
#include "util/interrupt.h"
#include "util/log.h"

#ifndef PAGEDLLM_VERSION
#define PAGEDLLM_VERSION "0.0.0"
#endif

namespace pagedllm::server {

namespace {

void send_error(httplib::Response& res, int status, const std::string& message,
                const std::string& param = {}) {
  res.status = status;
  res.set_content(to_body(error_json(status, message, param)), "application/json");
  if (status == 503) res.set_header("Retry-After", "1");
}

// Runs an endpoint and turns its ApiResponse (or its ApiError) into the HTTP response.
// open_streams counts streamed responses until httplib releases them (after the last write).
// A client that closes its connection while its request is prepared or generated (unstreamed)
// stops that work: the code nginx logs for it, which no client ever reads.
constexpr int kClientClosedRequest = 499;

template <typename Endpoint>
void serve_api(const httplib::Request& req, httplib::Response& res, std::atomic<int>& open_streams,
               Endpoint&& endpoint) {
  ApiResponse out;
  try {
    ClientConnection connection(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
    InterruptScope client_watch(
        [&connection] {
          if (connection.gone())
            throw ApiError(kClientClosedRequest, "the client closed the connection");
        },
        std::chrono::milliseconds(10));
    out = endpoint();
  } catch (const ApiError& e) {
    send_error(res, e.status(), e.what(), e.param());
    return;
  } catch (const std::exception& e) {
    log(LogLevel::kError, "server", std::string("internal error: ") + e.what());
    send_error(res, 500, std::string("internal error: ") + e.what());
    return;
  }
  res.status = out.status;
  if (!out.stream) {
    res.set_content(std::move(out.body), out.content_type);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  std::shared_ptr<EventStream> stream = out.stream;
  ++open_streams;
  res.set_chunked_content_provider(
      out.content_type,
      [stream](size_t, httplib::DataSink& sink) {
        if (!sink.is_writable()) {  // the client hung up while nothing was being written
          stream->cancel();
          return false;
        }
        std::string chunk;
        const bool more = stream->next(chunk);
        if (!chunk.empty() && !sink.write(chunk.data(), chunk.size())) {
          stream->cancel();  // the client went away
          return false;
        }
        if (!more) sink.done();
        return true;
      },
      [stream, &open_streams](bool success) {
        if (!success) stream->cancel();
        --open_streams;
      });
}

// At most `limit` bytes of `text`, with control and non-ASCII bytes as '?': log lines carry
// no raw client bytes.
std::string printable(const std::string& text, size_t limit) {
  std::string out = text.substr(0, limit);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  }
  if (text.size() > limit) out += "...";
  return out;
}

// The message of an OpenAI-style error body, or "" when the body is not one.
std::string error_message(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "";
  const auto& m = j["error"].value("message", nlohmann::json());
  return m.is_string() ? m.get<std::string>() : "";
}

// The chat page may run only its own scripts and talk only to this server: model output that
// got past its sanitizer could still neither run nor send anything elsewhere. (KaTeX sets
// inline styles, hence 'unsafe-inline' for styles alone.)
constexpr const char* kWebuiPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'";

// Answers with the embedded file `name` of the chat page; false when there is none.
bool send_webui_file(httplib::Response& res, std::string_view name, const char* cache_control) {
  const WebuiAsset* asset = find_webui_asset(name);
  if (!asset) return false;
  res.set_content(asset->bytes.data(), asset->bytes.size(), std::string(webui_content_type(name)));
  res.set_header("Cache-Control", cache_control);
  res.set_header("X-Content-Type-Options", "nosniff");
  if (name.ends_with(".html")) res.set_header("Content-Security-Policy", kWebuiPolicy);
  return true;
}

}  // namespace

HttpServer::HttpServer(OpenAIServing& serving, ServerMetrics& metrics, HttpOptions options)
    : HttpServer(metrics, std::move(options)) {
  attach(serving);
}

HttpServer::HttpServer(ServerMetrics& metrics, HttpOptions options)
    : metrics_(metrics),
      options_(std::move(options)),
      server_(std::make_unique<httplib::Server>()) {
  const int threads = options_.http_threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  server_->set_keep_alive_timeout(2);
  server_->set_read_timeout(30);
  server_->set_write_timeout(30);
  server_->set_tcp_nodelay(true);
  // Remember the listening socket: httplib listens with a backlog of 5, raised in bind().
  server_->set_socket_options([this](int fd) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd_ = fd;
  });
  register_routes();
}

HttpServer::~HttpServer() = default;

// Every refused request gets one info line: a number, the route, the client, the status and
// the reason (never the prompt: the reason is cut short and made printable).
void HttpServer::log_rejection(const httplib::Request& req, const httplib::Response& res) {
  if (res.status < 400) return;
  log_info("server", "rejected request #" + std::to_string(++rejected_) + ": " + req.method + " " +
                         printable(req.path, 80) + " from " + req.remote_addr + ":" +
                         std::to_string(req.remote_port) + " -> " + std::to_string(res.status) +
                         " " + printable(error_message(res.body), 160));
}

std::string HttpServer::allowed_origin(const std::string& origin) const {
  if (origin.empty()) return {};
  for (const std::string& allowed : options_.allowed_origins) {
    if (allowed == "*") return "*";
    if (allowed == origin) return origin;
  }
  return {};
}

void HttpServer::register_routes() {
  httplib::Server& s = *server_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const std::string origin = allowed_origin(req.get_header_value("Origin"));
    if (!origin.empty()) {
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
    }
    if (req.method == "OPTIONS") {
      if (!origin.empty()) {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
      }
      res.status = origin.empty() ? 403 : 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!options_.api_key.empty() && req.path.rfind("/v1", 0) == 0 &&
        req.get_header_value("Authorization") != "Bearer " + options_.api_key) {
      send_error(res, 401, "Unauthorized: a missing or wrong API key");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      send_error(res, 404, "Not Found: no route " + req.method + " " + req.path);
    } else if (res.status == 413) {
      send_error(res, 413, "the request body is larger than the limit");
    } else {
      send_error(res, res.status, "HTTP error " + std::to_string(res.status));
    }
  });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    log_rejection(req, res);
  });
  s.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  s.Get("/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(to_body({{"version", PAGEDLLM_VERSION}}), "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    serve_api(req, res, open_streams_, [&] { return serving_->models(); });
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    serve_api(req, res, open_streams_, [&] { return serving_->completions(req.body); });
  });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    serve_api(req, res, open_streams_, [&] { return serving_->chat_completions(req.body); });
  });
  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    serve_api(req, res, open_streams_, [&] { return serving_->tokenize(req.body); });
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    serve_api(req, res, open_streams_, [&] { return serving_->detokenize(req.body); });
  });
  register_webui_routes();
}

bool HttpServer::serves_webui() const {
  return options_.webui && find_webui_asset("index.html") != nullptr;
}

// The chat page at / and its files under /webui/. It holds no secret, so it needs no API key;
// the /v1 calls it makes do.
void HttpServer::register_webui_routes() {
  if (!serves_webui()) return;
  httplib::Server& s = *server_;
  // The page names its scripts, styles and fonts by content hash: only the page itself has to
  // be asked for again, the rest is kept for good.
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    send_webui_file(res, "index.html", "no-cache");
  });
  s.Get(R"(/webui/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    if (!send_webui_file(res, req.matches[1].str(), "public, max-age=31536000, immutable")) {
      res.status = 404;
    }
  });
}

int HttpServer::bind() {
  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
    if (port_ <= 0) throw std::runtime_error("cannot bind " + options_.host + " to any port");
  } else {
    if (!server_->bind_to_port(options_.host, options_.port))
      throw std::runtime_error("cannot bind " + options_.host + ":" +
                               std::to_string(options_.port) +
                               " (in use, or not an address "
                               "of this machine)");
    port_ = options_.port;
  }
  // Many clients connect at once under load; a second listen() raises the accept backlog.
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
  return port_;
}

void HttpServer::attach(OpenAIServing& serving) {
  serving_ = &serving;
}

void HttpServer::serve() {
  if (!serving_) throw std::logic_error("HttpServer::serve() before attach()");
  server_->listen_after_bind();
}

bool HttpServer::wait_for_streams(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (open_streams_.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::stop() {
  server_->stop();
}

}  // namespace pagedllm::server
