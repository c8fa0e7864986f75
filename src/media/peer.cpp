// Control peers checked at accept (peer.hpp).
#include "mdcast/media/peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "mdcast/core/error.hpp"

namespace mdcast::media {

Ipv4Network Ipv4Network::parse(std::string_view text, std::string_view what) {
  Ipv4Network n;
  const auto slash = text.find('/');
  const std::string host(text.substr(0, slash));
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1)
    fail("{}: '{}' is not an IPv4 network (a.b.c.d or a.b.c.d/prefix)", what, text);
  if (slash != std::string_view::npos) {
    const std::string_view p = text.substr(slash + 1);
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (ec != std::errc() || end != p.data() + p.size() || v > 32 || p.empty())
      fail("{}: '{}': the prefix length must be 0..32", what, text);
    n.prefix = static_cast<uint8_t>(v);
  }
  const uint32_t mask = n.prefix == 0 ? 0 : ~uint32_t{0} << (32 - n.prefix);
  n.address = ntohl(a.s_addr) & mask;
  return n;
}

bool Ipv4Network::contains(uint32_t host_order) const noexcept {
  const uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (host_order & mask) == address;
}

std::string Ipv4Network::text() const {
  in_addr a{htonl(address)};
  char buf[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a, buf, sizeof buf);
  return fmt::format("{}/{}", buf, prefix);
}

std::vector<Ipv4Network> parse_networks(std::string_view list, std::string_view what) {
  std::vector<Ipv4Network> out;
  size_t i = 0;
  while (i < list.size()) {
    const size_t end = std::min(list.find_first_of(", ", i), list.size());
    if (end > i) out.push_back(Ipv4Network::parse(list.substr(i, end - i), what));
    i = end + 1;
  }
  return out;
}

std::string format_networks(const std::vector<Ipv4Network>& nets) {
  std::string s;
  for (const auto& n : nets) s += (s.empty() ? "" : ",") + n.text();
  return s;
}

bool PeerPolicy::checks(int family) const noexcept {
  return family == AF_UNIX ? (uid || gid) : !allow.empty();
}

Peer identify_peer(int fd) noexcept {
  Peer p;
  int family = 0;
  socklen_t flen = sizeof family;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &flen) != 0) return p;
  if (family == AF_UNIX) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      p.key = cred.uid;
      p.owner = cred.uid == ::geteuid();
    }
    return p;
  }
  sockaddr_in in{};
  socklen_t len = sizeof in;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&in), &len) == 0 && in.sin_family == AF_INET)
    p.key = ntohl(in.sin_addr.s_addr);
  return p;
}

PeerInfo describe_peer(int fd) noexcept {
  PeerInfo p;
  int family = 0;
  socklen_t flen = sizeof family;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &family, &flen) != 0) return p;
  if (family == AF_UNIX) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      p.kind = PeerInfo::Kind::kUnix;
      p.pid = static_cast<uint32_t>(cred.pid);
      p.uid = cred.uid;
    }
    return p;
  }
  sockaddr_in in{};
  socklen_t len = sizeof in;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&in), &len) == 0 && in.sin_family == AF_INET) {
    p.kind = PeerInfo::Kind::kTcp;
    p.ipv4 = ntohl(in.sin_addr.s_addr);
    p.port = ntohs(in.sin_port);
  }
  return p;
}

namespace {

bool in_group(int fd, const ucred& cred, gid_t gid) noexcept {
  if (cred.gid == gid) return true;
  // The peer's supplementary groups as they were when it connected (the
  // kernel's record, not /proc, whose pid may be another process by now).
  std::array<gid_t, 256> groups{};
  socklen_t len = sizeof groups;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) != 0) return false;
  const auto n = len / sizeof(gid_t);
  return std::find(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(n), gid) != groups.begin() + static_cast<std::ptrdiff_t>(n);
}

}  // namespace

bool admits(const PeerPolicy& p, int fd, int family) noexcept {
  if (!p.checks(family)) return true;
  if (family == AF_UNIX) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
    if (cred.uid == 0 || (p.uid && cred.uid == *p.uid)) return true;
    return p.gid && in_group(fd, cred, *p.gid);
  }
  sockaddr_in in{};
  socklen_t len = sizeof in;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&in), &len) != 0 || in.sin_family != AF_INET) return false;
  const uint32_t a = ntohl(in.sin_addr.s_addr);
  return std::any_of(p.allow.begin(), p.allow.end(), [a](const Ipv4Network& n) { return n.contains(a); });
}

}  // namespace mdcast::media
