// Image URLs to bytes: data URLs, http(s) against a loopback server (redirects, timeouts, size
// limits, error statuses), and file:// paths confined to the allowed directory.
#include "server/image_source.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_paths.h"
#include "util/interrupt.h"

namespace pagedllm::server {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  return bytes;
}

std::string as_string(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}

void expect_refused(std::string_view url, const ImageSourceOptions& options,
                    const std::string& fragment) {
  try {
    read_image_url(url, options);
    ADD_FAILURE() << "read " << url;
  } catch (const ImageSourceError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

// A loopback server with an image, redirect chains, a slow endpoint and error statuses.
class LoopbackImageServer : public testing::Test {
 protected:
  void SetUp() override {
    image_ = as_string(pattern(3000));
    server_.Get("/image.png", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(image_, "image/png");
    });
    server_.Get(R"(/hops/(\d+))", [](const httplib::Request& req, httplib::Response& res) {
      const int left = std::stoi(req.matches[1]);
      res.set_redirect(left == 0 ? "/image.png" : "/hops/" + std::to_string(left - 1));
    });
    server_.Get("/to-localhost", [this](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("http://localhost:" + std::to_string(port_) + "/image.png");
    });
    server_.Get("/to-file", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("file:///etc/passwd");
    });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      for (int i = 0; i < 1000 && !release_slow_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      res.set_content(image_, "image/png");
    });
    server_.Get("/big", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(5000, 'x'), "image/png");
    });
    server_.Get("/big-chunked", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("image/png", [](size_t offset, httplib::DataSink& sink) {
        if (offset >= 5000) {
          sink.done();
          return true;
        }
        const std::string chunk(1000, 'y');
        return sink.write(chunk.data(), chunk.size());
      });
    });
    server_.Get("/forbidden", [](const httplib::Request&, httplib::Response& res) {
      res.status = 403;
      res.set_content("no", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    options_.max_bytes = 4000;
    options_.max_redirects = 3;
    options_.timeout_s = 0.5;
  }
  void TearDown() override {
    release_slow_ = true;
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string image_;
  std::atomic<bool> release_slow_{false};
  ImageSourceOptions options_;
};

TEST_F(LoopbackImageServer, FetchesTheImageBytes) {
  EXPECT_EQ(as_string(read_image_url(url("/image.png"), options_)), image_);
  EXPECT_EQ(as_string(read_image_url("HTTP://127.0.0.1:" + std::to_string(port_) + "/image.png",
                                     options_)),
            image_);
}

TEST_F(LoopbackImageServer, FollowsRedirectsUpToTheLimit) {
  EXPECT_EQ(as_string(read_image_url(url("/hops/2"), options_)), image_);  // 3 redirects
  expect_refused(url("/hops/3"), options_, "more than 3 redirects");
  options_.max_redirects = 0;
  expect_refused(url("/hops/0"), options_, "more than 0 redirects");
}

TEST_F(LoopbackImageServer, ARedirectToAnotherProtocolIsRefused) {
  expect_refused(url("/to-file"), options_, "not http or https");
}

// vLLM's --allowed-media-domains: the first URL's host and every redirect's are checked.
TEST_F(LoopbackImageServer, OnlyAllowedHostsAreFetchedRedirectsIncluded) {
  options_.allowed_domains = {"127.0.0.1"};
  EXPECT_EQ(as_string(read_image_url(url("/hops/1"), options_)), image_);
  expect_refused(url("/to-localhost"), options_,
                 "is on host 'localhost', which --allowed-media-domains does not list");
  options_.allowed_domains = {"localhost"};
  expect_refused(url("/image.png"), options_, "is on host '127.0.0.1'");
  options_.allowed_domains = {"localhost", "127.0.0.1"};
  EXPECT_EQ(as_string(read_image_url(url("/to-localhost"), options_)), image_);
}

TEST_F(LoopbackImageServer, ASlowServerTimesOut) {
  expect_refused(url("/slow"), options_, "timed out");
}

TEST_F(LoopbackImageServer, ABodyOverTheLimitIsRefusedWithOrWithoutALength) {
  expect_refused(url("/big"), options_, "larger than the limit of 4000 bytes");
  expect_refused(url("/big-chunked"), options_, "larger than the limit of 4000 bytes");
  options_.max_bytes = 5000;
  EXPECT_EQ(read_image_url(url("/big-chunked"), options_).size(), 5000u);
}

TEST_F(LoopbackImageServer, AnErrorStatusIsRefusedWithItsCode) {
  expect_refused(url("/missing.png"), options_, "HTTP 404");
  expect_refused(url("/forbidden"), options_, "HTTP 403");
}

TEST_F(LoopbackImageServer, AClosedPortIsRefused) {
  httplib::Server other;
  const int closed = other.bind_to_any_port("127.0.0.1");
  other.stop();  // bound, never listening: nothing accepts
  expect_refused("http://127.0.0.1:" + std::to_string(closed) + "/x.png", options_,
                 "cannot fetch image URL");
}

// The server stops a download whose client left: the interruption check's exception escapes.
TEST_F(LoopbackImageServer, AnInterruptionStopsTheDownload) {
  struct ClientLeft {};
  options_.timeout_s = 20;
  InterruptScope scope([] { throw ClientLeft{}; }, std::chrono::microseconds(0));
  EXPECT_THROW(read_image_url(url("/slow"), options_), ClientLeft);
}

TEST(ImageSource, DataUrlsDecodeAndBadOnesAreRefused) {
  ImageSourceOptions options;
  EXPECT_EQ(as_string(read_image_url("data:image/png;base64,TWFu", options)), "Man");
  expect_refused("data:image/png;base64,TWF", options, "base64");
  expect_refused("data:image/png,TWFu", options, "base64");
  options.max_bytes = 2;
  expect_refused("data:image/png;base64,TWFu", options, "");
}

TEST(ImageSource, OtherSchemesAreRefused) {
  const ImageSourceOptions options;
  for (const char* url : {"ftp://host/x.png", "gopher://x", "/etc/passwd", "x.png", ""})
    expect_refused(url, options, "is not a data:, http://, https:// or file:// URL");
}

TEST(ImageSource, FileUrlPathsAreDecoded) {
  EXPECT_EQ(file_url_path("file:///tmp/a%20b.png"), "/tmp/a b.png");
  EXPECT_EQ(file_url_path("file://localhost/x.png?query#frag"), "/x.png");
  EXPECT_THROW(file_url_path("file://example.com/x.png"), ImageSourceError);
  EXPECT_THROW(file_url_path("file://"), ImageSourceError);
  EXPECT_THROW(file_url_path("file:///a%2"), ImageSourceError);
  EXPECT_THROW(file_url_path("file:///a%00b"), ImageSourceError);
}

class LocalMedia : public testing::Test {
 protected:
  void SetUp() override {
    root_ = test::temp_path("local-media-" + std::to_string(counter_++));
    fs::create_directories(root_ + "/allowed/sub");
    write(root_ + "/allowed/sub/in.png", "inside");
    write(root_ + "/secret.png", "outside");
    options_.allowed_local_media_path = root_ + "/allowed";
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  std::string root_;
  ImageSourceOptions options_;
  static inline int counter_ = 0;
};

TEST_F(LocalMedia, AFileInsideTheAllowedDirectoryIsRead) {
  EXPECT_EQ(as_string(read_image_url("file://" + root_ + "/allowed/sub/in.png", options_)),
            "inside");
  // The allowed directory itself may be given through a symlink or with a trailing slash.
  fs::create_directory_symlink(root_ + "/allowed", root_ + "/link-to-allowed");
  options_.allowed_local_media_path = root_ + "/link-to-allowed/";
  EXPECT_EQ(as_string(read_image_url("file://" + root_ + "/allowed/sub/in.png", options_)),
            "inside");
}

TEST_F(LocalMedia, PathsLeadingOutsideAreRefused) {
  expect_refused("file://" + root_ + "/secret.png", options_, "outside the directory allowed");
  expect_refused("file://" + root_ + "/allowed/../secret.png", options_,
                 "outside the directory allowed");
  expect_refused("file://" + root_ + "/allowed/sub/%2E%2E/%2E%2E/secret.png", options_,
                 "outside the directory allowed");
  fs::create_symlink(root_ + "/secret.png", root_ + "/allowed/escape.png");
  expect_refused("file://" + root_ + "/allowed/escape.png", options_,
                 "outside the directory allowed");
  // A sibling whose name starts with the allowed directory's is outside too.
  fs::create_directories(root_ + "/allowed-not");
  write(root_ + "/allowed-not/x.png", "sibling");
  expect_refused("file://" + root_ + "/allowed-not/x.png", options_,
                 "outside the directory allowed");
}

TEST_F(LocalMedia, WithoutTheFlagEveryFileIsRefused) {
  options_.allowed_local_media_path.clear();
  expect_refused("file://" + root_ + "/allowed/sub/in.png", options_, "--allowed-local-media-path");
}

TEST_F(LocalMedia, MissingFilesDirectoriesAndLargeFilesAreRefused) {
  expect_refused("file://" + root_ + "/allowed/none.png", options_, "cannot open");
  expect_refused("file://" + root_ + "/allowed/sub", options_, "not a regular file");
  options_.max_bytes = 3;
  expect_refused("file://" + root_ + "/allowed/sub/in.png", options_, "more than the limit");
  EXPECT_THROW(canonical_media_directory(root_ + "/secret.png"), ImageSourceError);
  EXPECT_THROW(canonical_media_directory(root_ + "/nothing"), ImageSourceError);
}

}  // namespace
}  // namespace pagedllm::server
