// What a duty loop does when it found no work. Busy-spinning gives the
// lowest latency and burns a core; with more busy processes than cores it
// makes everything slower, so the others back off.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "mdcast/core/clock.hpp"

namespace mdcast {

// kBlock: sleep in the medium until data arrives (futex on the shm ring,
// completion channel on verbs); where a medium cannot, it acts as kBackoff.
enum class IdleMode : uint8_t { kSpin, kYield, kBackoff, kSleep, kBlock };

// How kBackoff (and kBlock where the medium cannot sleep) backs off, and how
// long kSleep sleeps (settings feed.idle_*). The deepest park bounds the
// latency an idle loop adds to the first datagram after a quiet spell; the
// shallower it is, the more wake-ups an idle process pays for.
struct IdleParams {
  uint32_t spins = 64;             // pause rounds first
  uint32_t yields = 64;            // then sched_yield rounds
  uint64_t park_min_ns = 1'000;    // then sleeps from this, doubling each round
  uint64_t park_max_ns = 100'000;  // up to this
  uint64_t sleep_ns = 50'000;      // kSleep: every idle round
};

class IdleStrategy {
 public:
  // The default deepest back-off sleep (IdleParams::park_max_ns).
  static constexpr uint64_t kMaxParkNs = IdleParams{}.park_max_ns;

  explicit IdleStrategy(IdleMode m = IdleMode::kSpin, const IdleParams& p = {}) noexcept
      : mode_(m), p_(p), park_ns_(first_park()) {}

  void idle() noexcept {
    switch (mode_) {
      case IdleMode::kSpin:
        pause();
        return;
      case IdleMode::kYield:
        sched_yield();
        return;
      case IdleMode::kSleep:
        sleep_ns(p_.sleep_ns);
        return;
      case IdleMode::kBackoff:
      case IdleMode::kBlock:
        if (n_ < p_.spins) {
          ++n_;
          pause();
        } else if (n_ - p_.spins < p_.yields) {
          ++n_;
          sched_yield();
        } else {
          sleep_ns(park_ns_);
          park_ns_ = std::min<uint64_t>(park_ns_ * 2, std::max<uint64_t>(p_.park_max_ns, 1));
        }
        return;
    }
  }
  void reset() noexcept {
    n_ = 0;
    park_ns_ = first_park();
  }
  [[nodiscard]] IdleMode mode() const noexcept { return mode_; }
  [[nodiscard]] const IdleParams& params() const noexcept { return p_; }

  static bool parse(std::string_view s, IdleMode& out) noexcept {
    if (s == "spin") out = IdleMode::kSpin;
    else if (s == "yield") out = IdleMode::kYield;
    else if (s == "backoff") out = IdleMode::kBackoff;
    else if (s == "sleep") out = IdleMode::kSleep;
    else if (s == "block") out = IdleMode::kBlock;
    else return false;
    return true;
  }
  static std::string_view name(IdleMode m) noexcept {
    switch (m) {
      case IdleMode::kSpin: return "spin";
      case IdleMode::kYield: return "yield";
      case IdleMode::kBackoff: return "backoff";
      case IdleMode::kSleep: return "sleep";
      case IdleMode::kBlock: return "block";
    }
    return "?";
  }

 private:
  static void pause() noexcept {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  // A minimum above the maximum is the maximum (settings may give either first).
  [[nodiscard]] uint64_t first_park() const noexcept {
    return std::max<uint64_t>(std::min(p_.park_min_ns, p_.park_max_ns), 1);
  }
  IdleMode mode_;
  IdleParams p_;
  uint32_t n_ = 0;
  uint64_t park_ns_;
};

// The kernel rounds sleeps up by the timer slack (50 us by default): far
// more than the short parks above. Lower it for this process.
void set_low_timer_slack() noexcept;

}  // namespace mdcast
