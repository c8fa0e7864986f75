// The verbs medium's name and the counter sections its processes write, for
// the counter catalogue (media/catalogue.hpp). Needs no rdma-core: a build
// without the verbs medium still explains a verbs process's counters file.
#pragma once

#include <span>
#include <string_view>

#include "mdcast/media/catalogue.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"

namespace mdcast::media::verbs {

inline constexpr std::string_view kName = "verbs";

// Levels, not totals: what a dashboard plots as is and never rates.
inline constexpr std::string_view kSinkGauges[] = {"send_only_join"};
inline constexpr std::string_view kReceiverGauges[] = {"posted_low"};
inline constexpr std::string_view kServerGauges[] = {"clients_connected"};
inline constexpr std::string_view kLinkGauges[] = {"rails_down"};

[[nodiscard]] inline std::span<const CatalogueSection> counter_catalogue() noexcept {
  static constexpr CatalogueSection kSections[] = {
      catalogue_section<VerbsDoorCounters>("door", kPublisherRole, kName, "media::verbs::VerbsDoorCounters"),
      catalogue_section<SinkCounters>("sink", kPublisherRole, kName, "media::verbs::SinkCounters", kSinkGauges),
      catalogue_section<ServerCounters>("server", kPublisherRole, kName, "media::verbs::ServerCounters", kServerGauges),
      catalogue_section<ReceiverCounters>("rx", kSubscriberRole, kName, "media::verbs::ReceiverCounters",
                                          kReceiverGauges),
      catalogue_section<ClientCounters>("client", kSubscriberRole, kName, "media::verbs::ClientCounters"),
      catalogue_section<LinkCounters>("link", "", kName, "media::verbs::LinkCounters", kLinkGauges),
  };
  return kSections;
}

}  // namespace mdcast::media::verbs
