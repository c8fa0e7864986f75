// What every medium's binding (settings/media/<name>.hpp) builds on: the
// settings pairs a demo passes its children, channel index k's group
// address, and the bounds of a stream control endpoint shared by a
// publisher's channels. settings/media.hpp holds the list of bindings.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/media/stream/front_door.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

using SettingPairs = std::vector<std::pair<std::string, std::string>>;

// Channel index k's address from the feed's: the IPv4 address (of
// "A.B.C.D[:PORT[@IF]]") plus k; refused where it would leave the multicast
// range.
std::string next_group(const std::string& group, uint32_t index, std::string_view key);

// A shared stream control endpoint for a publisher's channels, bounded as
// each channel's server would bound its un-admitted connections.
inline media::FrontDoorConfig door_config(const Settings& s) {
  media::FrontDoorConfig fc;
  fc.max_pending = s.control_server.max_unadmitted * std::max<uint32_t>(1, s.feed.channels);
  fc.first_frame_timeout_ns = s.control_server.unadmitted_timeout_ns;
  fc.peers = s.control_server.peers;
  return fc;
}

// A channel of a publisher behind a shared stream endpoint (shm, UDP): its
// medium announces the endpoint's address and takes its connections from
// `inbox` instead of listening itself.
inline void use_stream_door(Settings& c, const media::ControlFrontDoor& d,
                            std::shared_ptr<media::ConnectionInbox> inbox) {
  c.feed.control = d.address();
  c.feed.control_inbox = std::move(inbox);
}

}  // namespace mdcast::settings
