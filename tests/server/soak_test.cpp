// The soak test: 256 clients send a mixed workload to a live server for a while (normal and
// streamed completions and chats, n > 1, clients that hang up mid-stream, malformed JSON,
// oversize prompts, more requests than the waiting queue holds), then the server must have
// answered every request properly, kept its memory, and gone back to idle.
//
// Duration: $PAGEDLLM_SOAK_SECONDS (default 60; `make soak SOAK_SECONDS=1800` for a long run).
#include <sys/types.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>

#include "sanitizer_build.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

#if defined(PAGEDLLM_TEST_ASAN)
// AddressSanitizer holds freed memory in quarantine and runs several times slower: a shorter
// run, and no judgement of RSS.
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

int soak_seconds() {
  const char* env = std::getenv("PAGEDLLM_SOAK_SECONDS");
  return env ? std::max(10, std::atoi(env)) : kSanitized ? 30 : 60;
}

// CPU time (user + system ticks) of every thread of a process.
int64_t cpu_ticks(pid_t pid) {
  int64_t total = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string f;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14 || i == 15) total += std::stoll(f);  // utime, stime
    }
  }
  return total;
}

// What a client saw, by kind; any "bad" entry fails the test with its example.
class Tally {
 public:
  void add(const std::string& kind) {
    std::lock_guard lock(mutex_);
    ++counts_[kind];
  }
  void bad(const std::string& what) {
    std::lock_guard lock(mutex_);
    ++counts_["bad"];
    if (examples_.size() < 10) examples_.push_back(what);
  }
  std::map<std::string, int64_t> counts() const {
    std::lock_guard lock(mutex_);
    return counts_;
  }
  std::vector<std::string> examples() const {
    std::lock_guard lock(mutex_);
    return examples_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> counts_;
  std::vector<std::string> examples_;
};

// Set when this client's last request got 503: it then waits as Retry-After asks, as OpenAI
// clients do, rather than hammering the queue.
thread_local bool told_to_retry = false;

bool is_openai_error(const ojson& j) {
  return j.is_object() && j.contains("error") && j["error"].is_object() &&
         j["error"].contains("message") && j["error"].contains("type");
}

// A refusal must be a 4xx or a 503 with an OpenAI error body.
void check_refusal(Tally& t, const std::string& what, int status, const std::string& body) {
  const ojson j = ojson::parse(body, nullptr, false);
  if ((status >= 400 && status < 500) || status == 503) {
    if (is_openai_error(j)) {
      t.add(status == 503 ? "overloaded" : "refused");
      told_to_retry = status == 503;
      return;
    }
    t.bad(what + ": " + std::to_string(status) +
          " without an OpenAI error body: " + body.substr(0, 200));
    return;
  }
  t.bad(what + ": status " + std::to_string(status) + " " + body.substr(0, 200));
}

// A streamed request read to the end, or hung up on after `hang_up_after` events.
void stream_request(const ServerProcess& s, Tally& t, const std::string& path, const ojson& body,
                    int hang_up_after) {
  const StreamReply r = post_stream(s, path, body, [hang_up_after](const std::vector<ojson>& ev) {
    return hang_up_after == 0 || static_cast<int>(ev.size()) < hang_up_after;
  });
  if (r.cut) {
    t.add("hung up");
  } else if (r.status == 200) {
    r.done ? t.add("streamed") : t.bad(path + " stream ended without [DONE] (" + r.error + ")");
  } else if (r.status <= 0) {
    t.bad(path + " stream: connection failed: " + r.error);
  } else {
    check_refusal(t, path + " stream", r.status, r.rest);
  }
}

void plain_request(const ServerProcess& s, Tally& t, const std::string& path,
                   const std::string& body, int n, bool well_formed) {
  const HttpReply r = post(s, path, body);
  if (r.status == 0) {
    t.bad(path + ": connection failed: " + r.error);
  } else if (r.status == 200 && well_formed) {
    const bool usage = r.json.is_object() && r.json.contains("usage") &&
                       r.json["usage"]["completion_tokens"].get<int>() > 0 &&
                       r.json["choices"].size() == static_cast<size_t>(n);
    usage ? t.add("completed") : t.bad(path + ": 200 without choices or usage: " + r.body);
  } else if (r.status == 200) {
    t.bad(path + ": a malformed request got 200");
  } else {
    check_refusal(t, path, r.status, r.body);
  }
}

void one_request(const ServerProcess& s, Tally& t, std::mt19937& rng) {
  const int kind = static_cast<int>(rng() % 10);
  const int max_tokens = 4 + static_cast<int>(rng() % 60);
  const ojson completion = {{"prompt", "Once upon a time " + std::to_string(rng() % 1000)},
                            {"max_tokens", max_tokens}};
  const ojson chat = {
      {"messages", {{{"role", "user"}, {"content", "Tell me about " + std::to_string(rng())}}}},
      {"max_tokens", max_tokens}};
  switch (kind) {
    case 0:
    case 1:
      return plain_request(s, t, "/v1/completions", completion.dump(), 1, true);
    case 2: {
      ojson two = completion;
      two["n"] = 2;
      return plain_request(s, t, "/v1/completions", two.dump(), 2, true);
    }
    case 3:
      return plain_request(s, t, "/v1/chat/completions", chat.dump(), 1, true);
    case 4: {
      ojson streamed = completion;
      streamed["stream"] = true;
      return stream_request(s, t, "/v1/completions", streamed, 0);
    }
    case 5: {
      ojson streamed = chat;
      streamed["stream"] = true;
      return stream_request(s, t, "/v1/chat/completions", streamed, 0);
    }
    case 6: {  // hangs up after a few events
      ojson streamed = completion;
      streamed["stream"] = true;
      streamed["max_tokens"] = 200;
      return stream_request(s, t, "/v1/completions", streamed, 2 + static_cast<int>(rng() % 5));
    }
    case 7:
      return plain_request(s, t, "/v1/completions", "{\"prompt\": \"unterminated", 1, false);
    case 8:  // longer than any context
      return plain_request(s, t, "/v1/completions",
                           ojson{{"prompt", std::string(20000 + rng() % 100000, 'z')}}.dump(), 1,
                           false);
    default:
      return plain_request(s, t, "/v1/chat/completions", "{\"messages\": 7}", 1, false);
  }
}

TEST(Soak, MixedWorkloadFromTwoHundredFiftySixClientsEndsCleanAndIdle) {
  const int seconds = soak_seconds();
  ServerProcess s("--model " + stories_gguf() + " --chat-template " + chatml_template() +
                  " --threads 2 --max-model-len 256 --max-num-seqs 32 --max-waiting-requests 64 "
                  "--http-threads 512");
  Tally tally;
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  std::atomic<long> warm_rss{-1};
  std::vector<std::thread> clients;
  for (int c = 0; c < 256; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<uint32_t>(c));
      while (std::chrono::steady_clock::now() < end) {
        told_to_retry = false;
        one_request(s, tally, rng);
        if (told_to_retry) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 800));
        }
      }
    });
  }
  // The warm-up value: RSS a fifth of the way in, once every path has run many times.
  std::this_thread::sleep_until(start + std::chrono::seconds(seconds) / 5);
  warm_rss = s.rss_kib();
  long peak_rss = warm_rss;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    peak_rss = std::max(peak_rss, s.rss_kib());
  }
  for (auto& t : clients) t.join();

  const auto counts = tally.counts();
  std::string summary;
  for (const auto& [kind, n] : counts) summary += " " + kind + "=" + std::to_string(n);
  std::cerr << "soak " << seconds << " s:" << summary << "; RSS warm " << warm_rss << " KiB, peak "
            << peak_rss << " KiB\n";
  EXPECT_EQ(counts.count("bad") ? counts.at("bad") : 0, 0) << summary;
  for (const auto& e : tally.examples()) ADD_FAILURE() << e;
  for (const char* kind : {"completed", "streamed", "hung up", "refused", "overloaded"}) {
    EXPECT_GT(counts.count(kind) ? counts.at(kind) : 0, 0) << "no '" << kind << "' outcome";
  }
  if (!kSanitized) {
    EXPECT_LE(peak_rss, warm_rss * 3 / 2) << "RSS grew from " << warm_rss << " KiB";
  }

  // Back to idle: no request running or waiting, and no thread burning CPU.
  std::string m;
  for (int i = 0; i < 100; ++i) {
    m = get(s, "/metrics").body;
    if (metric(m, "pagedllm:num_requests_running") == 0 &&
        metric(m, "pagedllm:num_requests_waiting") == 0)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(metric(m, "pagedllm:num_requests_running"), 0);
  EXPECT_EQ(metric(m, "pagedllm:num_requests_waiting"), 0);
  const int64_t before = cpu_ticks(s.pid());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const int64_t busy = cpu_ticks(s.pid()) - before;
  EXPECT_LT(busy, 20) << "the idle server used " << busy << " ticks of CPU in 2 s";
  EXPECT_TRUE(get(s, "/health").status == 200);
}

}  // namespace
}  // namespace pagedllm::test
