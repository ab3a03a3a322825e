// The TCP connection behind a request, seen from its handler: has the client gone away?
//
// cpp-httplib 0.11 (Debian 12's) does not hand a handler its socket, so the socket is found by
// its address pair: the one descriptor of this process whose local and peer addresses are the
// request's. It stays valid while the handler runs, since httplib closes it only afterwards.
#pragma once

#include <string>

namespace pagedllm::server {

class ClientConnection {
 public:
  // Finds the connection lazily, on the first gone() call (most requests never ask).
  ClientConnection(std::string local_addr, int local_port, std::string remote_addr,
                   int remote_port);

  // True once the client has closed or reset the connection. A client that has already sent
  // its next request on a kept-alive connection is still there.
  bool gone();

 private:
  std::string local_addr_, remote_addr_;
  int local_port_, remote_port_;
  int fd_ = -1;
  bool searched_ = false;
};

}  // namespace pagedllm::server
