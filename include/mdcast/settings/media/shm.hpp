// The shared-memory medium bound to the settings ([shm], settings/media.hpp
// says what an entry holds): a ring per channel, "<name>.<k>", and one
// control socket for all of them.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mdcast/media/shm/shm_catalogue.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/settings/media/binding.hpp"

namespace mdcast::settings {

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
    if (!s.shm.rail_b.empty())
      o.rail_b = media::shm::channel_ring_name(s.shm.rail_b, s.feed.channels, s.feed.channel_index);
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
    use_stream_door(c, d, std::move(inbox));
  }
  // A pair member's view of its peer (pair.peer: the peer's feed name): a
  // subscriber of the peer's ring alone, whose writer its control plane
  // proves to be (as any subscriber's).
  static Settings peer_settings(const Settings& s) {
    Settings p = s;
    p.feed.name = s.pair.peer;
    p.shm.rail_b.clear();
    p.feed.control.clear();
    p.sub.wait_ns = s.pair.join_timeout_ns;  // no peer's ring by then: no peer (the member begins a session)
    return p;
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

}  // namespace mdcast::settings
