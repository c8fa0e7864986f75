// What the UDP medium is told: groups, the interface, socket sizes. The
// defaults keep every datagram on this host (interface lo, TTL 1): a feed
// crosses hosts only where an interface is named.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/wire/signature.hpp"

namespace mdcast::media::udp {

using LogFn = std::function<void(std::string_view)>;

// One rail: a multicast group and port, on an interface. A unicast address
// instead makes the rail a unicast leg, for networks that carry no
// multicast: a publisher sends to it, and the subscriber whose address it
// is binds it (one subscriber per address and port: a host's relay).
struct Rail {
  std::string group = "239.77.1.1:7470";  // GROUP:PORT
  std::string interface = "lo";           // name or IPv4 address; "" = rail A's
};

struct Options {
  Rail rail_a;
  // A second rail (A/B feed): a publisher sends every datagram on both; a
  // subscriber listens to both and the first copy wins. Empty group: none.
  Rail rail_b{"", ""};
  // Publisher: further unicast (or multicast) destinations, each sent every
  // datagram, heartbeat and announcement, out of rail A's interface: a
  // unicast leg to each subscriber host's relay where multicast does not
  // reach. At most kMaxAlsoTo.
  std::vector<std::string> also_to;
  uint16_t channel = 1;
  uint8_t ttl = 1;
  bool loop = true;            // multicast loop: needed when subscribers share the sender's host
  // The datagram size is the MTU less 28 (IPv4 + UDP headers). 0: the
  // interface's MTU, except loopback, whose 64 KiB says nothing about the
  // network a feed will cross: 1500 there.
  uint32_t mtu = 0;
  bool gso = true;             // UDP_SEGMENT where the kernel has it
  bool gro = true;             // UDP_GRO where the kernel has it
  uint32_t busy_poll_us = 0;   // SO_BUSY_POLL (0: off)
  // Peak datagrams/s: the socket buffers hold ~100 ms of it. A kernel that
  // clamps them is reported through log, naming the sysctl.
  double rate = 10'000;
  // Publisher: "" = tcp:<interface address>:<control_port>; a subscriber:
  // "" = the address the publisher announces on the group.
  std::string control;
  uint16_t control_port = 7471;  // 0: a free port (announced)
  uint64_t announce_interval_ns = 100 * kNsPerMs;
  // Publisher: signs its announcements (version 2) with this key; null:
  // unsigned. A pair's members share it.
  std::shared_ptr<const wire::SigningKey> announce_key;
  // Subscriber: follows only announcements this key signed; the rest are
  // dropped and counted (udp.announce_unsigned, udp.announce_bad_signature).
  std::optional<wire::SignPublicKey> announce_public_key;
  // Subscriber fault injection (demo, tests): rail A's datagrams are read and
  // dropped from cut_a_after_ns after start() for cut_a_for_ns (0: never).
  uint64_t cut_a_after_ns = 0;
  uint64_t cut_a_for_ns = 0;
  LogFn log;                   // warnings (clamped buffers); null: stderr, prefixed "mdcast-udp: "
  StreamServerConfig control_server;  // publisher: what one control client may cost
  // Publisher of one channel of several: its control connections come from
  // a ControlFrontDoor listening at `control`, which its announcements name;
  // null: it listens on a socket of its own.
  std::shared_ptr<ConnectionInbox> control_inbox;
};

inline constexpr size_t kMaxAlsoTo = 16;

// "239.1.2.3:7470" → group and port; a unicast "10.0.0.2:7470" too (a
// unicast leg). Throws Error naming the text.
struct GroupAddress {
  uint32_t group_be = 0;  // network byte order
  uint16_t port = 0;      // host byte order
  bool multicast = true;  // false: a unicast address
  std::string text;
  static GroupAddress parse(const std::string& s);
};

// "GROUP:PORT[@IFACE]" (the --rail-b form) → a Rail; throws Error.
[[nodiscard]] Rail parse_rail(const std::string& s);

}  // namespace mdcast::media::udp
