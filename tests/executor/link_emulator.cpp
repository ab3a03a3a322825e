// A network link with latency and a rate, in user space, for kernels without sch_netem (the
// two-namespace TP runs, tp_netns.sh). It creates two TUN devices and copies every IP packet
// read from one to the other, the way `tc qdisc add ... netem delay D rate R` shapes a link:
// a packet waits behind the packets queued before it in its direction, takes bytes x 8 / R to
// "leave", and arrives D after that. The caller moves each device into its namespace and gives
// it an address once this prints "ready".
//
// usage: link_emulator --tun-a NAME --tun-b NAME [--delay-us D] [--rate-mbit R] [--mtu N]
// Runs until SIGINT or SIGTERM. As root (TUN devices); with SCHED_FIFO where allowed, so that a
// packet due now is not held behind the ranks' polling threads on a machine of few cores.
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

volatile std::sig_atomic_t g_stop = 0;

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// One TUN device (IP packets, no packet-info header), non-blocking.
int open_tun(const std::string& name) {
  const int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open /dev/net/tun: " + std::string(strerror(errno)));
  ifreq request{};
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", name.c_str());
  if (ioctl(fd, TUNSETIFF, &request) < 0)
    throw std::runtime_error("cannot create TUN device " + name + ": " + strerror(errno));
  return fd;
}

// One direction of the link: packets in flight with the time each arrives at the far end.
class Direction {
 public:
  Direction(int64_t delay_ns, double ns_per_byte)
      : delay_ns_(delay_ns), ns_per_byte_(ns_per_byte) {}

  void admit(std::vector<uint8_t> packet, int64_t arrival_ns) {
    ++packets_;
    bytes_ += packet.size();
    // Serialization behind the packets still leaving, then the propagation delay.
    const int64_t start = std::max(arrival_ns, line_free_ns_);
    line_free_ns_ = start + static_cast<int64_t>(ns_per_byte_ * static_cast<double>(packet.size()));
    in_flight_.push_back({line_free_ns_ + delay_ns_, std::move(packet)});
  }

  // Writes every packet due by NOW to FD; returns the next packet's due time, or -1.
  int64_t deliver_due(int fd, int64_t now) {
    while (!in_flight_.empty() && in_flight_.front().due_ns <= now) {
      const std::vector<uint8_t>& bytes = in_flight_.front().bytes;
      // A full device queue drops the packet, as a full link would; TCP resends it.
      if (write(fd, bytes.data(), bytes.size()) < 0) ++dropped_;
      in_flight_.pop_front();
    }
    return in_flight_.empty() ? -1 : in_flight_.front().due_ns;
  }

  uint64_t packets() const { return packets_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Packet {
    int64_t due_ns;
    std::vector<uint8_t> bytes;
  };
  int64_t delay_ns_;
  double ns_per_byte_;
  int64_t line_free_ns_ = 0;
  uint64_t packets_ = 0, bytes_ = 0, dropped_ = 0;
  std::deque<Packet> in_flight_;
};

// Reads every packet waiting on FD into DIRECTION.
void read_all(int fd, Direction& direction, size_t mtu) {
  std::vector<uint8_t> buffer(mtu + 64);
  for (;;) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n <= 0) return;
    direction.admit(std::vector<uint8_t>(buffer.begin(), buffer.begin() + n), now_ns());
  }
}

void run(int fd_a, int fd_b, int64_t delay_ns, double rate_mbit, size_t mtu) {
  const double ns_per_byte = rate_mbit > 0 ? 8e3 / rate_mbit : 0.0;
  Direction a_to_b(delay_ns, ns_per_byte), b_to_a(delay_ns, ns_per_byte);
  while (!g_stop) {
    const int64_t now = now_ns();
    int64_t next = -1;
    for (const int64_t due : {a_to_b.deliver_due(fd_b, now), b_to_a.deliver_due(fd_a, now)})
      if (due >= 0 && (next < 0 || due < next)) next = due;
    timespec wait{};
    if (next >= 0) {
      const int64_t left = std::max<int64_t>(0, next - now_ns());
      wait = {static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
    } else {
      wait.tv_sec = 1;
    }
    pollfd fds[2] = {{fd_a, POLLIN, 0}, {fd_b, POLLIN, 0}};
    if (ppoll(fds, 2, &wait, nullptr) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) read_all(fd_a, a_to_b, mtu);
    if (fds[1].revents & POLLIN) read_all(fd_b, b_to_a, mtu);
  }
  // What went over the link, for the benchmarks' accounts (messages per token).
  for (const auto& [name, d] : {std::pair{"a to b", &a_to_b}, std::pair{"b to a", &b_to_a}})
    std::fprintf(stderr, "link_emulator: %s %llu packets, %llu bytes, %llu dropped\n", name,
                 static_cast<unsigned long long>(d->packets()),
                 static_cast<unsigned long long>(d->bytes()),
                 static_cast<unsigned long long>(d->dropped()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A user-space link between two TUN devices, with netem's delay and rate"};
  std::string tun_a, tun_b;
  double delay_us = 0, rate_mbit = 0;
  size_t mtu = 65000;
  bool realtime = true;
  app.add_option("--tun-a", tun_a, "First TUN device to create")->required();
  app.add_option("--tun-b", tun_b, "Second TUN device to create")->required();
  app.add_option("--delay-us", delay_us, "One-way delay in microseconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rate-mbit", rate_mbit, "Link rate in Mbit/s each way (0: unlimited)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mtu", mtu, "Largest packet read (the devices' MTU)")
      ->check(CLI::Range(576, 65535));
  app.add_flag("!--no-realtime", realtime, "Run at normal priority rather than SCHED_FIFO");
  CLI11_PARSE(app, argc, argv);
  try {
    const int fd_a = open_tun(tun_a), fd_b = open_tun(tun_b);
    std::signal(SIGINT, [](int) { g_stop = 1; });
    std::signal(SIGTERM, [](int) { g_stop = 1; });
    prctl(PR_SET_TIMERSLACK, 1UL);  // wake at the due time, not 50 us after it
    sched_param priority{};
    priority.sched_priority = 10;
    if (realtime && sched_setscheduler(0, SCHED_FIFO, &priority) != 0)
      std::fprintf(stderr, "link_emulator: no SCHED_FIFO (%s); delays may stretch under load\n",
                   strerror(errno));
    std::printf("ready\n");
    std::fflush(stdout);
    run(fd_a, fd_b, static_cast<int64_t>(delay_us * 1000), rate_mbit, mtu);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "link_emulator: %s\n", e.what());
    return 1;
  }
  return 0;
}
