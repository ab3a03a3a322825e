// `serve` checks what it can before loading the model: a port in use, a missing model file and
// a chat template that does not compile each end it at once with a one-line reason, before the
// engine has loaded anything (its "model=..." description never appears).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli_runner.h"

namespace pagedllm::test {
namespace {

std::string stories() {
  return model_path("stories260K/stories260K.gguf");
}

// `timeout` guards against a regression that starts serving instead of failing.
CliResult serve(const std::string& args) {
  return run_cli("serve --log-stats-interval 0 " + args, "PAGEDLLM_TEST=1 timeout 60");
}

void expect_failed_before_loading(const CliResult& r, const std::string& reason) {
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 124) << "serve did not stop by itself";
  EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("model="), std::string::npos) << "the model was loaded first:\n" << r.err;
  EXPECT_EQ(r.out.find("serving"), std::string::npos) << r.out;
}

TEST(ServeCli, APortInUseFailsBeforeTheModelLoads) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  const CliResult r = serve("--model " + stories() + " --port " + std::to_string(port));
  close(fd);
  expect_failed_before_loading(r, "cannot bind 127.0.0.1:" + std::to_string(port));
}

TEST(ServeCli, AMissingModelFailsAtOnce) {
  const CliResult r = serve("--model /nonexistent/model.gguf --port 0");
  expect_failed_before_loading(r, "/nonexistent/model.gguf: no such file or directory");
}

TEST(ServeCli, AChatTemplateThatDoesNotCompileFailsBeforeTheModelLoads) {
  const std::string bad = write_temp("bad-template.jinja", "{% for m in messages %}{{ m }");
  const CliResult r = serve("--model " + stories() + " --port 0 --chat-template " + bad);
  expect_failed_before_loading(r, "chat template " + bad);
}

}  // namespace
}  // namespace pagedllm::test
