#include "server/client_connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace pagedllm::server {

namespace {

// "127.0.0.1" and 8000 for an IPv4 or IPv6 address; false for anything else.
bool address_text(const sockaddr_storage& addr, std::string& text, int& port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    if (!inet_ntop(AF_INET, &in.sin_addr, buf, sizeof buf)) return false;
    port = ntohs(in.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
    if (!inet_ntop(AF_INET6, &in6.sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(in6.sin6_port);
  } else {
    return false;
  }
  text = buf;
  return true;
}

bool has_address(int fd, int (*query)(int, sockaddr*, socklen_t*), const std::string& want_addr,
                 int want_port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (query(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  std::string text;
  int port = -1;
  return address_text(addr, text, port) && port == want_port && text == want_addr;
}

}  // namespace

ClientConnection::ClientConnection(std::string local_addr, int local_port, std::string remote_addr,
                                   int remote_port)
    : local_addr_(std::move(local_addr)),
      remote_addr_(std::move(remote_addr)),
      local_port_(local_port),
      remote_port_(remote_port) {}

bool ClientConnection::gone() {
  if (!searched_) {
    searched_ = true;
    if (DIR* dir = opendir("/proc/self/fd")) {
      while (const dirent* entry = readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        struct stat st {};
        if (fd <= 2 || fd == dirfd(dir) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
        if (has_address(fd, getpeername, remote_addr_, remote_port_) &&
            has_address(fd, getsockname, local_addr_, local_port_)) {
          fd_ = fd;
          break;
        }
      }
      closedir(dir);
    }
  }
  if (fd_ < 0) return false;  // not found: nothing to say
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  // Readable: the next request's bytes, or the end of the stream (0 bytes to peek).
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

}  // namespace pagedllm::server
