#include "usage.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "cpu.hpp"
#include "mdcast/core/clock.hpp"

namespace mdcast::app::bench {

namespace {
uint64_t tv_ns(const timeval& t) noexcept {
  return static_cast<uint64_t>(t.tv_sec) * kNsPerSec + static_cast<uint64_t>(t.tv_usec) * 1000;
}
}  // namespace

DtlbCounter::DtlbCounter() noexcept {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_HW_CACHE;
  a.config = PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
  // User space only: what perf_event_paranoid 2 (the usual default) allows
  // an unprivileged process, and the loops measured run there.
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  const long fd = ::syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  if (fd < 0) {
    const int e = errno;
    std::snprintf(why_, sizeof why_, "perf_event_open(dTLB-load-misses): %s%s", std::strerror(e),
                  e == ENOENT || e == EOPNOTSUPP || e == ENODEV ? " (no hardware counters exposed)"
                  : e == EACCES || e == EPERM                   ? " (see /proc/sys/kernel/perf_event_paranoid)"
                                                                : "");
    return;
  }
  fd_ = static_cast<int>(fd);
}

DtlbCounter::~DtlbCounter() {
  if (fd_ >= 0) ::close(fd_);
}
DtlbCounter::DtlbCounter(DtlbCounter&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {
  std::memcpy(why_, o.why_, sizeof why_);
}
DtlbCounter& DtlbCounter::operator=(DtlbCounter&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    std::memcpy(why_, o.why_, sizeof why_);
  }
  return *this;
}

uint64_t DtlbCounter::read() const noexcept {
  if (fd_ < 0) return kNotCounted;
  uint64_t v = 0;
  return ::read(fd_, &v, sizeof v) == static_cast<ssize_t>(sizeof v) ? v : kNotCounted;
}

UsageMark usage_mark(const DtlbCounter* dtlb) noexcept {
  UsageMark m;
  m.dtlb = dtlb ? dtlb->read() : kNotCounted;
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  m.user_ns = tv_ns(ru.ru_utime);
  m.sys_ns = tv_ns(ru.ru_stime);
  m.minflt = static_cast<uint64_t>(ru.ru_minflt);
  m.cpu_ns = process_cpu_ns();
  m.wall_ns = monotonic_ns();
  return m;
}

uint64_t mapping_page_size(const void* addr) {
  std::FILE* f = std::fopen("/proc/self/smaps", "r");
  if (!f) return 0;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  char line[512];
  bool inside = false;
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && std::sscanf(line, "KernelPageSize: %" SCNu64 " kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace mdcast::app::bench
