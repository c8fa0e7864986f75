#include "supervise.hpp"

#include "mdcast/core/clock.hpp"
#include "runners.hpp"

namespace mdcast::app::bench {

bool supervise(std::vector<ChildProcess>& kids, const std::atomic<uint64_t>& t0, uint64_t total_ns,
               uint64_t deadline, std::atomic<uint32_t>& abort, Progress& progress,
               const std::function<std::string()>& detail) {
  for (;;) {
    bool all = true;
    for (auto& k : kids) all &= k.poll();
    if (all) break;
    const uint64_t now = monotonic_ns();
    if (now > deadline || g_stop.requested()) {
      abort.store(1);
      for (auto& k : kids) k.stop(kNsPerSec);
      progress.done();
      return false;
    }
    const uint64_t start = t0.load(std::memory_order_relaxed);
    progress.update(start ? (static_cast<double>(now) - static_cast<double>(start)) / 1e9 : 0,
                    static_cast<double>(total_ns) / 1e9, (start ? "" : "priming the rings; ") + detail());
    sleep_ns(20 * kNsPerMs);
  }
  progress.done();
  for (auto& k : kids)
    if (k.status() != 0) return false;
  return true;
}

}  // namespace mdcast::app::bench
