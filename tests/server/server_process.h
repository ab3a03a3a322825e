// Test helpers: a `pagedllm serve` child process on an ephemeral loopback port, and an HTTP
// client that reads Server-Sent Events.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "test_paths.h"

namespace pagedllm::test {

using ojson = nlohmann::ordered_json;

inline std::string stories_gguf() {
  return shared_dir() + "/models/stories260K/stories260K.gguf";
}
inline std::string chatml_template() {
  return shared_dir() + "/vectors/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";
}

class ServerProcess {
 public:
  // Starts `pagedllm serve --port 0 ARGS` and waits for the line that names its URL.
  explicit ServerProcess(const std::string& args) {
    static int count = 0;
    stderr_path_ = temp_path("pagedllm_serve." + std::to_string(getpid()) + "." +
                             std::to_string(count++) + ".log");
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    const std::string cmd = std::string("exec ") + PAGEDLLM_BINARY +
                            " serve --port 0 --log-stats-interval 0 " + args + " 2>" + stderr_path_;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    close(fds[1]);
    out_fd_ = fds[0];
    const std::string marker = " on http://127.0.0.1:";
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (out.find('\n', out.find(marker)) == std::string::npos ||
           out.find(marker) == std::string::npos) {
      pollfd p{out_fd_, POLLIN, 0};
      if (std::chrono::steady_clock::now() > deadline || poll(&p, 1, 1000) < 0) break;
      char buf[512];
      const ssize_t n = p.revents ? read(out_fd_, buf, sizeof buf) : 0;
      if (p.revents && n <= 0) break;
      if (n > 0) out.append(buf, n);
    }
    const size_t at = out.find(marker);
    if (at == std::string::npos) {
      throw std::runtime_error("server did not start: " + out + "\n" + stderr_text());
    }
    port_ = std::stoi(out.substr(at + marker.size()));
  }

  ~ServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
  }

  // Sends `sig` and waits up to `timeout`; returns the exit code, or -1 if it did not exit.
  int signal_and_wait(int sig, std::chrono::seconds timeout) {
    kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const {
    std::ifstream in(stderr_path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Resident memory of the server in KiB, from /proc.
  long rss_kib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120);
    return c;
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  std::string stderr_path_;
};

struct HttpReply {
  int status = 0;
  ojson json;  // the body parsed (null when it is not JSON)
  std::string body;
  std::string error;  // the client's error when the server could not be reached
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  httplib::Headers headers;
};

// Status 0 when the server could not be reached.
inline HttpReply to_reply(const httplib::Result& res) {
  HttpReply r;
  if (!res) {
    r.error = httplib::to_string(res.error());
    return r;
  }
  r.status = res->status;
  r.body = res->body;
  r.headers = res->headers;
  r.json = ojson::parse(res->body, nullptr, false);
  if (r.json.is_discarded()) r.json = nullptr;
  return r;
}

inline HttpReply post(const ServerProcess& server, const std::string& path, const std::string& body,
                      const httplib::Headers& headers = {}) {
  auto c = server.client();
  return to_reply(c.Post(path, headers, body, "application/json"));
}

inline HttpReply post(const ServerProcess& server, const std::string& path, const ojson& body) {
  return post(server, path, body.dump());
}

inline HttpReply get(const ServerProcess& server, const std::string& path,
                     const httplib::Headers& headers = {}) {
  auto c = server.client();
  return to_reply(c.Get(path, headers));
}

struct StreamReply {
  int status = 0;
  std::vector<ojson> events;  // every data: event but [DONE]
  bool done = false;          // saw data: [DONE]
  bool cut = false;           // the reader stopped early
  std::string rest;           // what was not an event: the body of an error reply
  std::string error;          // the client's error when the exchange failed
};

// POSTs a streaming request and parses its events. `keep_reading(events so far)` may return
// false to hang up mid-stream.
inline StreamReply post_stream(const ServerProcess& server, const std::string& path,
                               const ojson& body,
                               std::function<bool(const std::vector<ojson>&)> keep_reading = {}) {
  auto c = server.client();
  StreamReply r;
  std::string buffer;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buffer.append(data, len);
    size_t end;
    while ((end = buffer.find("\n\n")) != std::string::npos) {
      const std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        r.done = true;
      } else {
        r.events.push_back(ojson::parse(payload));
      }
    }
    if (keep_reading && !keep_reading(r.events)) {
      r.cut = true;
      return false;
    }
    return true;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  c.send(req, res, error);
  r.status = res.status;
  r.rest = buffer;
  if (error != httplib::Error::Success) r.error = httplib::to_string(error);
  return r;
}

// The value of a metric line "name{labels} value" (the first whose name and labels start so).
inline double metric(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      const size_t space = text.find(' ', at);
      return std::stod(text.substr(space + 1));
    }
    ++at;
  }
  return -1;
}

}  // namespace pagedllm::test
