// The catalogue `mdcast stat` exports with: the library's sections (the
// engines' and each medium's, from the list of media: settings/media.hpp)
// and the command line's own (app_counters.hpp), written under "app".
#pragma once

#include <string_view>

#include "app_counters.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/catalogue.hpp"

namespace mdcast::app {

inline constexpr std::string_view kAppSubGauges[] = {"latency_max_ns"};
inline constexpr std::string_view kAppPubGauges[] = {"target_rate", "pair_role", "pair_catch_up_ms", "pair_joined_at"};

inline stats::Catalogue stat_catalogue() {
  auto c = settings::counter_catalogue();
  c.add({"app", "subscriber", "", "app::AppSubCounters", AppSubCounters::kInfo, kAppSubGauges});
  c.add({"app", "publisher", "", "app::AppPubCounters", AppPubCounters::kInfo, kAppPubGauges});
  c.add_histograms({"app", "subscriber", "", "app::kAppSubHistograms", kAppSubHistograms, {}});
  return c;
}

}  // namespace mdcast::app
