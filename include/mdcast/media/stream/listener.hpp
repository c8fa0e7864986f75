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
#include "mdcast/media/peer.hpp"

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
//
// It keeps one descriptor in reserve (/dev/null, opened at start): at the
// open-files limit accept() gives the reserve up to take the connection
// anyway, so that its owner can make room (close an idle connection) or
// tell the client why it is turned away, instead of leaving it in the
// backlog while idle sockets hold every descriptor.
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
  // Who may connect (peer.hpp): anyone else is closed as it is accepted.
  void admit_only(PeerPolicy p) { peers_ = std::move(p); }
  [[nodiscard]] const PeerPolicy& peers() const noexcept { return peers_; }
  // accept4, non-blocking, TCP_NODELAY on TCP. -1 with errno as accept4
  // left it, or EACCES: a peer the policy refuses came and was closed.
  // on_reserve() is true after a connection taken on the reserve
  // descriptor: the process is at its limit, and the caller closes one
  // (this or another) before it accepts again.
  [[nodiscard]] int accept() noexcept;
  [[nodiscard]] bool on_reserve() const noexcept { return on_reserve_; }

 private:
  UniqueFd fd_;
  UniqueFd reserve_;
  PeerPolicy peers_;
  bool on_reserve_ = false;
  int family_ = 0;
  std::string address_;
  std::string unlink_path_;
};

}  // namespace mdcast::media
