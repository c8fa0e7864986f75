// Stream-socket addresses and the listening socket a control server or the
// shared front door (front_door.hpp) accepts on.
//
// Addresses: "unix:@name" (abstract namespace: nothing left behind by a
// crash), "unix:/path/to/socket", "tcp:host:port" (host may be an IPv4 literal
// or a name; port 0 on a server picks a free one, see address()).
#pragma once

#include <sys/socket.h>

#include <string>

#include "mdcast/core/fd.hpp"

namespace mdcast::media {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  std::string text;
  // Throws Error naming the address and what is wrong with it.
  static SocketAddress parse(const std::string& address);
};

// A bound, listening, non-blocking socket; a Unix socket's path is removed
// again when it goes. Move-only.
class StreamListener {
 public:
  StreamListener() = default;
  // Throws Error naming the address and errno ("what" says whose it is).
  StreamListener(const std::string& address, std::string_view what);
  StreamListener(StreamListener&& o) noexcept;
  StreamListener& operator=(StreamListener&& o) noexcept;
  ~StreamListener();

  [[nodiscard]] int fd() const noexcept { return fd_.get(); }
  [[nodiscard]] int family() const noexcept { return family_; }
  // As given, or "tcp:host:port" with the port the kernel picked.
  [[nodiscard]] const std::string& address() const noexcept { return address_; }
  // accept4, non-blocking, TCP_NODELAY on TCP. -1 with errno as accept4 left it.
  [[nodiscard]] int accept() const noexcept;

 private:
  UniqueFd fd_;
  int family_ = 0;
  std::string address_;
  std::string unlink_path_;
};

}  // namespace mdcast::media
