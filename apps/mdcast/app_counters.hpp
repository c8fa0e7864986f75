// Counters of the command-line processes themselves (beyond the engines'):
// what `mdcast stat` and the demo's progress line show.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/mirror.hpp"

namespace mdcast::app {

#define MDCAST_APP_SUB_COUNTERS(X)                                                          \
  X(lost, "datagrams lost before the engine saw them (lapped ring, injected loss)")        \
  X(latency_p50_ns, "one-way latency p50 so far, ns")                                       \
  X(latency_p99_ns, "one-way latency p99 so far, ns")                                       \
  X(latency_max_ns, "one-way latency max so far, ns")

#define MDCAST_APP_PUB_COUNTERS(X)                                         \
  X(target_rate, "configured synthetic rate, messages/s")                  \
  X(generated, "synthetic messages generated")                             \
  X(control_clients, "connected control clients")                          \
  X(control_time_us, "time spent polling the control plane, microseconds") \
  X(elapsed_ms, "milliseconds since publishing started")

MDCAST_DEFINE_COUNTER_STRUCT(AppSubCounters, MDCAST_APP_SUB_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(AppPubCounters, MDCAST_APP_PUB_COUNTERS);

// The mirrors and totals of the library (stats/mirror.hpp), by their short names here.
using stats::channel_prefix;
using stats::dump_counters;
using stats::MirroredCounters;
using stats::sum_channels;

}  // namespace mdcast::app
