// Clocks. Engines never read a clock themselves: every call that needs time
// takes `now` (nanoseconds) from the caller, so component tests drive a
// virtual clock and run deterministically.
#pragma once

#include <cstdint>
#include <ctime>

namespace mdcast {

// CLOCK_MONOTONIC is shared by every process (and network namespace) on one
// host, so publisher send timestamps and subscriber receive timestamps are
// comparable for one-way latency on the same host. Across hosts this needs a
// PTP-disciplined CLOCK_REALTIME instead (see docs/architecture.md).
[[nodiscard]] inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

[[nodiscard]] inline uint64_t realtime_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

constexpr uint64_t kNsPerUs = 1'000;
constexpr uint64_t kNsPerMs = 1'000'000;
constexpr uint64_t kNsPerSec = 1'000'000'000;

// Sleeps about `ns` (more by the process's timer slack; see
// set_low_timer_slack in idle.hpp). For duty loops with nothing to do.
inline void sleep_ns(uint64_t ns) noexcept {
  timespec ts{static_cast<time_t>(ns / kNsPerSec), static_cast<long>(ns % kNsPerSec)};
  nanosleep(&ts, nullptr);
}

}  // namespace mdcast
