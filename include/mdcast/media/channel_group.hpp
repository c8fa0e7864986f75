// Where channel index k of a multicast feed travels: the feed's group address
// plus k, the port and interface kept ("A.B.C.D[:PORT][@IF]"), so each channel
// is a group of its own that a subscriber joins only if it wants that
// channel's instruments. UDP and verbs name their channels this way; `mdcast
// subscribe --channels N` expects it.
#pragma once

#include <cstdint>
#include <string>

namespace mdcast::media {

// Throws Error when `group` does not start with an IPv4 address, or when
// group + index leaves the multicast range (224.0.0.0/4) or the first
// group's /8 (its scope).
[[nodiscard]] std::string channel_group(const std::string& group, uint32_t index);

}  // namespace mdcast::media
