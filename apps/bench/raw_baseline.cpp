#include "raw_baseline.hpp"

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "runners.hpp"
#include "supervise.hpp"

namespace mdcast::app::bench {

bool raw_ready_and_wait(RawBoard& b) noexcept {
  b.ready.fetch_add(1);
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (g_stop.requested() || b.abort.load()) return false;
    sleep_ns(100 * kNsPerUs);
  }
  return true;
}

namespace {

RawResult wait_and_read(RawBoard& b, std::vector<ChildProcess>& kids, const RawRun& run, Progress& p, uint64_t setup_ns) {
  RawResult res;
  const uint64_t ready_by = monotonic_ns() + setup_ns;
  while (b.ready.load() < 2) {
    for (auto& k : kids)
      if (k.poll()) {
        res.error = b.reader.get() == ProcState::kFailed
                        ? fmt::format("raw reader: {}", b.reader.outcome)
                        : fmt::format("{} exited during setup (status {})", k.label(), k.status());
        b.abort = 1;
        return res;
      }
    if (monotonic_ns() > ready_by || g_stop.requested()) {
      res.error = fmt::format("raw baseline processes did not start within {} s", setup_ns / kNsPerSec);
      b.abort = 1;
      return res;
    }
    sleep_ns(kNsPerMs);
  }
  const uint64_t total = run.window.warmup_ns + run.window.duration_ns;
  const uint64_t t0 = monotonic_ns() + 5 * kNsPerMs;
  b.t0 = t0;
  b.deadline = t0 + total + 20 * kNsPerSec;
  b.go.store(1, std::memory_order_release);
  const bool finished = supervise(kids, b.t0, total, b.deadline.load() + kNsPerSec, b.abort, p, [&] {
    return fmt::format("{:.2f} M messages", static_cast<double>(b.progress.load()) / 1e6);
  });
  res.preempted = kids[0].usage().ru_nivcsw + kids[1].usage().ru_nivcsw;
  const ProcBoard& r = b.reader;
  if (!finished || r.get() != ProcState::kDone) {
    res.error = r.get() == ProcState::kFailed || finished ? fmt::format("raw reader: {}", r.outcome)
                                                          : "timed out or interrupted";
    return res;
  }
  res.ok = true;
  res.latency = r.latency;
  res.messages = r.window_messages;
  res.received = r.total;
  res.lost = r.gaps;
  res.seconds = static_cast<double>(r.window_ns) / 1e9;
  res.rate = res.seconds > 0 ? static_cast<double>(r.window_messages) / res.seconds : 0;
  return res;
}

}  // namespace

RawResult run_raw_pair(RawBoard& b, std::vector<ChildProcess>& kids, const RawRun& run, Progress& p,
                       uint64_t setup_ns) {
  RawResult res = wait_and_read(b, kids, run, p, setup_ns);
  // A writer that failed (device setup, a failed post) knows why; the
  // reader only saw nothing arrive.
  if (!res.ok && b.writer.get() == ProcState::kFailed) res.error = b.writer.outcome;
  return res;
}

}  // namespace mdcast::app::bench
