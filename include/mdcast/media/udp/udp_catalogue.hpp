// The udp medium's name and the counter sections its processes write
// (counter_groups() of its PublisherMedium and SubscriberMedium, and the
// shared control door), for the counter catalogue (media/catalogue.hpp).
// "udp" is the sink's section in a publisher, the source's in a subscriber:
// the role tells them apart.
#pragma once

#include <span>
#include <string_view>

#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/stream/stream_catalogue.hpp"
#include "mdcast/media/udp/udp_medium.hpp"

namespace mdcast::media::udp {

inline constexpr std::string_view kName = "udp";

inline constexpr std::string_view kLinkGauges[] = {"rails_down"};

[[nodiscard]] inline std::span<const CatalogueSection> counter_catalogue() noexcept {
  static constexpr CatalogueSection kSections[] = {
      front_door_section(kName),
      catalogue_section<SinkCounters>("udp", kPublisherRole, kName, "media::udp::SinkCounters"),
      control_server_section(kName),
      catalogue_section<SourceCounters>("udp", kSubscriberRole, kName, "media::udp::SourceCounters"),
      catalogue_section<SubscriberCounters>("udp", kSubscriberRole, kName, "media::udp::SubscriberCounters"),
      catalogue_section<LinkCounters>("link", "", kName, "media::udp::LinkCounters", kLinkGauges),
  };
  return kSections;
}

}  // namespace mdcast::media::udp
