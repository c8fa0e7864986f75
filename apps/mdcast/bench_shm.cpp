// `mdcast bench --medium shm`: the raw shared-memory ring baseline and mdcast
// runs over the shm medium, each process forked and pinned.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "bench_feed.hpp"
#include "bench_medium.hpp"
#include "bench_supervise.hpp"
#include "mdcast/bench/process.hpp"
#include "mdcast/bench/raw_ring.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "shm_driver.hpp"

namespace mdcast::app::bench {
namespace {

using mdcast::bench::ChildProcess;
using mdcast::bench::RawReader;
using mdcast::bench::RawRing;
using mdcast::bench::RawWriter;
using mdcast::bench::Shared;

// ------------------------------------------------------------- raw baseline --

struct RawBoard {
  static constexpr uint64_t kEnd = 0xe0d0e0d0e0d0e0d0ull;  // payload[6] of the last message
  std::atomic<uint32_t> ready{0};
  std::atomic<uint32_t> go{0};
  std::atomic<uint32_t> abort{0};
  std::atomic<uint64_t> t0{0};
  std::atomic<uint64_t> deadline{0};
  std::atomic<uint64_t> progress{0};
  ProcBoard reader;  // results
  RawRing ring;
};

int raw_writer(RawBoard& b, const RawRun& run) {
  RawWriter w(b.ring);
  b.ready.fetch_add(1);
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (g_stop || b.abort.load()) return 1;
    sleep_for_ns(100 * kNsPerUs);
  }
  const uint64_t t0 = b.t0.load();
  const uint64_t end = t0 + run.window.warmup_ns + run.window.duration_ns;
  while (monotonic_ns() < t0) {
  }
  uint64_t payload[RawRing::kPayloadWords]{};
  uint64_t sent = 0;
  const double per_ns = run.rate / 1e9;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= end || b.abort.load(std::memory_order_relaxed) || g_stop) break;
    if (run.rate > 0) {
      // Paced: one message when due, stamped with the clock read just now.
      if (sent >= static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1) continue;
      payload[0] = now;
      payload[1] = sent;
      while (!w.try_write(payload)) {
      }
      ++sent;
    } else {
      // Flat out, flow-controlled; the clock only every 256 messages.
      for (int i = 0; i < 256; ++i) {
        payload[0] = now;
        payload[1] = sent;
        while (!w.try_write(payload)) {
        }
        ++sent;
      }
    }
  }
  payload[6] = RawBoard::kEnd;
  while (!w.try_write(payload))
    if (b.abort.load() || g_stop) return 1;
  return 0;
}

int raw_reader(RawBoard& b, const RawRun& run) {
  RawReader r(b.ring);
  auto h = std::make_unique<Histogram>();
  b.ready.fetch_add(1);
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (g_stop || b.abort.load()) return 1;
    sleep_for_ns(100 * kNsPerUs);
  }
  const uint64_t lo = b.t0.load() + run.window.warmup_ns;
  const uint64_t hi = lo + run.window.duration_ns;
  const uint64_t deadline = b.deadline.load();
  const bool paced = run.rate > 0;
  uint64_t out[RawRing::kPayloadWords];
  uint64_t received = 0, in_window = 0;
  uint64_t c0 = 0, t_first = 0, c1 = 0, t_last = 0;
  uint32_t empty = 0;
  for (;;) {
    if (r.try_read(out)) {
      if (out[6] == RawBoard::kEnd) break;
      ++received;
      if (paced) {
        const uint64_t rx = monotonic_ns();
        if (out[0] >= lo && out[0] < hi) {
          h->record(rx - out[0]);
          ++in_window;
        }
      } else if ((received & 1023) == 0) {
        const uint64_t now = monotonic_ns();
        if (!t_first && now >= lo) {
          t_first = now;
          c0 = received;
        }
        if (now < hi) {
          t_last = now;
          c1 = received;
        }
        b.progress.store(received, std::memory_order_relaxed);
      }
      continue;
    }
    if ((++empty & 4095) == 0) {
      b.progress.store(received, std::memory_order_relaxed);
      if (monotonic_ns() > deadline || b.abort.load() || g_stop) {
        b.reader.set_outcome("timed out");
        b.reader.finish(ProcState::kFailed);
        return 1;
      }
    }
  }
  ProcBoard& me = b.reader;
  me.total = received;
  if (paced) {
    me.window_messages = in_window;
    me.window_ns = run.window.duration_ns;
  } else {
    me.window_messages = c1 - c0;
    me.window_ns = t_last > t_first ? t_last - t_first : 0;
  }
  me.latency = *h;
  me.set_outcome("ok");
  me.finish(ProcState::kDone);
  return 0;
}

// Removes what a killed publisher may leave behind under our unique name.
struct RingCleanup {
  std::string name, dir;
  ~RingCleanup() {
    for (const char* d : {"/dev/shm", "/dev/hugepages"}) ::unlink(media::shm::ring_path(d, name).c_str());
    if (!dir.empty()) ::unlink(media::shm::ring_path(dir, name).c_str());
  }
};

// Rings of benches that were killed (kill -9: their RingCleanup never ran)
// are named mdcast-bench-<pid>-<n>.ring; remove those whose pid is gone.
void remove_stale_rings(const std::string& extra_dir) {
  std::vector<std::string> dirs{"/dev/shm", "/dev/hugepages"};
  if (!extra_dir.empty()) dirs.push_back(extra_dir);
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) {
      const std::string f = e.path().filename().string();
      unsigned long pid = 0;
      unsigned n = 0;
      char tail[8] = {};
      if (std::sscanf(f.c_str(), "mdcast-bench-%lu-%u.%5s", &pid, &n, tail) != 3 || std::string_view(tail) != "ring")
        continue;
      if (pid != static_cast<unsigned long>(::getpid()) && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
        std::filesystem::remove(e.path(), ec);
    }
  }
}

class ShmBench final : public MediumBench {
 public:
  ShmBench(const Settings& s, const Placement& where) : s_(s), where_(where) { remove_stale_rings(s.shm.dir); }

  std::string name() const override { return "shm"; }
  std::string describe() const override {
    const size_t slot = (media::shm::kSlotHeader + s_.shm.max_datagram + 63) / 64 * 64;
    return fmt::format("shm ring of {} slots x {} B (datagrams up to {} B) in {}", s_.shm.slots, slot,
                       s_.shm.max_datagram, s_.shm.dir.empty() ? "/dev/hugepages or /dev/shm" : s_.shm.dir);
  }
  size_t medium_overhead_per_datagram() const override { return media::shm::kSlotHeader; }
  std::string raw_name() const override { return "raw shm ring"; }

  RawResult raw(const RawRun& run, Progress& p) override {
    RawResult res;
    Shared<RawBoard> b;
    std::vector<ChildProcess> kids;
    kids.push_back(ChildProcess::spawn("raw writer", where_.cpu_for(0), [&] { return raw_writer(*b, run); }));
    kids.push_back(ChildProcess::spawn("raw reader", where_.cpu_for(1), [&] { return raw_reader(*b, run); }));
    const uint64_t ready_by = monotonic_ns() + 10 * kNsPerSec;
    while (b->ready.load() < 2) {
      for (auto& k : kids)
        if (k.poll()) {
          res.error = fmt::format("{} exited during setup (status {})", k.label(), k.status());
          return res;
        }
      if (monotonic_ns() > ready_by || g_stop) {
        res.error = "raw baseline processes did not start within 10 s";
        return res;
      }
      sleep_for_ns(kNsPerMs);
    }
    const uint64_t total = run.window.warmup_ns + run.window.duration_ns;
    const uint64_t t0 = monotonic_ns() + 5 * kNsPerMs;
    b->t0 = t0;
    b->deadline = t0 + total + 20 * kNsPerSec;
    b->go.store(1, std::memory_order_release);
    const bool finished = supervise(kids, b->t0, total, b->deadline.load() + kNsPerSec, b->abort, p,
                                    [&] { return fmt::format("{:.1f} M messages", static_cast<double>(b->progress.load()) / 1e6); });
    res.preempted = kids[0].usage().ru_nivcsw + kids[1].usage().ru_nivcsw;
    const ProcBoard& r = b->reader;
    if (!finished || r.get() != ProcState::kDone) {
      res.error = finished ? fmt::format("raw reader: {}", r.outcome) : "timed out or interrupted";
      return res;
    }
    res.ok = true;
    res.latency = r.latency;
    res.messages = r.window_messages;
    res.seconds = static_cast<double>(r.window_ns) / 1e9;
    res.rate = res.seconds > 0 ? static_cast<double>(r.window_messages) / res.seconds : 0;
    return res;
  }

  RunResult run(const RunSpec& run_spec, Progress& p) override {
    RunSpec spec = run_spec;
    spec.prime_datagrams = s_.shm.slots;
    RunResult res;
    if (spec.subscribers == 0 || spec.subscribers > RunBoard::kMaxSubscribers)
      fail("{} subscribers: the bench runs 1 to {}", spec.subscribers, RunBoard::kMaxSubscribers);
    res.busy_processes = (spec.pub_idle == IdleMode::kSpin ? 1u : 0u) + (spec.sub_idle == IdleMode::kSpin ? spec.subscribers : 0u);
    Shared<RunBoard> b;
    Settings s = s_;
    s.feed.name = fmt::format("bench-{}-{}", ::getpid(), ++runs_);
    s.feed.control.clear();
    s.sub.inject_loss = 0;
    const auto ms = static_cast<uint32_t>(realtime_ns() / kNsPerMs);
    s.pub.session = ms ? ms : 1;
    RingCleanup cleanup{s.feed.name, s.shm.dir};

    std::vector<ChildProcess> kids;
    auto setup_failed = [&](const ProcBoard& pb, ChildProcess& k) -> std::string {
      if (pb.get() == ProcState::kFailed) return fmt::format("{}: {}", k.label(), pb.outcome);
      return fmt::format("{} exited during setup (status {})", k.label(), k.status());
    };
    auto await_ready = [&](ProcBoard& pb, ChildProcess& k) -> bool {
      const uint64_t by = monotonic_ns() + 30 * kNsPerSec;
      while (pb.get() == ProcState::kStarting) {
        if (k.poll() || g_stop || monotonic_ns() > by) return false;
        sleep_for_ns(kNsPerMs);
      }
      return pb.get() == ProcState::kReady;
    };
    kids.push_back(ChildProcess::spawn("publisher", where_.cpu_for(0), [&] {
      ShmPublisherDriver drv(s, s.pub.session);
      return bench_publisher(s, drv, spec, *b);
    }));
    if (!await_ready(b->pub, kids[0])) {
      b->abort = 1;
      res.error = setup_failed(b->pub, kids[0]);
      return res;
    }
    for (uint32_t i = 0; i < spec.subscribers; ++i) {
      kids.push_back(ChildProcess::spawn(fmt::format("subscriber {}", i + 1), where_.cpu_for(i + 1), [&, i] {
        ShmSubscriberDriver drv(s, i + 1);
        return bench_subscriber(s, drv, spec, *b, b->subs[i]);
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
    res.pub.window_medium_bytes = pb.window_bytes + pb.window_datagrams * medium_overhead_per_datagram();
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
      const rusage& ru = kids[i + 1].usage();
      r.preempted = ru.ru_nivcsw;
      r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
      res.subs.push_back(std::move(r));
    }
    res.completed = finished;
    if (!finished) res.error = g_stop ? "interrupted" : "timed out";
    else if (!res.pub.ok) res.error = "publisher: " + res.pub.outcome;
    return res;
  }

 private:
  Settings s_;
  Placement where_;
  uint32_t runs_ = 0;
};

}  // namespace

std::unique_ptr<MediumBench> make_shm_bench(const Settings& s, const Placement& where) {
  return std::make_unique<ShmBench>(s, where);
}

}  // namespace mdcast::app::bench
