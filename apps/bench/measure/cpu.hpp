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

namespace mdcast::app::bench {

// CPUs this process may run on (sched_getaffinity), ascending.
[[nodiscard]] std::vector<int> allowed_cpus();

// "0,1", "0-3", "0-3,8" -> CPU ids in the order given. Throws Error naming the
// bad element; every id must be in allowed_cpus().
[[nodiscard]] std::vector<int> parse_cpu_list(const std::string& text);
[[nodiscard]] std::string format_cpu_list(const std::vector<int>& cpus);

// Pins the calling thread to one CPU. Throws Error (with errno text).
void pin_this_thread(int cpu);

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
