// A request's preparation (chat template, tokenization) is work the server stops: when the
// client disconnects, when it runs past --preprocess-timeout, and at shutdown. The template
// used here is slow on purpose: well inside the Jinja step limit, each of its 100,000 steps
// copies the 1 MiB message, which would take minutes if nothing stopped it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

#include "server/server_process.h"

namespace pagedllm::test {
namespace {

std::string slow_template_file() {
  const std::string path = temp_path("slow_template.jinja");
  std::ofstream(path) << "{% for i in range(100000) %}{% if messages[0].content.upper() == 'x' %}"
                         "x{% endif %}{% endfor %}{{ messages[0].content }}";
  return path;
}

std::string chat_body() {
  const std::string content(1 << 20, 'a');
  return ojson{{"messages", {{{"role", "user"}, {"content", content}}}}, {"max_tokens", 4}}.dump();
}

std::string slow_server_args(const std::string& extra) {
  return "--model " + stories_gguf() + " --threads 1 --chat-template " + slow_template_file() +
         " " + extra;
}

// Sends a whole chat request on a raw connection and returns the socket, open.
int send_request(const ServerProcess& s, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(s.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  const std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return -1;
    sent += static_cast<size_t>(n);
  }
  return fd;
}

// With one HTTP thread, the server answers /health only once that thread is free again.
TEST(ServerPreparation, AClientThatDisconnectsWhileItsPromptIsPreparedFreesItsThread) {
  ServerProcess s(slow_server_args("--http-threads 1"));
  const int fd = send_request(s, chat_body());
  ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the template is running
  close(fd);
  const auto start = std::chrono::steady_clock::now();
  auto c = s.client();
  c.set_read_timeout(20);
  const auto health = c.Get("/health");
  ASSERT_TRUE(health) << "no answer within 20 s: the thread is still rendering";
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  const std::string log = s.stderr_text();
  EXPECT_NE(log.find("-> 499 the client closed the connection"), std::string::npos) << log;
}

TEST(ServerPreparation, PreparationPastTheTimeoutIsRefusedWith400) {
  ServerProcess s(slow_server_args("--preprocess-timeout 0.5"));
  const auto start = std::chrono::steady_clock::now();
  const HttpReply r = post(s, "/v1/chat/completions", chat_body());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json["error"]["param"], "messages");
  EXPECT_NE(r.body.find("longer than the server's limit of 0.5 s (--preprocess-timeout)"),
            std::string::npos)
      << r.body;
  // The server goes on serving.
  EXPECT_EQ(post(s, "/v1/completions", ojson{{"prompt", "Once"}, {"max_tokens", 2}}).status, 200);
}

// A request still being prepared could not be queued after a shutdown began: it is answered
// 503 at once, and the process exits 0 in moments rather than when the watchdog fires.
TEST(ServerPreparation, ShutdownStopsARequestBeingPreparedAndExitsZero) {
  ServerProcess s(slow_server_args("--shutdown-timeout 3"));
  auto reply =
      std::async(std::launch::async, [&] { return post(s, "/v1/chat/completions", chat_body()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(s.signal_and_wait(SIGTERM, std::chrono::seconds(30)), 0) << s.stderr_text();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  const HttpReply r = reply.get();
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("shutting down"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace pagedllm::test
