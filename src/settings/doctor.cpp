#include "mdcast/settings/doctor.hpp"

#include <algorithm>

#include "mdcast/book/order_book.hpp"
#include "mdcast/settings/media.hpp"

namespace mdcast::settings {

doctor::Options doctor_options(const Settings& s) {
  doctor::Options o;
  switch (s.feed.medium) {
    case MediumKind::kUdp: o.medium = doctor::Medium::kUdp; break;
    case MediumKind::kVerbs: o.medium = doctor::Medium::kVerbs; break;
    default: o.medium = doctor::Medium::kShm; break;  // "auto" is shm on one host
  }
  o.shm.dir = s.shm.dir;
  o.shm.slots = s.shm.slots;
  o.shm.max_datagram = s.shm.max_datagram;
  o.shm.huge_pages = s.shm.huge_pages;
  o.udp.interface = s.udp.interface;
  if (!s.udp.rail_b.empty()) {
    const std::string rail_b = UdpEntry::rail_interface(s.udp.rail_b);
    o.udp.rail_b_interface = rail_b.empty() ? s.udp.interface : rail_b;
  }
  o.udp.mtu = s.udp.mtu;
  o.udp.rate = s.udp.rate;
  o.verbs.device = s.verbs.device;
  o.verbs.port = s.verbs.port;
  o.verbs.gid_index = s.verbs.gid_index;
  o.verbs.local_ip = s.verbs.local_ip;
  o.verbs.group = s.verbs.group;
  o.verbs.qkey = s.verbs.qkey;
  // A publisher registers its retransmit ring; a subscriber ~100 ms of
  // datagrams (at most 16384 slots of 4 KiB + GRH): the larger is what must fit.
  const auto sub_ring = static_cast<size_t>(std::clamp(s.verbs.rate / 10.0, 256.0, 16384.0)) * (4096 + 64);
  o.verbs.registered_bytes = std::max(s.pub.retransmit_bytes, sub_ring);
  // What each subscriber process of a host's fan-out holds (doctor
  // --processes N sets how many): its books and window, per channel.
  const book::BookConfig bc{s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
  o.fanout.processes = s.doctor.processes;
  o.fanout.process_bytes = s.feed.channels * (book::BookSet::footprint(bc) + s.sub.window_bytes);
  o.fanout.readers = s.shm.readers;
  o.fanout.max_clients = s.control_server.max_clients;
  o.fanout.max_clients_per_peer = s.control_server.max_clients_per_peer;
  o.fanout.max_unadmitted = s.control_server.max_unadmitted;
  o.media = doctor_media();
  return o;
}

doctor::MediumFacts doctor_media() {
  doctor::MediumFacts f;
  for_each_medium([&](auto entry) {
    using E = decltype(entry);
    if constexpr (requires { E::doctor_facts(f); }) E::doctor_facts(f);
  });
  return f;
}

}  // namespace mdcast::settings
