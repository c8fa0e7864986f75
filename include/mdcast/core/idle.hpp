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

class IdleStrategy {
 public:
  // Deepest back-off sleep: bounds the latency an idle subscriber adds.
  static constexpr uint64_t kMaxParkNs = 100'000;

  explicit IdleStrategy(IdleMode m = IdleMode::kSpin) noexcept : mode_(m) {}

  void idle() noexcept {
    switch (mode_) {
      case IdleMode::kSpin:
        pause();
        return;
      case IdleMode::kYield:
        sched_yield();
        return;
      case IdleMode::kSleep:
        sleep_ns(50'000);
        return;
      case IdleMode::kBackoff:
      case IdleMode::kBlock:
        if (n_ < 64) {
          ++n_;
          pause();
        } else if (n_ < 128) {
          ++n_;
          sched_yield();
        } else {
          sleep_ns(park_ns_);
          park_ns_ = std::min<uint64_t>(park_ns_ * 2, kMaxParkNs);
        }
        return;
    }
  }
  void reset() noexcept {
    n_ = 0;
    park_ns_ = 1'000;
  }
  [[nodiscard]] IdleMode mode() const noexcept { return mode_; }

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
  IdleMode mode_;
  uint32_t n_ = 0;
  uint64_t park_ns_ = 1'000;
};

// The kernel rounds sleeps up by the timer slack (50 us by default): far
// more than the short parks above. Lower it for this process.
void set_low_timer_slack() noexcept;

}  // namespace mdcast
