// A request to stop, made from anywhere - a signal handler included - and
// read by every loop that should end on it. A lock-free atomic: changing it
// is async-signal-safe, reading it costs a relaxed load per round.
//
// The first request asks for a clean end (a publisher ends its session and
// serves recovery for a bounded time, so its subscribers finish); a second
// one, for an end now.
//
//   mdcast::StopFlag stop;                    // the application's, one per process or per feed
//   mdcast::stop_on_signals(stop);            // SIGINT, SIGTERM: stop.request()
//   runtime.run(...)                          // its loops end at the next round
#pragma once

#include <atomic>
#include <cstdint>

namespace mdcast {

class StopFlag {
 public:
  StopFlag() = default;
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;

  void request() noexcept { n_.fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] bool requested() const noexcept { return n_.load(std::memory_order_relaxed) > 0; }
  // Asked twice: no clean end.
  [[nodiscard]] bool urgent() const noexcept { return n_.load(std::memory_order_relaxed) > 1; }

 private:
  std::atomic<uint32_t> n_{0};
  static_assert(std::atomic<uint32_t>::is_always_lock_free, "a signal handler may change only a lock-free atomic");
};

// Makes SIGINT and SIGTERM request `stop` (a second signal: urgent()), for
// the life of the process; a later call moves them to another flag. Without
// SA_RESTART: a blocking call returns EINTR, so a loop asleep in it sees the
// request at once.
void stop_on_signals(StopFlag& stop);

}  // namespace mdcast
