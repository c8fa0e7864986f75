// A cycle counter for timing very short intervals (one cache-line transfer).
//
// clock_gettime costs tens of ns in a VM (kvm-clock), comparable to what the
// core-to-core ping-pong measures; the time-stamp counter costs a few. It is
// calibrated once against CLOCK_MONOTONIC. lfence keeps the read from being
// reordered around the code it times. Elsewhere (no invariant TSC) it falls
// back to CLOCK_MONOTONIC, which only adds a constant offset to the numbers.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "mdcast/core/clock.hpp"

namespace mdcast::app::bench {

class TscClock {
 public:
  [[nodiscard]] static uint64_t now() noexcept {
#if defined(__x86_64__)
    _mm_lfence();
    const uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#else
    return monotonic_ns();
#endif
  }

  // Measures ticks per ns over `window_ns` of busy waiting.
  static TscClock calibrate(uint64_t window_ns = 20 * kNsPerMs) noexcept {
#if defined(__x86_64__)
    const uint64_t n0 = monotonic_ns();
    const uint64_t c0 = now();
    uint64_t n1 = n0;
    while (n1 - n0 < window_ns) n1 = monotonic_ns();
    const uint64_t c1 = now();
    return TscClock(static_cast<double>(n1 - n0) / static_cast<double>(c1 - c0));
#else
    (void)window_ns;
    return TscClock(1.0);
#endif
  }

  [[nodiscard]] double ns_per_tick() const noexcept { return ns_per_tick_; }
  [[nodiscard]] double ghz() const noexcept { return 1.0 / ns_per_tick_; }
  [[nodiscard]] uint64_t to_ns(uint64_t ticks) const noexcept {
    return static_cast<uint64_t>(static_cast<double>(ticks) * ns_per_tick_ + 0.5);
  }

 private:
  explicit TscClock(double ns_per_tick) noexcept : ns_per_tick_(ns_per_tick) {}
  double ns_per_tick_;
};

}  // namespace mdcast::app::bench
