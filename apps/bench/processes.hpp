// The parent's side of one `mdcast bench` run, for any medium: fork the
// publisher and N subscribers (pinned), wait until each is ready, start the
// timeline, supervise, and gather their boards into a RunResult. A medium
// passes its registry entry and what it adds per datagram; the bodies the
// children run are feed_children.hpp's templates, so nothing here is
// medium-specific.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "feed_children.hpp"
#include "medium.hpp"
#include "supervise.hpp"
#include "measure/child_process.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::app::bench {

inline double cpu_seconds(const rusage& ru) noexcept {
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// s: the run's settings (a unique feed name and session already chosen).
// setup_s: how long a child may take to become ready (joining a multicast
// group and connecting the control plane take longer on RDMA than on shm).
template <class Entry>
RunResult run_feed_processes(const Settings& s, const RunSpec& spec, const Placement& where,
                             size_t medium_overhead_per_datagram, Progress& p, uint64_t setup_ns = 30 * kNsPerSec) {
  RunResult res;
  if (spec.subscribers == 0 || spec.subscribers > RunBoard::kMaxSubscribers)
    fail("{} subscribers: the bench runs 1 to {}", spec.subscribers, RunBoard::kMaxSubscribers);
  res.busy_processes =
      (spec.pub_idle == IdleMode::kSpin ? 1u : 0u) + (spec.sub_idle == IdleMode::kSpin ? spec.subscribers : 0u);
  Shared<RunBoard> b;

  std::vector<ChildProcess> kids;
  auto setup_failed = [&](const ProcBoard& pb, ChildProcess& k) -> std::string {
    if (pb.get() == ProcState::kFailed) return fmt::format("{}: {}", k.label(), pb.outcome);
    if (k.poll()) return fmt::format("{} exited during setup (status {})", k.label(), k.status());
    return fmt::format("{} not ready within {} s", k.label(), setup_ns / kNsPerSec);
  };
  auto await_ready = [&](ProcBoard& pb, ChildProcess& k) -> bool {
    const uint64_t by = monotonic_ns() + setup_ns;
    while (pb.get() == ProcState::kStarting) {
      if (k.poll() || g_stop || monotonic_ns() > by) return false;
      sleep_for_ns(kNsPerMs);
    }
    return pb.get() == ProcState::kReady;
  };
  kids.push_back(ChildProcess::spawn("publisher", where.cpu_for(0), [&] {
    auto medium = Entry::publisher(s, s.pub.session);
    return bench_publisher(s, *medium, spec, *b);
  }));
  if (!await_ready(b->pub, kids[0])) {
    b->abort = 1;
    res.error = setup_failed(b->pub, kids[0]);
    return res;
  }
  for (uint32_t i = 0; i < spec.subscribers; ++i) {
    kids.push_back(ChildProcess::spawn(fmt::format("subscriber {}", i + 1), where.cpu_for(i + 1), [&, i] {
      auto medium = Entry::subscriber(s);
      return bench_subscriber(s, *medium, spec, *b, b->subs[i]);
    }));
  }
  for (uint32_t i = 0; i < spec.subscribers; ++i)
    if (!await_ready(b->subs[i], kids[i + 1])) {
      b->abort = 1;
      res.error = setup_failed(b->subs[i], kids[i + 1]);
      return res;
    }

  const uint64_t total = spec.window.warmup_ns + spec.window.duration_ns;
  // Priming, the timeline, then draining and recovery: generous, it only
  // matters when something is stuck.
  b->deadline = monotonic_ns() + total + 60 * kNsPerSec;
  b->go.store(1, std::memory_order_release);
  const bool finished = supervise(kids, b->t0, total, b->deadline.load() + 2 * kNsPerSec, b->abort, p, [&] {
    uint64_t lo = UINT64_MAX;
    for (uint32_t i = 0; i < spec.subscribers; ++i) lo = std::min(lo, b->subs[i].progress.load());
    return fmt::format("published {:.2f} M, delivered {:.2f} M", static_cast<double>(b->pub.progress.load()) / 1e6,
                       static_cast<double>(lo) / 1e6);
  });

  const ProcBoard& pb = b->pub;
  res.pub.ok = pb.get() == ProcState::kDone;
  res.pub.outcome = pb.outcome;
  res.pub.published = pb.total;
  res.pub.window_messages = pb.window_messages;
  res.pub.window_datagrams = pb.window_datagrams;
  res.pub.window_bytes = pb.window_bytes;
  res.pub.window_medium_bytes = pb.window_bytes + pb.window_datagrams * medium_overhead_per_datagram;
  res.pub.window_cpu_ns = pb.window_cpu_ns;
  res.pub.window_control_ns = pb.window_control_ns;
  res.pub.window_s = static_cast<double>(pb.window_ns) / 1e9;
  res.pub.rate = res.pub.window_s > 0 ? static_cast<double>(pb.window_messages) / res.pub.window_s : 0;
  res.pub.preempted = kids[0].usage().ru_nivcsw;
  for (uint32_t i = 0; i < spec.subscribers; ++i) {
    const ProcBoard& sb = b->subs[i];
    SubscriberResult r;
    r.ok = sb.get() == ProcState::kDone;
    r.outcome = sb.get() == ProcState::kStarting || sb.get() == ProcState::kReady
                    ? fmt::format("ended without a result (status {})", kids[i + 1].status())
                    : std::string(sb.outcome);
    r.delivered = sb.total;
    r.rx_window = sb.window_messages;
    r.rate = sb.window_ns ? static_cast<double>(sb.window_messages) * 1e9 / static_cast<double>(sb.window_ns) : 0;
    r.latency = sb.latency;
    r.lapped = sb.lapped;
    r.gaps = sb.gaps;
    r.recovered = sb.recovered;
    r.retransmit_requests = sb.retransmit_requests;
    r.snapshots = sb.snapshots;
    r.malformed = sb.malformed;
    r.duplicates = sb.duplicates;
    r.preempted = kids[i + 1].usage().ru_nivcsw;
    r.cpu_s = cpu_seconds(kids[i + 1].usage());
    res.subs.push_back(std::move(r));
  }
  res.completed = finished;
  if (!finished) res.error = g_stop ? "interrupted" : "timed out";
  else if (!res.pub.ok) res.error = "publisher: " + res.pub.outcome;
  return res;
}

// A raw baseline child, set up: says so and waits for the parent's go.
// False when the run was aborted or interrupted meanwhile.
template <class Board>
bool raw_ready_and_wait(Board& b) noexcept {
  b.ready.fetch_add(1);
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (g_stop || b.abort.load()) return false;
    sleep_for_ns(100 * kNsPerUs);
  }
  return true;
}

// The raw baseline reader's accounting, for any medium. Paced runs sample
// the latency of messages stamped inside the window; unpaced runs count what
// arrived inside it, reading the clock only now and then (sample_flat).
class RawTally {
 public:
  RawTally(uint64_t t0, const RawRun& run) noexcept
      : lo_(t0 + run.window.warmup_ns), hi_(lo_ + run.window.duration_ns), window_ns_(run.window.duration_ns),
        paced_(run.rate > 0), h_(std::make_unique<Histogram>()) {}

  [[nodiscard]] bool paced() const noexcept { return paced_; }
  [[nodiscard]] uint64_t received() const noexcept { return received_; }
  void add(uint64_t messages) noexcept { received_ += messages; }
  // Paced: a message stamped `stamp`, received `now`.
  void sample(uint64_t stamp, uint64_t now) noexcept {
    if (stamp >= lo_ && stamp < hi_) {
      h_->record(now > stamp ? now - stamp : 0);
      ++in_window_;
    }
  }
  // Unpaced: the count so far, at `now`.
  void sample_flat(uint64_t now) noexcept {
    if (!t_first_ && now >= lo_) {
      t_first_ = now;
      c0_ = received_;
    }
    if (now < hi_) {
      t_last_ = now;
      c1_ = received_;
    }
  }
  void finish(ProcBoard& me, uint64_t lost) const noexcept {
    me.total = received_;
    me.gaps = lost;
    me.window_messages = paced_ ? in_window_ : c1_ - c0_;
    me.window_ns = paced_ ? window_ns_ : (t_last_ > t_first_ ? t_last_ - t_first_ : 0);
    me.latency = *h_;
    me.set_outcome("ok");
    me.finish(ProcState::kDone);
  }

 private:
  uint64_t lo_, hi_, window_ns_;
  bool paced_;
  std::unique_ptr<Histogram> h_;  // 10s of KiB: not on the stack
  uint64_t received_ = 0, in_window_ = 0;
  uint64_t c0_ = 0, t_first_ = 0, c1_ = 0, t_last_ = 0;
};

// The raw baseline's parent side: the writer and reader children have been
// spawned; wait until both say ready (board.ready == 2), set the timeline,
// supervise, and read the reader's board. Board: ready, go, abort, t0,
// deadline, progress (atomics) and `reader` (a ProcBoard).
template <class Board>
RawResult run_raw_pair(Board& b, std::vector<ChildProcess>& kids, const RawRun& run, Progress& p,
                       uint64_t setup_ns = 10 * kNsPerSec) {
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
    if (monotonic_ns() > ready_by || g_stop) {
      res.error = fmt::format("raw baseline processes did not start within {} s", setup_ns / kNsPerSec);
      b.abort = 1;
      return res;
    }
    sleep_for_ns(kNsPerMs);
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

}  // namespace mdcast::app::bench
