// Who may open a control connection, checked when it is accepted, before a
// byte of it is read (docs/security.md, "Control sockets").
//
// A Unix control socket's abstract name is not a secret: any local user can
// read it in /proc/net/unix. So the socket itself decides, by the kernel's
// word on the peer (SO_PEERCRED, SO_PEERGROUPS), the same users the ring's
// file mode admits: its owner, members of its group (shm.group), and root,
// who can read the ring anyway. A TCP control socket admits the networks
// of `control.allow`, where set.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/media/medium.hpp"

namespace mdcast::media {

struct Ipv4Network {
  uint32_t address = 0;  // host order, host bits zero
  uint8_t prefix = 32;
  // "a.b.c.d" or "a.b.c.d/n". Throws Error naming `what` and the text.
  static Ipv4Network parse(std::string_view text, std::string_view what);
  [[nodiscard]] bool contains(uint32_t host_order) const noexcept;
  [[nodiscard]] std::string text() const;
};

// "10.1.0.0/16,127.0.0.1" (commas or spaces); empty gives none.
std::vector<Ipv4Network> parse_networks(std::string_view list, std::string_view what);
std::string format_networks(const std::vector<Ipv4Network>& nets);

struct PeerPolicy {
  // Unix sockets: processes of `uid` and root are admitted, and members of
  // `gid` (primary or supplementary); with neither set, anyone.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // TCP: the networks a client may connect from; empty admits any.
  std::vector<Ipv4Network> allow;

  [[nodiscard]] bool checks(int family) const noexcept;
};

// The other end of a connected socket, as far as fair shares care.
struct Peer {
  uint64_t key = 0;     // a uid (Unix) or an IPv4 address in host order (TCP)
  bool owner = false;   // Unix: this process's own user, who could stop the publisher anyway
};

// Who is at the other end of `fd` (a Unix or TCP stream socket).
Peer identify_peer(int fd) noexcept;
// The same, as ControlHandler::on_peer tells it (with the pid and TCP port).
PeerInfo describe_peer(int fd) noexcept;
// Whether `p` admits the peer at the other end of `fd`.
bool admits(const PeerPolicy& p, int fd, int family) noexcept;

}  // namespace mdcast::media
