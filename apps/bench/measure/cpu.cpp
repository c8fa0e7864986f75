#include "cpu.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::app::bench {

namespace {
uint64_t read_clock(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

uint64_t process_cpu_ns() noexcept { return read_clock(CLOCK_PROCESS_CPUTIME_ID); }
uint64_t thread_cpu_ns() noexcept { return read_clock(CLOCK_THREAD_CPUTIME_ID); }

std::array<double, 3> load_average() noexcept {
  std::array<double, 3> a{};
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &a[0], &a[1], &a[2]) != 3) a = {};
    std::fclose(f);
  }
  return a;
}

double clock_read_ns() {
  // Batches of 64 back-to-back reads; the median batch resists preemption.
  std::vector<double> per_read;
  for (int b = 0; b < 201; ++b) {
    const uint64_t t0 = monotonic_ns();
    uint64_t t = t0;
    for (int i = 0; i < 64; ++i) t = monotonic_ns();
    per_read.push_back(static_cast<double>(t - t0) / 64.0);
  }
  std::nth_element(per_read.begin(), per_read.begin() + 100, per_read.end());
  return per_read[100];
}

}  // namespace mdcast::app::bench
