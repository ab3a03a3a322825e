// The load test that chose the HTTP library: the same OpenAI-style SSE endpoint served by
// cpp-httplib (thread per connection, what `pagedllm serve` uses) and by Boost.Beast (async,
// C++20 coroutines on a small io_context pool), with the engine replaced by a timer that emits
// one token every --interval-ms. `pagedllm bench serve` drives both (scripts/bench-http.sh);
// comparing TTFT/ITL overhead, failures, CPU time and RSS at 256 concurrent streams shows what
// each library costs by itself.
//
//   bench_http_sse --lib httplib|beast --port 18200 [--interval-ms 5] [--threads 2]
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

// Boost 1.74 asio/awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;

struct Options {
  std::string lib = "httplib";
  int port = 18200;
  int interval_ms = 5;
  int threads = 2;
};

const char* kModels = R"({"object":"list","data":[{"id":"sse","object":"model"}]})";

// The chunk for token i of a completion with `total` tokens (the last carries finish_reason).
std::string token_event(int i, int total) {
  nlohmann::json j = {{"id", "cmpl-x"}, {"object", "text_completion"}, {"model", "sse"}};
  j["choices"] = {{{"index", 0},
                   {"text", " tok"},
                   {"finish_reason", i + 1 == total ? nlohmann::json("length") : nullptr}}};
  return "data: " + j.dump() + "\n\n";
}

std::string usage_event(int prompt, int total) {
  nlohmann::json j = {{"id", "cmpl-x"},
                      {"object", "text_completion"},
                      {"model", "sse"},
                      {"choices", nlohmann::json::array()}};
  j["usage"] = {
      {"prompt_tokens", prompt}, {"completion_tokens", total}, {"total_tokens", prompt + total}};
  return "data: " + j.dump() + "\n\ndata: [DONE]\n\n";
}

// max_tokens and the prompt's length (token ids or characters) from a completions body.
std::pair<int, int> request_sizes(const std::string& body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {16, 0};
  const int max_tokens = j.value("max_tokens", 16);
  int prompt = 0;
  if (j.contains("prompt") && j["prompt"].is_array()) prompt = static_cast<int>(j["prompt"].size());
  return {max_tokens, prompt};
}

void serve_httplib(const Options& o) {
  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(512); };
  server.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kModels, "application/json");
  });
  const int interval = o.interval_ms;
  server.Post("/v1/completions", [interval](const httplib::Request& req, httplib::Response& res) {
    const auto [total, prompt] = request_sizes(req.body);
    res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
      auto next = std::chrono::steady_clock::now();
      for (int i = 0; i < total; ++i) {
        next += std::chrono::milliseconds(interval);
        std::this_thread::sleep_until(next);
        const std::string e = token_event(i, total);
        if (!sink.write(e.data(), e.size())) return false;
      }
      const std::string u = usage_event(prompt, total);
      sink.write(u.data(), u.size());
      sink.done();
      return true;
    });
  });
  // As in `pagedllm serve`: httplib listens with a backlog of 5, raised here after binding.
  int listen_fd = -1;
  server.set_socket_options([&listen_fd](int fd) {
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    listen_fd = fd;
  });
  if (!server.bind_to_port("127.0.0.1", o.port)) throw std::runtime_error("cannot bind");
  ::listen(listen_fd, SOMAXCONN);
  server.listen_after_bind();
}

net::awaitable<void> beast_session(tcp::socket socket, int interval_ms) {
  boost::beast::tcp_stream stream(std::move(socket));
  boost::beast::flat_buffer buffer;
  net::steady_timer timer(stream.get_executor());
  for (;;) {
    http::request<http::string_body> req;
    co_await http::async_read(stream, buffer, req, net::use_awaitable);
    if (req.method() == http::verb::get) {
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "application/json");
      res.keep_alive(req.keep_alive());
      res.body() = kModels;
      res.prepare_payload();
      co_await http::async_write(stream, res, net::use_awaitable);
    } else {
      const auto [total, prompt] = request_sizes(req.body());
      http::response<http::empty_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "text/event-stream");
      res.keep_alive(req.keep_alive());
      res.chunked(true);
      http::response_serializer<http::empty_body> sr{res};
      co_await http::async_write_header(stream, sr, net::use_awaitable);
      auto next = std::chrono::steady_clock::now();
      for (int i = 0; i < total; ++i) {
        next += std::chrono::milliseconds(interval_ms);
        timer.expires_at(next);
        co_await timer.async_wait(net::use_awaitable);
        const std::string e = token_event(i, total);
        co_await net::async_write(stream, http::make_chunk(net::buffer(e)), net::use_awaitable);
      }
      const std::string u = usage_event(prompt, total);
      co_await net::async_write(stream, http::make_chunk(net::buffer(u)), net::use_awaitable);
      co_await net::async_write(stream, http::make_chunk_last(), net::use_awaitable);
    }
    if (!req.keep_alive()) break;
  }
}

net::awaitable<void> beast_listen(tcp::acceptor acceptor, int interval_ms) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
    net::co_spawn(acceptor.get_executor(), beast_session(std::move(socket), interval_ms),
                  [](std::exception_ptr) {});  // a client that hangs up ends its session
  }
}

void serve_beast(const Options& o) {
  net::io_context io(o.threads);
  tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(o.port)});
  acceptor.listen(net::socket_base::max_listen_connections);
  net::co_spawn(io, beast_listen(std::move(acceptor), o.interval_ms), net::detached);
  std::vector<std::thread> pool;
  for (int i = 1; i < o.threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--lib")
      o.lib = value;
    else if (flag == "--port")
      o.port = std::atoi(value.c_str());
    else if (flag == "--interval-ms")
      o.interval_ms = std::atoi(value.c_str());
    else if (flag == "--threads")
      o.threads = std::atoi(value.c_str());
    else {
      std::cerr << "bench_http_sse: unknown flag " << flag << "\n";
      return 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  if (o.lib == "httplib") {
    serve_httplib(o);
  } else if (o.lib == "beast") {
    serve_beast(o);
  } else {
    std::cerr << "bench_http_sse: --lib must be httplib or beast\n";
    return 2;
  }
  return 0;
}
