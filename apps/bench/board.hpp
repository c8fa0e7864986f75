// How a forked child of the bench reports to the parent: its corner of a
// board in memory they share (measure/child_process.hpp's Shared<T>), read by
// the parent while the child runs (state, progress) and after it is done.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "measure/usage.hpp"
#include "mdcast/core/histogram.hpp"

namespace mdcast::app::bench {

enum class ProcState : uint32_t { kStarting = 0, kReady = 1, kDone = 2, kFailed = 3 };

// One process's corner of the board. Results are written before `state`
// becomes kDone (release), and read by the parent after it sees that (acquire)
// or after the process exited.
struct alignas(64) ProcBoard {
  std::atomic<uint32_t> state{0};
  std::atomic<uint64_t> progress{0};  // messages published / delivered so far
  uint64_t total = 0;
  uint64_t window_messages = 0, window_datagrams = 0, window_bytes = 0, window_cpu_ns = 0, window_ns = 0;
  uint64_t window_control_ns = 0;
  uint64_t kernel_drops = 0;  // datagrams the medium dropped before the reader read them (UDP: socket buffer full)
  uint64_t lapped = 0, gaps = 0, recovered = 0, retransmit_requests = 0, snapshots = 0, malformed = 0, duplicates = 0;
  Histogram latency;
  // The measured window's cost to this process (the publisher: its window;
  // a subscriber: from the control round at or after the window's start to
  // the one at or after its end).
  Usage usage;
  char perf_why[120]{};  // why dTLB misses were not counted; empty when they were
  // The publisher's engine ring, over the window's datagrams still in it
  // (the last lap at most): slot bytes, datagrams swept, the distinct 4 KiB
  // pages and kernel pages (hugetlbfs: 2 MiB) their slot writes entered.
  uint64_t ring_slot_bytes = 0, ring_swept = 0, ring_pages_4k = 0, ring_page_bytes = 0, ring_pages_kernel = 0;
  char outcome[256]{};

  void set_outcome(std::string_view s) noexcept {
    const size_t n = std::min(s.size(), sizeof outcome - 1);
    std::memcpy(outcome, s.data(), n);
    outcome[n] = 0;
  }
  void finish(ProcState st) noexcept { state.store(static_cast<uint32_t>(st), std::memory_order_release); }
  [[nodiscard]] ProcState get() const noexcept { return static_cast<ProcState>(state.load(std::memory_order_acquire)); }
  // Says why, marks this process failed; the child's exit status (1).
  int fail(std::string_view why) noexcept {
    set_outcome(why);
    finish(ProcState::kFailed);
    return 1;
  }
};

}  // namespace mdcast::app::bench
