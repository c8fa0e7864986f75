// The shm medium's name and the counter sections its processes write
// (counter_groups() of its PublisherMedium and SubscriberMedium, and the
// shared control door), for the counter catalogue (media/catalogue.hpp).
#pragma once

#include <span>
#include <string_view>

#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/media/stream/stream_catalogue.hpp"

namespace mdcast::media::shm {

inline constexpr std::string_view kName = "shm";

[[nodiscard]] inline std::span<const CatalogueSection> counter_catalogue() noexcept {
  static constexpr CatalogueSection kSections[] = {
      control_server_section(kName),
      catalogue_section<ReaderCounters>("shm", kSubscriberRole, kName, "media::shm::ReaderCounters"),
      front_door_section(kName),
  };
  return kSections;
}

}  // namespace mdcast::media::shm
