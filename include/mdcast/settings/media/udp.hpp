// The UDP multicast medium bound to the settings ([udp], settings/media.hpp
// says what an entry holds): a group per channel on rail A (and B), one TCP
// control endpoint, and what the doctor and keys.cpp take from the medium.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mdcast/core/error.hpp"
#include "mdcast/doctor/doctor.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/media/udp/udp_catalogue.hpp"
#include "mdcast/media/udp/udp_medium.hpp"
#include "mdcast/settings/media/binding.hpp"
#include "mdcast/wire/signature.hpp"

namespace mdcast::settings {

struct UdpEntry {
  static constexpr std::string_view kName = media::udp::kName;
  using Publisher = media::udp::PublisherMedium;
  using Subscriber = media::udp::SubscriberMedium;

  static media::udp::Options options(const Settings& s) {
    media::udp::Options o;
    o.rail_a = {s.udp.group, s.udp.interface};
    if (!s.udp.rail_b.empty()) o.rail_b = media::udp::parse_rail(s.udp.rail_b);
    o.also_to = s.udp.also_to;
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
    if (!s.udp.announce_key_file.empty()) o.announce_key = announce_key(s.udp.announce_key_file);
    if (!s.udp.announce_public_key.empty()) o.announce_public_key = wire::parse_public_key(s.udp.announce_public_key);
    o.cut_a_after_ns = s.udp.cut_a_after_ns;
    o.cut_a_for_ns = s.udp.cut_a_for_ns;
    o.control_server = s.control_server;
    o.control_inbox = s.feed.control_inbox;
    return o;
  }
  // The Ed25519 key a secrets-file line's secret seeds (the file's checks are
  // the secrets file's: owner, mode, size).
  static std::shared_ptr<const wire::SigningKey> announce_key(const std::string& path) {
    return with_context("udp.announce_key_file", [&] {
      const feed::ClientSecret line = feed::ClientSecret::load(path);
      return std::make_shared<const wire::SigningKey>(line.key().view());
    });
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
    use_stream_door(c, d, std::move(inbox));
  }
  // A pair member's view of its peer (pair.peer: the peer's rail): a
  // subscriber of that rail alone, following the peer's announcement, which
  // the members sign with the key they share (udp.announce_key_file) - so
  // the member follows only its peer's.
  static Settings peer_settings(const Settings& s) {
    Settings p = s;
    const media::udp::Rail rail = media::udp::parse_rail(s.pair.peer);
    p.udp.group = rail.group;
    if (!rail.interface.empty()) p.udp.interface = rail.interface;
    p.udp.rail_b.clear();
    p.feed.control.clear();
    if (!s.udp.announce_key_file.empty())
      p.udp.announce_public_key = wire::format_public_key(announce_key(s.udp.announce_key_file)->public_key());
    return p;
  }
  // Channel index k: group address + k on each rail; the control endpoint is the feed's.
  static void to_channel(Settings& s, uint32_t index) {
    if (index == 0) return;
    s.udp.group = next_group(s.udp.group, index, "udp.group");
    if (!s.udp.rail_b.empty()) s.udp.rail_b = next_group(s.udp.rail_b, index, "udp.rail_b");
  }
  static std::string waiting_for(const Settings& s) {
    return fmt::format("datagrams on UDP {} {} on {}{} (channel {}), control {}",
                       media::udp::GroupAddress::parse(s.udp.group).multicast ? "multicast" : "unicast", s.udp.group,
                       s.udp.interface,
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

}  // namespace mdcast::settings
