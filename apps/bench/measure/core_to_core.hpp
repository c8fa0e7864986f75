// Core-to-core cache-line latency: the physical floor of any shared-memory
// transport. Two threads pinned to two CPUs bounce one atomic word: the first
// writes 2k+1 and spins until it reads 2k+2, the second waits for 2k+1 and
// writes 2k+2. One round trip moves the line there and back, so one-way is
// half a round trip. Every round trip is timed alone (TscClock) and recorded,
// so the tail (p99) is the tail of single transfers, not of batch averages.
#pragma once

#include <cstdint>

#include "mdcast/core/histogram.hpp"

namespace mdcast::app::bench {

struct CoreToCoreResult {
  Histogram one_way_ns;       // round trip / 2, warm-up excluded
  uint64_t round_trips = 0;   // measured (after warm-up)
  double tsc_ghz = 0;
};

// Runs warmup + round_trips ping-pongs between cpu_a and cpu_b (may be equal:
// then the numbers measure context switches, and say so by being huge).
// Throws Error if a thread cannot be pinned.
[[nodiscard]] CoreToCoreResult core_to_core(int cpu_a, int cpu_b, uint64_t round_trips, uint64_t warmup);

}  // namespace mdcast::app::bench
