// What a medium says of the counter sections its processes write, so that
// the counter catalogue (stats/catalogue.hpp) explains them without naming
// the medium: each medium's folder has a counter_catalogue() of these, and
// the list of media (settings/media.hpp) hands them to the catalogue.
//
// Header-only and constexpr (the counter structs' own kInfo): the catalogue
// knows a medium's sections even in a build without that medium's library
// (verbs without rdma-core), so such a build still explains a file of a
// process that had it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "mdcast/core/counter.hpp"

namespace mdcast::media {

// Roles a counters file is written by (its header's role field).
inline constexpr std::string_view kPublisherRole = "publisher";
inline constexpr std::string_view kSubscriberRole = "subscriber";

struct CatalogueSection {
  std::string_view prefix;                    // "sub", "udp", "control" ...
  std::string_view role;                      // "publisher", "subscriber"; "" = either
  std::string_view medium;                    // "shm", "udp", "verbs", "mem"; "" = any
  std::string_view source;                    // the struct, for documentation: "feed::SubscriberCounters"
  std::span<const CounterInfo> counters;      // the struct's kInfo
  std::span<const std::string_view> gauges;   // names of its counters that are levels, not totals
};

// The section of counter struct C (its kInfo) under `prefix`.
template <class C>
constexpr CatalogueSection catalogue_section(std::string_view prefix, std::string_view role, std::string_view medium,
                                             std::string_view source, std::span<const std::string_view> gauges = {}) {
  return {prefix, role, medium, source, C::kInfo, gauges};
}

}  // namespace mdcast::media
