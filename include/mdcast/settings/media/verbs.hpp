// The RDMA verbs medium bound to the settings ([verbs], settings/media.hpp
// says what an entry holds), where rdma-core is installed: a UD multicast
// group per channel, one RC listener for all of them. Its counter sections
// are explained in every build (verbs_catalogue.hpp needs no rdma-core).
#pragma once

#include "mdcast/media/verbs/verbs_catalogue.hpp"
#ifdef MDCAST_HAVE_VERBS
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/doctor/doctor.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "mdcast/settings/media/binding.hpp"

namespace mdcast::settings {

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

}  // namespace mdcast::settings
#endif
