// announce: a forged control-address announcement on a UDP feed's group,
// every interval, naming a TCP listener of our own that either never answers
// (--silent: accepts and holds the connection), accepts and closes at once
// (--close), or answers each hello with a challenge it cannot prove
// (--refuse: what an impostor can say to a subscriber that authenticates).
// What a subscriber that follows the first address it hears would be
// captured by (docs/security.md, 3a).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "attack.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/udp/udp_announce.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::attack {

int announce(const AnnounceArgs& a) {
  const auto colon = a.group.rfind(':');
  if (colon == std::string::npos) fail("announce: group {} is not ADDRESS:PORT", a.group);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(std::stoul(a.group.substr(colon + 1))));
  if (::inet_pton(AF_INET, a.group.substr(0, colon).c_str(), &to.sin_addr) != 1) fail("announce: bad group {}", a.group);

  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in at{};
  at.sin_family = AF_INET;
  ::inet_pton(AF_INET, a.listen_ip.c_str(), &at.sin_addr);
  socklen_t len = sizeof at;
  if (!listener || ::bind(listener.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 ||
      ::listen(listener.get(), 256) != 0 || ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&at), &len) != 0)
    fail("announce: listening on {}: {}", a.listen_ip, std::strerror(errno));
  const std::string mine = fmt::format("tcp:{}:{}", a.listen_ip, ntohs(at.sin_port));

  UniqueFd tx(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  in_addr iface{};
  ::inet_pton(AF_INET, a.interface_ip.c_str(), &iface);
  const unsigned char loop = 1, ttl = 0;
  if (!tx || ::setsockopt(tx.get(), IPPROTO_IP, IP_MULTICAST_IF, &iface, sizeof iface) != 0 ||
      ::setsockopt(tx.get(), IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop) != 0 ||
      ::setsockopt(tx.get(), IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl) != 0)
    fail("announce: sending socket on {}: {}", a.interface_ip, std::strerror(errno));
  const auto datagram = media::udp::encode_announcement({a.channel, a.session, mine});

  fmt::print("ready announcing {} on {} every {} ms ({})\n", mine, a.group, a.interval_ms,
             a.close ? "close" : a.refuse ? "refuse" : "silent");
  std::fflush(stdout);
  std::vector<UniqueFd> held;  // --silent, --refuse: connections accepted and kept
  std::vector<bool> challenged;
  uint64_t sent = 0, accepted = 0, send_errors = 0, challenges = 0;
  const uint64_t t0 = monotonic_ns();
  uint64_t next = t0;
  while (!g_stop && ms_since(t0) < static_cast<uint64_t>(a.seconds * 1000)) {
    const uint64_t now = monotonic_ns();
    if (now >= next) {
      next = now + a.interval_ms * kNsPerMs;
      if (::sendto(tx.get(), datagram.data(), datagram.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0)
        ++send_errors;
      else
        ++sent;
    }
    for (;;) {
      UniqueFd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) break;
      if (accepted++ == 0) {
        fmt::print("first connection accepted after {} ms\n", ms_since(t0));
        std::fflush(stdout);
      }
      if (!a.close) {  // --close: the UniqueFd closes it here
        held.push_back(std::move(c));
        challenged.push_back(false);
      }
    }
    // --refuse: each hello gets a challenge with a proof made of nothing.
    for (size_t i = 0; a.refuse && i < held.size(); ++i) {
      std::byte hdr[wire::ctl::kHeaderSize];
      if (challenged[i] || ::recv(held[i].get(), hdr, sizeof hdr, MSG_PEEK | MSG_DONTWAIT) != sizeof hdr) continue;
      const uint32_t rid = load_le<uint32_t>(hdr + wire::ctl::kRequestId);
      wire::AuthChallenge ch{wire::random_nonce(), {}};
      const auto f = wire::encode_auth(rid, ch);
      if (::send(held[i].get(), f.data(), f.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(f.size())) ++challenges;
      challenged[i] = true;
    }
    sleep_ms(1);
  }
  Report()
      .add("endpoint", mine)
      .add("announcements", sent)
      .add("send_errors", send_errors)
      .add("accepted", accepted)
      .add("challenges", challenges)
      .print();
  return 0;
}

}  // namespace mdcast::attack
