// A crash drill: a process that dies as kill -9 would, but at a point of its
// work chosen beforehand, where a takeover is hardest - between the pieces
// of a fragmented message, or in the middle of a snapshot it streams
// (docs/operations.md, "Rehearsing a takeover"). A signal from outside
// cannot aim at a window of microseconds; this can. Nothing happens until
// the drill is armed (SIGUSR1, or arm()), so a drill chosen at start costs
// nothing until the operator says when.
//
//   mdcast::CrashDrill drill(mdcast::DrillPoint::kFragment);
//   mdcast::arm_on_sigusr1(drill);        // kill -USR1 <pid>: dies at the next such point
//   publisher_config.drill = &drill;      // the engine looks only where one was given
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mdcast {

enum class DrillPoint : uint8_t {
  kNone,
  kFragment,  // right after sending a datagram that ends inside a fragmented message
  kSnapshot,  // right after sending a snapshot frame, more of that snapshot to come
};

// "fragment", "snapshot"; nullopt for anything else ("" is kNone).
[[nodiscard]] std::optional<DrillPoint> parse_drill_point(std::string_view s) noexcept;
[[nodiscard]] std::string_view drill_point_name(DrillPoint p) noexcept;

class CrashDrill {
 public:
  explicit CrashDrill(DrillPoint p) noexcept : point_(p) {}
  CrashDrill(const CrashDrill&) = delete;
  CrashDrill& operator=(const CrashDrill&) = delete;

  // Async-signal-safe.
  void arm() noexcept { armed_.store(true, std::memory_order_relaxed); }
  [[nodiscard]] bool armed() const noexcept { return armed_.load(std::memory_order_relaxed); }
  [[nodiscard]] DrillPoint point() const noexcept { return point_; }
  // At point p, armed: the process dies here (SIGKILL), as a crash would:
  // no destructor, no flush, no end of session.
  void at(DrillPoint p) const noexcept {
    if (p == point_ && armed()) [[unlikely]]
      crash();
  }

 private:
  [[noreturn]] static void crash() noexcept;
  DrillPoint point_;
  std::atomic<bool> armed_{false};
  static_assert(std::atomic<bool>::is_always_lock_free, "a signal handler arms it");
};

// SIGUSR1 arms `drill`, for the life of the process.
void arm_on_sigusr1(CrashDrill& drill);

}  // namespace mdcast
