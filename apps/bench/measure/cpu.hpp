// CPUs, pinning and CPU-time clocks for benchmarks.
//
// Latency numbers only mean something when each busy-polling thread or
// process owns a core: these helpers pin, count what the process may use, and
// read the CPU time a process really consumed (as opposed to wall time).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mdcast/core/affinity.hpp"

namespace mdcast::app::bench {

// Listing and pinning CPUs is the library's (core/affinity.hpp).
using mdcast::allowed_cpus;
using mdcast::format_cpu_list;
using mdcast::parse_cpu_list;
using mdcast::pin_this_thread;

// CPU time of the whole calling process / of the calling thread, ns
// (CLOCK_PROCESS_CPUTIME_ID / CLOCK_THREAD_CPUTIME_ID: a system call, keep it
// off per-message paths).
[[nodiscard]] uint64_t process_cpu_ns() noexcept;
[[nodiscard]] uint64_t thread_cpu_ns() noexcept;

// /proc/loadavg's first three fields; zeros if unreadable.
[[nodiscard]] std::array<double, 3> load_average() noexcept;

// Cost of one monotonic_ns() call (the clock every mdcast latency uses, read
// once at each end), median of many back-to-back reads.
[[nodiscard]] double clock_read_ns();

}  // namespace mdcast::app::bench
