// The stream control plane's counter sections, which the media that use it
// (shm, udp) list in their counter_catalogue() under their own name.
#pragma once

#include <string_view>

#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/stream/front_door.hpp"
#include "mdcast/media/stream/stream_server.hpp"

namespace mdcast::media {

// Levels, not totals: what a dashboard plots as is and never rates.
inline constexpr std::string_view kControlServerGauges[] = {"clients", "unadmitted", "queued_bytes", "io_uring"};
inline constexpr std::string_view kFrontDoorGauges[] = {"pending"};

// A publisher's control server, under "control".
constexpr CatalogueSection control_server_section(std::string_view medium) {
  return catalogue_section<ControlServerStats>("control", kPublisherRole, medium, "media::ControlServerStats",
                                               kControlServerGauges);
}
// The one control endpoint of a publisher of several channels, under "door".
constexpr CatalogueSection front_door_section(std::string_view medium) {
  return catalogue_section<FrontDoorStats>("door", kPublisherRole, medium, "media::FrontDoorStats", kFrontDoorGauges);
}

}  // namespace mdcast::media
