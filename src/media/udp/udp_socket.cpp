// Interface lookup and the multicast socket options of the UDP medium.
#include "mdcast/media/udp/udp_socket.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/udp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string_view>

#include "mdcast/core/error.hpp"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace mdcast::media::udp {
namespace {

std::string ipv4_text(uint32_t be) {
  char b[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = be;
  ::inet_ntop(AF_INET, &a, b, sizeof b);
  return b;
}

bool probe_option(int level, int name) noexcept {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  int v = level == SOL_UDP && name == UDP_SEGMENT ? 1400 : 1;
  if (::setsockopt(fd.get(), level, name, &v, sizeof v) != 0) return false;
  if (name == UDP_SEGMENT) {
    v = 0;
    ::setsockopt(fd.get(), level, name, &v, sizeof v);
  }
  return true;
}

uint64_t read_sysctl(const char* path) {
  std::ifstream f(path);
  uint64_t v = 0;
  f >> v;
  return v;
}

void set_int(int fd, int level, int name, int v, const char* what, const std::string& where) {
  if (::setsockopt(fd, level, name, &v, sizeof v) != 0) fail_errno("udp: {}: setsockopt {}", where, what);
}

}  // namespace

std::string Interface::address_text() const { return ipv4_text(address_be); }

size_t Interface::payload(uint32_t mtu_override) const noexcept {
  const uint32_t m = mtu_override ? mtu_override : (loopback ? 1500 : mtu);
  return m > 28 ? m - 28 : 0;
}

Interface find_interface(const std::string& want) {
  if (want.empty()) fail("udp: no interface given (udp.interface: a name such as eth0, or its IPv4 address)");
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) fail_errno("udp: getifaddrs");
  in_addr as_addr{};
  const bool by_address = ::inet_pton(AF_INET, want.c_str(), &as_addr) == 1;
  Interface found;
  std::string seen;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    seen += fmt::format("{}{} ({})", seen.empty() ? "" : ", ", a->ifa_name, ipv4_text(sin->sin_addr.s_addr));
    const bool match = by_address ? sin->sin_addr.s_addr == as_addr.s_addr : want == a->ifa_name;
    if (!match || found.index) continue;
    found.name = a->ifa_name;
    found.address_be = sin->sin_addr.s_addr;
    found.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    found.multicast = (a->ifa_flags & IFF_MULTICAST) != 0;
    found.index = static_cast<int>(::if_nametoindex(a->ifa_name));
  }
  ::freeifaddrs(list);
  if (!found.index)
    fail("udp: no interface '{}' with an IPv4 address here (there are: {})", want, seen.empty() ? "none" : seen);
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq r{};
  std::snprintf(r.ifr_name, sizeof r.ifr_name, "%s", found.name.c_str());
  if (!fd || ::ioctl(fd.get(), SIOCGIFMTU, &r) != 0) fail_errno("udp: interface {}: reading its MTU", found.name);
  found.mtu = static_cast<uint32_t>(r.ifr_mtu);
  if (!found.loopback && !found.multicast)
    fail("udp: interface {} ({}) does not do multicast (no MULTICAST flag: `ip link set {} multicast on`)",
         found.name, found.address_text(), found.name);
  return found;
}

bool kernel_has_gso() noexcept {
  static const bool has = probe_option(SOL_UDP, UDP_SEGMENT);
  return has;
}
bool kernel_has_gro() noexcept {
  static const bool has = probe_option(SOL_UDP, UDP_GRO);
  return has;
}

void warn(const Options& o, const std::string& text) {
  if (o.log)
    o.log(text);
  else
    fmt::print(stderr, "mdcast-udp: {}\n", text);
}

uint64_t buffer_bytes_for(double rate, size_t datagram_bytes) noexcept {
  // What the kernel charges a buffer for one datagram: its payload, headers
  // and the socket buffer's own bookkeeping (truesize), ~1 KiB beyond the bytes.
  const double per = static_cast<double>(datagram_bytes + 1024);
  return std::max<uint64_t>(static_cast<uint64_t>(rate * 0.1 * per), 256u << 10);
}

void size_buffer(int fd, bool receive, const Options& o, size_t datagram_bytes, const std::string& what) {
  const uint64_t want = buffer_bytes_for(o.rate, datagram_bytes);
  const int name = receive ? SO_RCVBUF : SO_SNDBUF;
  // The kernel doubles what it is given (its share for bookkeeping): ask for half.
  int v = static_cast<int>(std::min<uint64_t>(want / 2, INT32_MAX / 2));
  ::setsockopt(fd, SOL_SOCKET, name, &v, sizeof v);
  int got = 0;
  socklen_t len = sizeof got;
  ::getsockopt(fd, SOL_SOCKET, name, &got, &len);
  // A send buffer holds only what the device has not taken yet: short of
  // 100 ms it back-pressures, it loses nothing. Only a receiver is told.
  if (static_cast<uint64_t>(got) >= want || !receive) return;
  const char* sysctl = receive ? "net.core.rmem_max" : "net.core.wmem_max";
  const uint64_t max = read_sysctl(receive ? "/proc/sys/net/core/rmem_max" : "/proc/sys/net/core/wmem_max");
  warn(o, fmt::format("{}: {} is {} KiB, below the {} KiB that hold 100 ms at udp.rate {:.0f} datagrams/s: "
                      "{} = {} clamps it (raise it: sysctl -w {}={})",
                      what, receive ? "SO_RCVBUF" : "SO_SNDBUF", got / 1024, want / 1024, o.rate, sysctl, max,
                      sysctl, want / 2));
}

UniqueFd open_sender(const Interface& iface, const GroupAddress& group, const Options& o, size_t datagram_bytes) {
  const std::string where = fmt::format("sending to {} on {}", group.text, iface.name);
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) fail_errno("udp: {}: socket", where);
  if (group.multicast) {  // a unicast leg is routed as any unicast datagram
    ip_mreqn m{};
    m.imr_address.s_addr = iface.address_be;
    m.imr_ifindex = iface.index;
    if (::setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m) != 0)
      fail_errno("udp: {}: IP_MULTICAST_IF", where);
    set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, o.ttl, "IP_MULTICAST_TTL", where);
    set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, o.loop ? 1 : 0, "IP_MULTICAST_LOOP", where);
  }
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = iface.address_be;  // the source address the subscribers see
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    fail_errno("udp: {}: bind to {}", where, iface.address_text());
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = group.group_be;
  to.sin_port = htons(group.port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
    fail_errno("udp: {}: connect", where);
  size_buffer(fd.get(), false, o, datagram_bytes, where);
  return fd;
}

UniqueFd open_receiver(const Interface& iface, const GroupAddress& group, const Options& o, size_t datagram_bytes,
                       bool* gro) {
  const std::string where = group.multicast
                                ? fmt::format("joining {} on {} ({})", group.text, iface.name, iface.address_text())
                                : fmt::format("receiving unicast at {} on {}", group.text, iface.name);
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) fail_errno("udp: {}: socket", where);
  // Every subscriber on a host binds the same group and port.
  set_int(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", where);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = group.group_be;  // only this group's datagrams, not every one to the port
  local.sin_port = htons(group.port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    fail_errno("udp: {}: bind to {}{}", where, group.text,
               group.multicast ? "" : " (a unicast leg is received at an address of this host)");
  if (group.multicast) {
    ip_mreqn m{};
    m.imr_multiaddr.s_addr = group.group_be;
    m.imr_address.s_addr = iface.address_be;
    m.imr_ifindex = iface.index;
    if (::setsockopt(fd.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0)
      fail_errno("udp: {}: IP_ADD_MEMBERSHIP", where);
    // Without this a socket hears every group any socket of the host joined on that port.
    set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL", where);
  }
  set_int(fd.get(), SOL_SOCKET, SO_RXQ_OVFL, 1, "SO_RXQ_OVFL", where);
  *gro = false;
  if (o.gro && kernel_has_gro()) {
    int one = 1;
    *gro = ::setsockopt(fd.get(), SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
  }
  if (o.busy_poll_us) {
    const int us = static_cast<int>(o.busy_poll_us);
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_BUSY_POLL, &us, sizeof us) != 0)
      warn(o, fmt::format("{}: SO_BUSY_POLL {} us refused ({}): polling without it (raising it above "
                          "net.core.busy_read needs CAP_NET_ADMIN)",
                          where, us, std::strerror(errno)));
  }
  size_buffer(fd.get(), true, o, datagram_bytes, where);
  return fd;
}

int rejoin_group(int fd, int old_index, const Interface& iface, const GroupAddress& group) noexcept {
  if (!group.multicast) return 0;  // a unicast leg has no membership to renew
  ip_mreqn m{};
  m.imr_multiaddr.s_addr = group.group_be;
  m.imr_address.s_addr = iface.address_be;
  m.imr_ifindex = old_index;
  (void)::setsockopt(fd, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m);
  m.imr_ifindex = iface.index;
  if (::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) return errno;
  return 0;
}

int reset_sender(int fd, const Interface& iface) noexcept {
  ip_mreqn m{};
  m.imr_address.s_addr = iface.address_be;
  m.imr_ifindex = iface.index;
  if (::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m) != 0) return errno;
  return 0;
}

GroupAddress GroupAddress::parse(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    fail("udp: '{}' is not GROUP:PORT (e.g. 239.77.1.1:7470)", s);
  GroupAddress g;
  g.text = s;
  in_addr a{};
  const std::string host = s.substr(0, colon);
  if (::inet_pton(AF_INET, host.c_str(), &a) != 1) fail("udp: '{}' in '{}' is not an IPv4 address", host, s);
  const uint32_t h = ntohl(a.s_addr);
  if (h == INADDR_ANY || h == INADDR_BROADCAST)
    fail("udp: {} is neither a multicast group (224.0.0.0/4) nor a host's unicast address", host);
  g.multicast = IN_MULTICAST(h);
  g.group_be = a.s_addr;
  const std::string port = s.substr(colon + 1);
  unsigned long p = 0;
  size_t used = 0;
  try {
    p = std::stoul(port, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != port.size() || p == 0 || p > 65535) fail("udp: port '{}' in '{}' is not 1-65535", port, s);
  g.port = static_cast<uint16_t>(p);
  return g;
}

Rail parse_rail(const std::string& s) {
  Rail r;
  const auto at = s.find('@');
  r.group = s.substr(0, at);
  r.interface = at == std::string::npos ? "" : s.substr(at + 1);
  (void)GroupAddress::parse(r.group);  // fail early, with the text
  return r;
}

}  // namespace mdcast::media::udp
