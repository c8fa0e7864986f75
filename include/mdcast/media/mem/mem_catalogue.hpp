// The in-memory medium's name and the counter sections its processes write,
// for the counter catalogue (media/catalogue.hpp). Its "control" is its own
// control plane's, not the stream server's: the medium tells them apart.
#pragma once

#include <span>
#include <string_view>

#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/mem/mem_medium.hpp"

namespace mdcast::media::mem {

inline constexpr std::string_view kName = "mem";

[[nodiscard]] inline std::span<const CatalogueSection> counter_catalogue() noexcept {
  static constexpr CatalogueSection kSections[] = {
      catalogue_section<BusCounters>("bus", kPublisherRole, kName, "media::mem::BusCounters"),
      catalogue_section<ControlCounters>("control", kPublisherRole, kName, "media::mem::ControlCounters"),
      catalogue_section<EndpointCounters>("mem", kSubscriberRole, kName, "media::mem::EndpointCounters"),
  };
  return kSections;
}

}  // namespace mdcast::media::mem
