// The media this build knows, by name: an application that takes its medium
// from settings (a TOML file, flags: settings.hpp) binds it here, and is a
// template over an entry's types from then on. `mdcast publish|subscribe|
// demo|bench` are such templates; nothing else in them names a medium.
//
//   settings::with_medium(s.feed.medium, [&](auto entry) {
//     using E = decltype(entry);
//     auto medium = E::publisher(s, session);   // std::unique_ptr<E::Publisher>
//     ...
//   });
//
// An entry holds its medium's types (Publisher, Subscriber, and Door: the one
// control endpoint a publisher of several channels listens on), how the
// settings map onto its options, how channel index k of a feed differs, and
// what only the medium can tell the rest of the library: the doctor its
// rules (doctor_facts), `stat --clean` the rings it leaves (left_rings).
// This is the one file outside a medium's folder that names it (besides the
// bench's raw baselines; scripts/check-medium-names.sh keeps it so).
// Adding a medium: its folder (media/<name>/, its counter sections in
// <name>_catalogue.hpp), its settings section (settings.hpp, keys.cpp), an
// entry here and one line each in with_medium(), for_each_medium() and
// counter_catalogue().
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/error.hpp"
#include "mdcast/doctor/doctor.hpp"
#include "mdcast/media/mem/mem_catalogue.hpp"
#include "mdcast/media/shm/shm_catalogue.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/media/udp/udp_catalogue.hpp"
#include "mdcast/media/udp/udp_medium.hpp"
#include "mdcast/media/verbs/verbs_catalogue.hpp"
#include "mdcast/settings/settings.hpp"
#include "mdcast/stats/catalogue.hpp"
#include "mdcast/stats/clean.hpp"
#ifdef MDCAST_HAVE_VERBS
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#endif

namespace mdcast::settings {

using SettingPairs = std::vector<std::pair<std::string, std::string>>;

// Channel index k's address from the feed's: the IPv4 address (of
// "A.B.C.D[:PORT[@IF]]") plus k; refused where it would leave the multicast
// range.
std::string next_group(const std::string& group, uint32_t index, std::string_view key);

// The settings of channel index k of the feed: its channel id, and the
// medium's own addresses (E::to_channel). A publisher's channels share one
// control endpoint (E::Door), so the control address is the feed's.
template <class E>
Settings channel_settings(const Settings& s, uint32_t index) {
  Settings c = s;
  c.feed.channel = static_cast<uint16_t>(s.feed.channel + index);
  c.feed.channel_index = index;
  E::to_channel(c, index);
  return c;
}

// A shared stream control endpoint for a publisher's channels, bounded as
// each channel's server would bound its un-admitted connections.
inline media::FrontDoorConfig door_config(const Settings& s) {
  media::FrontDoorConfig fc;
  fc.max_pending = s.control_server.max_unadmitted * std::max<uint32_t>(1, s.feed.channels);
  fc.first_frame_timeout_ns = s.control_server.unadmitted_timeout_ns;
  fc.peers = s.control_server.peers;
  return fc;
}

#ifdef MDCAST_HAVE_VERBS
// The [control] settings as the verbs control server takes them (the same
// bounds as the stream server's, over RC).
inline media::verbs::ServerLimits verbs_limits(const media::StreamServerConfig& c) {
  media::verbs::ServerLimits l;
  l.frames_per_poll = c.frames_per_poll;
  l.frames_per_client_per_poll = c.frames_per_client_per_poll;
  l.reply_budget_bytes = c.reply_budget_bytes;
  l.writable_calls_per_poll = c.writable_calls_per_poll;
  l.max_clients = c.max_clients;
  l.max_clients_per_peer = c.max_clients_per_peer;
  l.allow = c.peers.allow;
  l.max_unadmitted = c.max_unadmitted;
  l.max_frame_unadmitted = c.max_frame_unadmitted;
  l.max_frame_admitted = c.max_frame_admitted;
  l.unadmitted_timeout_ns = c.unadmitted_timeout_ns;
  l.partial_frame_timeout_ns = c.partial_frame_timeout_ns;
  l.idle_timeout_ns = c.idle_timeout_ns;
  l.sweep_interval_ns = c.sweep_interval_ns;
  return l;
}
#endif

struct ShmEntry {
  static constexpr std::string_view kName = media::shm::kName;
  using Publisher = media::shm::PublisherMedium;
  using Subscriber = media::shm::SubscriberMedium;

  static media::shm::Options options(const Settings& s) {
    media::shm::Options o;
    o.name = ring_name(s);
    o.dir = s.shm.dir;
    o.slots = s.shm.slots;
    o.max_datagram = s.shm.max_datagram;
    o.huge_pages = s.shm.huge_pages;
    o.channel = s.feed.channel;
    o.control = s.feed.control;
    o.wait_ns = s.sub.wait_ns;
    if (const StopFlag* stop = s.feed.stop) o.cancelled = [stop] { return stop->requested(); };
    o.group = s.shm.group;
    o.max_bytes = s.shm.max_bytes;
    o.readers = s.shm.readers;
    o.publisher_user = s.shm.publisher_user;
    o.control_server = s.control_server;
    o.control_inbox = s.feed.control_inbox;
    return o;
  }
  static std::unique_ptr<Publisher> publisher(const Settings& s, uint64_t session) {
    return std::make_unique<Publisher>(options(s), session);
  }
  static std::unique_ptr<Subscriber> subscriber(const Settings& s) { return std::make_unique<Subscriber>(options(s)); }
  // A publisher's channels share one control socket, an unguessable
  // abstract name (feed.control if set) that every ring names.
  using Door = media::ControlFrontDoor;
  static std::unique_ptr<Door> open_door(const Settings& s) {
    media::shm::Options o;
    o.name = s.feed.name;
    o.control = s.feed.control;
    o.group = s.shm.group;
    return media::shm::open_control_door(o, door_config(s));
  }
  static void use_door(Settings& c, const Door& d, std::shared_ptr<media::ConnectionInbox> inbox) {
    c.feed.control = d.address();
    c.feed.control_inbox = std::move(inbox);
  }
  // Channel index k of a feed over several has its own ring, "<name>.<k>".
  static std::string ring_name(const Settings& s) {
    return media::shm::channel_ring_name(s.feed.name, s.feed.channels, s.feed.channel_index);
  }
  static void to_channel(Settings&, uint32_t) {}
  // A dead publisher's ring, for `mdcast stat --clean` (clean_options()).
  static media::LeftRings left_rings() { return media::shm::left_rings(); }
  // What a subscriber waits for, said before it waits (it may wait long).
  static std::string waiting_for(const Settings& s) {
    return fmt::format("the shm ring {} of feed '{}' (a publisher started with --name {}{} on this host{})", ring_name(s),
                       s.feed.name, s.feed.name,
                       s.feed.channels > 1 ? fmt::format(" --channels {}", s.feed.channels) : std::string(),
                       s.shm.dir.empty() ? "" : ", in " + s.shm.dir);
  }
  // What every process of a demo is told beyond the user's settings, and how
  // the demo describes where it runs.
  static SettingPairs demo_settings(const Settings&) { return {}; }
  static std::string demo_where(const Settings&) { return "shared memory"; }
};

struct UdpEntry {
  static constexpr std::string_view kName = media::udp::kName;
  using Publisher = media::udp::PublisherMedium;
  using Subscriber = media::udp::SubscriberMedium;

  static media::udp::Options options(const Settings& s) {
    media::udp::Options o;
    o.rail_a = {s.udp.group, s.udp.interface};
    if (!s.udp.rail_b.empty()) o.rail_b = media::udp::parse_rail(s.udp.rail_b);
    o.channel = s.feed.channel;
    o.ttl = s.udp.ttl;
    o.loop = s.udp.loop;
    o.mtu = s.udp.mtu;
    o.gso = s.udp.gso;
    o.gro = s.udp.gro;
    o.busy_poll_us = s.udp.busy_poll_us;
    o.rate = s.udp.rate;
    o.control = s.feed.control;
    o.control_port = s.udp.control_port;
    o.cut_a_after_ns = s.udp.cut_a_after_ns;
    o.cut_a_for_ns = s.udp.cut_a_for_ns;
    o.control_server = s.control_server;
    o.control_inbox = s.feed.control_inbox;
    return o;
  }
  static std::unique_ptr<Publisher> publisher(const Settings& s, uint64_t session) {
    return std::make_unique<Publisher>(options(s), session);
  }
  static std::unique_ptr<Subscriber> subscriber(const Settings& s) { return std::make_unique<Subscriber>(options(s)); }
  // A publisher's channels share one TCP control endpoint (feed.control, else
  // udp.control_port on rail A's interface), which every channel announces.
  using Door = media::ControlFrontDoor;
  static std::unique_ptr<Door> open_door(const Settings& s) {
    return std::make_unique<Door>(media::udp::control_listen_address(options(s)), door_config(s));
  }
  static void use_door(Settings& c, const Door& d, std::shared_ptr<media::ConnectionInbox> inbox) {
    c.feed.control = d.address();
    c.feed.control_inbox = std::move(inbox);
  }
  // Channel index k: group address + k on each rail; the control endpoint is the feed's.
  static void to_channel(Settings& s, uint32_t index) {
    if (index == 0) return;
    s.udp.group = next_group(s.udp.group, index, "udp.group");
    if (!s.udp.rail_b.empty()) s.udp.rail_b = next_group(s.udp.rail_b, index, "udp.rail_b");
  }
  static std::string waiting_for(const Settings& s) {
    return fmt::format("datagrams on UDP multicast {} on {}{} (channel {}), control {}", s.udp.group, s.udp.interface,
                       s.udp.rail_b.empty() ? "" : " and rail B " + s.udp.rail_b, s.feed.channel,
                       s.feed.control.empty() ? "as the publisher announces it" : s.feed.control);
  }
  // The demo's processes share this host: the publisher takes a free control
  // port (its subscribers hear it announced), and a demo on the default group
  // a port of its own, so two demos never hear each other.
  static std::string demo_group(const Settings& s) {
    if (s.udp.group != UdpSettings{}.group) return s.udp.group;
    return fmt::format("239.77.1.1:{}", 20000 + ::getpid() % 20000);
  }
  static SettingPairs demo_settings(const Settings& s) {
    SettingPairs p{{"udp.group", demo_group(s)}};
    if (s.feed.control.empty()) p.emplace_back("udp.control_port", "0");
    return p;
  }
  static std::string demo_where(const Settings& s) {
    return fmt::format("UDP multicast {} on {}{}", demo_group(s), s.udp.interface,
                       s.udp.rail_b.empty() ? "" : ", rail B " + s.udp.rail_b);
  }
  // The udp settings in the medium's own syntax, refused with its message
  // (keys.cpp checks a value as it is set; the doctor wants rail B's interface).
  static void check_group(const std::string& v) { (void)media::udp::GroupAddress::parse(v); }
  static void check_rail(const std::string& v) { (void)media::udp::parse_rail(v); }
  static std::string rail_interface(const std::string& rail) { return media::udp::parse_rail(rail).interface; }
  // What the doctor judges by: the medium's own rules, not a copy of them.
  static void doctor_facts(doctor::MediumFacts& f) {
    f.interface_with_address = [](const std::string& a) { return media::udp::find_interface(a).name; };
    f.datagram_bytes = [](uint32_t mtu, bool loopback, uint32_t mtu_setting) {
      media::udp::Interface i;
      i.mtu = mtu;
      i.loopback = loopback;
      return i.payload(mtu_setting);
    };
    f.receive_buffer_bytes = [](double rate, size_t bytes) { return media::udp::buffer_bytes_for(rate, bytes); };
  }
};

#ifdef MDCAST_HAVE_VERBS
struct VerbsEntry {
  static constexpr std::string_view kName = media::verbs::kName;
  using Publisher = media::verbs::PublisherMedium;
  using Subscriber = media::verbs::SubscriberMedium;

  static media::verbs::Options options(const Settings& s) {
    media::verbs::Options o;
    o.device = s.verbs.device;
    o.port = s.verbs.port;
    o.gid_index = s.verbs.gid_index;
    o.local_ip = s.verbs.local_ip;
    o.group_ip = s.verbs.group;
    o.qkey = s.verbs.qkey;
    o.control_ip = s.verbs.control_ip;
    o.control_port = s.verbs.control_port;
    o.channel = s.feed.channel;
    o.control_inbox = s.verbs.control_inbox;
    o.control_limits = verbs_limits(s.control_server);
    o.adaptive = s.feed.idle == IdleMode::kBlock;
    // The ring holds unfiltered datagrams and its key is advertised when the
    // RC connection is accepted, before any handshake: READ would bypass
    // authentication and entitlements.
    o.rdma_read = s.verbs.rdma_read && s.pub.secrets.empty();
    o.rate = s.verbs.rate;
    o.retransmit_bytes = s.pub.retransmit_bytes;
    if (!s.verbs.log_setup) o.log = [](std::string_view) {};  // failures still surface as errors and counters
    return o;
  }
  static std::unique_ptr<Publisher> publisher(const Settings& s, uint32_t) {
    media::verbs::Options o = options(s);
    if (!s.pub.secrets.empty() && s.verbs.rdma_read) {
      constexpr std::string_view kWhy =
          "secrets configured: RDMA READ of the retransmit ring is off (it would bypass authentication and "
          "entitlements); retransmissions go through the control plane";
      if (o.log)
        o.log(kWhy);
      else
        fmt::print(stderr, "mdcast-verbs: {}\n", kWhy);
    }
    return std::make_unique<Publisher>(std::move(o));
  }
  static std::unique_ptr<Subscriber> subscriber(const Settings& s) { return std::make_unique<Subscriber>(options(s)); }
  // A publisher's channels share one RC listener (verbs.control_ip:port):
  // it moves each connection request onto the event channel of the channel
  // the client's hello names.
  using Door = media::verbs::VerbsFrontDoor;
  static std::unique_ptr<Door> open_door(const Settings& s) { return std::make_unique<Door>(options(s)); }
  static void use_door(Settings& c, const Door& d, std::shared_ptr<media::verbs::RequestInbox> inbox) {
    c.verbs.control_port = d.port();
    c.verbs.control_inbox = std::move(inbox);
  }
  // Channel index k: its own UD QP on group address + k; the RC control
  // endpoint is the feed's (verbs.control_port), whatever the channel.
  static void to_channel(Settings& s, uint32_t index) {
    if (index == 0) return;
    s.verbs.group = next_group(s.verbs.group, index, "verbs.group");
  }
  static std::string waiting_for(const Settings& s) {
    return fmt::format("datagrams on RDMA multicast group {} with QKey {:#010x}{}{} (channel {}), control {}:{}", s.verbs.group,
                       s.verbs.qkey, s.verbs.device.empty() ? "" : " on " + s.verbs.device,
                       s.verbs.local_ip.empty() ? "" : " at " + s.verbs.local_ip, s.feed.channel,
                       s.verbs.control_ip.empty() ? "(unset)" : s.verbs.control_ip, s.verbs.control_port);
  }
  // Every process of the demo runs on this host's RDMA device: the publisher
  // listens on its address, the subscribers connect to it.
  static SettingPairs demo_settings(const Settings& s) {
    const std::string ip = media::verbs::resolve_options(options(s), true).local_ip;
    return {{"verbs.local_ip", ip}, {"verbs.control_ip", ip}};
  }
  static std::string demo_where(const Settings& s) {
    return "RDMA (UD multicast data, RC control) on " + media::verbs::resolve_options(options(s), true).local_ip;
  }
  // What the doctor cannot read from sysfs (MTU, multicast limits), from the
  // medium's own enumeration, so that the two never disagree.
  static_assert(doctor::kRdmaCmQKey == media::verbs::kDefaultQKey, "the doctor names the medium's default QKey");
  static void doctor_facts(doctor::MediumFacts& f) {
    f.verbs_ports = [] {
      std::vector<doctor::VerbsPort> out;
      for (const auto& p : media::verbs::query_ports()) {
        doctor::VerbsPort v;
        v.device = p.info.name;
        v.port = p.info.port;
        v.active_mtu = p.info.mtu_bytes;
        v.max_mtu = p.max_mtu_bytes;
        v.max_mcast_grp = p.info.max_mcast_grp;
        v.max_mcast_qp_attach = p.info.max_mcast_qp_attach;
        v.max_total_mcast_qp_attach = p.info.max_total_mcast_qp_attach;
        v.error = p.error;
        out.push_back(std::move(v));
      }
      return out;
    };
  }
};
#endif

// "auto": on one host shared memory beats any network medium; verbs and UDP
// reach other hosts and are chosen explicitly.
[[nodiscard]] inline MediumKind resolve_medium(MediumKind m) noexcept {
  return m == MediumKind::kAuto ? MediumKind::kShm : m;
}

// Calls f(Entry{}) with the registry entry of medium m (after resolving
// "auto"). Throws Error for a medium this build does not have.
template <class F>
decltype(auto) with_medium(MediumKind m, F&& f) {
  switch (resolve_medium(m)) {
    case MediumKind::kShm: return f(ShmEntry{});
    case MediumKind::kUdp: return f(UdpEntry{});
#ifdef MDCAST_HAVE_VERBS
    case MediumKind::kVerbs: return f(VerbsEntry{});
#endif
    default: break;
  }
  fail("medium '{}' is not available in this build (available: shm, udp{})", to_string(m),
#ifdef MDCAST_HAVE_VERBS
       ", verbs"
#else
       ""
#endif
  );
}

// Calls f(Entry{}) for each medium of this build, in with_medium()'s order.
template <class F>
void for_each_medium(F&& f) {
  f(ShmEntry{});
  f(UdpEntry{});
#ifdef MDCAST_HAVE_VERBS
  f(VerbsEntry{});
#endif
}

// What `mdcast stat --clean` removes of a dead publisher beyond its
// counters file: the rings of a medium that leaves them (stats/clean.hpp).
[[nodiscard]] inline stats::CleanOptions clean_options() {
  stats::CleanOptions o;
  for_each_medium([&](auto entry) {
    using E = decltype(entry);
    if constexpr (requires { E::left_rings(); }) o.rings = E::left_rings();
  });
  return o;
}

// Every counter a counters file of this library can hold: the engines' and
// each medium's (its folder's counter_catalogue()). Media this build lacks
// (verbs without rdma-core) and the in-memory one of the tests are here too,
// so that any mdcast process's file is explained.
[[nodiscard]] inline stats::Catalogue counter_catalogue() {
  stats::Catalogue c = stats::Catalogue::engines();
  c.add(media::shm::counter_catalogue());
  c.add(media::udp::counter_catalogue());
  c.add(media::verbs::counter_catalogue());
  c.add(media::mem::counter_catalogue());
  return c;
}

}  // namespace mdcast::settings
