// The catalogue `mdcast stat` exports with: the library's sections (the
// engines' and each medium's, from the list of media: settings/media.hpp)
// and the command line's own (app_counters.hpp), written under "app".
#pragma once

#include <string_view>

#include "app_counters.hpp"
#include "mdcast/record/recorder.hpp"
#include "mdcast/runtime/relay.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/catalogue.hpp"

namespace mdcast::app {

inline constexpr std::string_view kAppSubGauges[] = {"latency_max_ns"};
inline constexpr std::string_view kRelayGauges[] = {"upstream_sequence"};
inline constexpr std::string_view kAppPubGauges[] = {"target_rate", "control_clients", "elapsed_ms", "pair_role", "pair_catch_up_ms", "pair_joined_at"};

inline stats::Catalogue stat_catalogue() {
  auto c = settings::counter_catalogue();
  c.add({"app", "subscriber", "", "app::AppSubCounters", AppSubCounters::kInfo, kAppSubGauges});
  c.add({"app", "publisher", "", "app::AppPubCounters", AppPubCounters::kInfo, kAppPubGauges});
  c.add_histograms({"app", "subscriber", "", "app::kAppSubHistograms", kAppSubHistograms, {}});
  // `mdcast record` is a subscriber that also writes files.
  c.alias_role("recorder", "subscriber");
  c.add({"rec", "recorder", "", "record::RecordCounters", record::RecordCounters::kInfo, {}});
  // `mdcast relay` publishes downstream what it subscribes to upstream ("sub").
  c.alias_role("relay", "publisher");
  c.alias_role("relay", "subscriber");
  c.add({"relay", "relay", "", "runtime::RelayCounters", runtime::RelayCounters::kInfo, kRelayGauges});
  return c;
}

}  // namespace mdcast::app
