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

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) fail_errno("sched_getaffinity");
  std::vector<int> out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) fail("CPU list '{}' has an empty element (example: 0,1 or 0-3)", text);
    int lo = 0, hi = 0;
    char extra = 0;
    if (std::sscanf(item.c_str(), "%d-%d%c", &lo, &hi, &extra) == 2) {
    } else if (std::sscanf(item.c_str(), "%d%c", &lo, &extra) == 1) {
      hi = lo;
    } else {
      fail("'{}' in CPU list '{}' is not a CPU id or range (example: 0,1 or 0-3)", item, text);
    }
    if (lo < 0 || hi < lo) fail("'{}' in CPU list '{}' is not a valid range", item, text);
    for (int c = lo; c <= hi; ++c) {
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        fail("CPU {} is not available to this process (allowed: {})", c, format_cpu_list(allowed));
      out.push_back(c);
    }
    if (comma == text.size()) break;
  }
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size(); ++i) s += (i ? "," : "") + std::to_string(cpus[i]);
  return s;
}

void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) {
    errno = rc;
    fail_errno("cannot pin to CPU {}", cpu);
  }
}

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
