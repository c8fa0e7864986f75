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

#include "mdcast/core/resources.hpp"
#include "medium.hpp"
#include "processes.hpp"
#include "raw_baseline.hpp"
#include "measure/child_process.hpp"
#include "raw_ring.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {
namespace {

// ------------------------------------------------------------- raw baseline --

struct ShmRawBoard {
  RawBoard run;
  RawRing ring;
};

int raw_writer(ShmRawBoard& sb, const RawRun& run) {
  RawBoard& b = sb.run;
  RawWriter w(sb.ring);
  if (!raw_ready_and_wait(b)) return 1;
  const uint64_t t0 = b.t0.load();
  const uint64_t end = t0 + run.window.warmup_ns + run.window.duration_ns;
  while (monotonic_ns() < t0) {
  }
  uint64_t payload[RawRing::kPayloadWords]{};
  uint64_t sent = 0;
  auto write = [&](uint64_t stamp) {
    payload[0] = stamp;
    payload[1] = sent;
    while (!w.try_write(payload)) {
    }
    ++sent;
  };
  const double per_ns = run.rate / 1e9;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= end || b.abort.load(std::memory_order_relaxed) || g_stop.requested()) break;
    if (run.rate > 0) {
      // Paced: one message when due, stamped with the clock read just now.
      if (sent >= static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1) continue;
      write(now);
    } else {
      // Flat out, flow-controlled; the clock only every 256 messages.
      for (int i = 0; i < 256; ++i) write(now);
    }
  }
  payload[6] = kRawEnd;
  while (!w.try_write(payload))
    if (b.abort.load() || g_stop.requested()) return 1;
  return 0;
}

int raw_reader(ShmRawBoard& sb, const RawRun& run) {
  RawBoard& b = sb.run;
  RawReader r(sb.ring);
  if (!raw_ready_and_wait(b)) return 1;
  RawTally tally(b.t0.load(), run);
  const uint64_t deadline = b.deadline.load();
  uint64_t out[RawRing::kPayloadWords];
  uint32_t empty = 0;
  for (;;) {
    if (r.try_read(out)) {
      if (out[6] == kRawEnd) break;
      tally.add(1);
      if (tally.paced()) {
        tally.sample(out[0], monotonic_ns());
      } else if ((tally.received() & 1023) == 0) {
        tally.sample_flat(monotonic_ns());
        b.progress.store(tally.received(), std::memory_order_relaxed);
      }
      continue;
    }
    if ((++empty & 4095) == 0) {
      b.progress.store(tally.received(), std::memory_order_relaxed);
      if (monotonic_ns() > deadline || b.abort.load() || g_stop.requested()) return b.reader.fail("timed out");
    }
  }
  tally.finish(b.reader, 0);  // flow-controlled: nothing is lost
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
    return fmt::format("shm ring of {} packed records ({} x {} B; datagrams up to {} B) in {}",
                       format_bytes(uint64_t{s_.shm.slots} * slot), s_.shm.slots, slot, s_.shm.max_datagram,
                       s_.shm.dir.empty() ? "/dev/hugepages or /dev/shm" : s_.shm.dir);
  }
  size_t medium_overhead_per_datagram() const override { return media::shm::kSlotHeader; }
  std::string raw_name() const override { return "raw shm ring"; }

  RawResult raw(const RawRun& run, Progress& p) override {
    Shared<ShmRawBoard> b;
    std::vector<ChildProcess> kids;
    kids.push_back(ChildProcess::spawn("raw writer", where_.cpu_for(0), [&] { return raw_writer(*b, run); }));
    kids.push_back(ChildProcess::spawn("raw reader", where_.cpu_for(1), [&] { return raw_reader(*b, run); }));
    return run_raw_pair(b->run, kids, run, p);
  }

  RunResult run(const RunSpec& run_spec, Progress& p) override {
    RunSpec spec = run_spec;
    spec.prime_datagrams = s_.shm.slots;
    const Settings s = run_settings(s_, ++runs_);
    RingCleanup cleanup{s.feed.name, s.shm.dir};
    return run_feed_processes<ShmEntry>(s, spec, where_, medium_overhead_per_datagram(), p);
  }

 private:
  Settings s_;
  Placement where_;
  uint32_t runs_ = 0;
};

}  // namespace

std::unique_ptr<MediumBench> medium_bench(ShmEntry, const Settings& s, const Placement& where) {
  return std::make_unique<ShmBench>(s, where);
}

}  // namespace mdcast::app::bench
