// What the raw baseline of every medium shares: the board its writer and
// reader children and the parent meet on, the reader's accounting of the
// window, and the parent's side of a run. A medium adds only what it writes
// and reads (raw_shm.cpp, raw_verbs.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "board.hpp"
#include "measure/child_process.hpp"
#include "medium.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "progress.hpp"

namespace mdcast::app::bench {

// The word that tells a raw reader the writer has finished.
constexpr uint64_t kRawEnd = 0xe0d0e0d0e0d0e0d0ull;

struct RawBoard {
  std::atomic<uint32_t> ready{0};  // children set up
  std::atomic<uint32_t> go{0};
  std::atomic<uint32_t> abort{0};
  std::atomic<uint64_t> t0{0};
  std::atomic<uint64_t> deadline{0};
  std::atomic<uint64_t> progress{0};
  ProcBoard writer;  // setup failures
  ProcBoard reader;  // results
};

// A raw baseline child, set up: says so and waits for the parent's go.
// False when the run was aborted or interrupted meanwhile.
bool raw_ready_and_wait(RawBoard& b) noexcept;

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
// spawned; wait until both say ready, set the timeline,
// supervise, and read the reader's board.
RawResult run_raw_pair(RawBoard& b, std::vector<ChildProcess>& kids, const RawRun& run, Progress& p,
                       uint64_t setup_ns = 10 * kNsPerSec);

}  // namespace mdcast::app::bench
