// The runtimes' plans from the settings: what `mdcast publish`, `replay`,
// `relay`, `subscribe` and `record` hand runtime::PublisherRuntime and
// runtime::SubscriberRuntime, and what an application configured by the
// same TOML files hands them. Each throws what publisher_config,
// subscriber_config and channel_map throw for settings that cannot run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mdcast/runtime/pair_member.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

// When a subscriber gives up: subscriber.duration, .wait, .give_up, and feed.stop.
[[nodiscard]] runtime::SubscriberLimits subscriber_limits(const Settings& s);
// A subscriber of the feed's channels on `medium` (the counters file's word for it).
[[nodiscard]] runtime::SubscriberPlan subscriber_plan(const Settings& s, std::string_view medium);
// A publisher of session `session` on `medium`: the channels, publishing
// threads and their CPUs, the engine and control plane, the subscribers
// waited for, the linger, feed.stop, and a counters file named for the feed.
[[nodiscard]] runtime::PublisherPlan publisher_plan(const Settings& s, uint64_t session, std::string_view medium);

// A pair member's view of its peer (pair.peer), through medium entry E
// (settings/media.hpp): a follower of the peer's feed, not joined yet.
// UsageError where joining is not built for the medium, or where the
// settings cannot rebuild the peer's datagrams (one channel,
// publisher.boundaries=input with publisher.packet_messages). Null, with
// the reason in *why, where the peer's side of the medium cannot be opened
// (an shm peer's ring is not there within pair.join_timeout): no peer.
template <class E>
std::unique_ptr<runtime::PeerFollower<typename E::Subscriber>> peer_follower(const Settings& s, std::string& why) {
  if constexpr (!requires { E::peer_settings(s); }) {
    fail_usage("pair.peer: joining a peer's session is built for the udp medium, not {}", E::kName);
  } else {
    if (s.feed.channels != 1)
      fail_usage("pair.peer with feed.channels {}: a member joins its peer on one channel", s.feed.channels);
    if (s.pub.boundaries != feed::Boundaries::kInput || !s.pub.packet_messages)
      fail_usage("pair.peer needs publisher.boundaries=input and publisher.packet_messages: a member rebuilds its "
                 "peer's datagrams from the input's packets");
    const Settings ps = E::peer_settings(s);
    std::unique_ptr<typename E::Subscriber> medium;
    try {
      medium = E::subscriber(ps);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      why = e.what();
      return nullptr;
    }
    return std::make_unique<runtime::PeerFollower<typename E::Subscriber>>(std::move(medium), subscriber_config(ps));
  }
}

}  // namespace mdcast::settings
