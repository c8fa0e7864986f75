// Counters of the command-line processes themselves (beyond the engines'):
// what `mdcast stat` and the demo's progress line show.
#pragma once

#include "mdcast/core/counter.hpp"

namespace mdcast::app {

#define MDCAST_APP_SUB_COUNTERS(X)                                         \
  X(lapped, "datagrams lost because the ring writer lapped this reader")   \
  X(reattached, "times a restarted publisher's ring was attached")         \
  X(injected_losses, "datagrams dropped on purpose (--inject-loss)")       \
  X(latency_p50_ns, "one-way latency p50 so far, ns")                      \
  X(latency_p99_ns, "one-way latency p99 so far, ns")                      \
  X(latency_max_ns, "one-way latency max so far, ns")

#define MDCAST_APP_PUB_COUNTERS(X)                                         \
  X(target_rate, "configured synthetic rate, messages/s")                  \
  X(generated, "synthetic messages generated")                             \
  X(control_clients, "connected control clients")                          \
  X(elapsed_ms, "milliseconds since publishing started")

MDCAST_DEFINE_COUNTER_STRUCT(AppSubCounters, MDCAST_APP_SUB_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(AppPubCounters, MDCAST_APP_PUB_COUNTERS);

}  // namespace mdcast::app
