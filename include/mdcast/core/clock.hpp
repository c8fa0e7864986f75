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

}  // namespace mdcast
