// Counters of the command-line processes themselves (beyond the engines'):
// what `mdcast stat` shows beside the library's (the runtime's "run"
// section: elapsed time, input, control clients and time).
#pragma once

#include <string_view>

#include "mdcast/core/counter.hpp"
#include "mdcast/stats/mirror.hpp"

namespace mdcast::app {

#define MDCAST_APP_SUB_COUNTERS(X)                                                          \
  X(lost, "datagrams lost before the engine saw them (lapped ring, injected loss)")        \
  X(latency_max_ns, "one-way latency max so far, ns")

#define MDCAST_APP_PUB_COUNTERS(X)                                         \
  X(target_rate, "configured synthetic rate, messages/s")                  \
  X(pair_role, "in a publisher pair: 0 began its session, 1 catching up with its peer (pair.peer), 2 joined and publishing") \
  X(pair_catch_up_ms, "how long a joining member took to replay its input to its peer's position, ms") \
  X(pair_joined_at, "the first sequence a joining member sent itself (those before were its peer's)")

MDCAST_DEFINE_COUNTER_STRUCT(AppSubCounters, MDCAST_APP_SUB_COUNTERS);
// A subscriber's histograms, under "app" (CountersFile::publish): latency as
// a distribution that Prometheus can add up across processes and take
// quantiles of (histogram_quantile), not as percentiles that cannot be.
inline constexpr CounterInfo kAppSubHistograms[] = {
    {"latency_ns", "one-way latency of live messages (not recovered ones), publisher's send to delivery, ns"}};
inline constexpr std::string_view kLatencyHistogram = "app.latency_ns";
MDCAST_DEFINE_COUNTER_STRUCT(AppPubCounters, MDCAST_APP_PUB_COUNTERS);

// The mirrors of the library (stats/mirror.hpp), by their short names here.
using stats::dump_counters;
using stats::MirroredCounters;

}  // namespace mdcast::app
