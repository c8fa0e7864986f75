// What a process spent over a measured interval: CPU time (user and system
// apart), minor page faults and, where the kernel exposes the hardware
// counter, user-space dTLB load misses. Each mark is two or three system
// calls: taken at the edges of a window, never per message.
#pragma once

#include <cstdint>
#include <string>

namespace mdcast::app::bench {

inline constexpr uint64_t kNotCounted = UINT64_MAX;  // a counter this host does not give

struct UsageMark {
  uint64_t wall_ns = 0;   // CLOCK_MONOTONIC
  uint64_t cpu_ns = 0;    // CLOCK_PROCESS_CPUTIME_ID
  uint64_t user_ns = 0;   // getrusage(RUSAGE_SELF)
  uint64_t sys_ns = 0;
  uint64_t minflt = 0;
  uint64_t dtlb = kNotCounted;
};

// One process's cost between two marks; plain data (it travels through the
// bench's shared board).
struct Usage {
  uint64_t wall_ns = 0, cpu_ns = 0, user_ns = 0, sys_ns = 0, minflt = 0;
  uint64_t dtlb_misses = kNotCounted;

  [[nodiscard]] static Usage between(const UsageMark& a, const UsageMark& b) noexcept {
    Usage u;
    u.wall_ns = b.wall_ns - a.wall_ns;
    u.cpu_ns = b.cpu_ns - a.cpu_ns;
    u.user_ns = b.user_ns - a.user_ns;
    u.sys_ns = b.sys_ns - a.sys_ns;
    u.minflt = b.minflt - a.minflt;
    if (a.dtlb != kNotCounted && b.dtlb != kNotCounted) u.dtlb_misses = b.dtlb - a.dtlb;
    return u;
  }
  // CPU time over wall time, %: 100 is one core busy the whole interval.
  // NaN for an empty interval.
  [[nodiscard]] double cpu_pct() const noexcept { return pct(cpu_ns); }
  [[nodiscard]] double user_pct() const noexcept { return pct(user_ns); }
  [[nodiscard]] double sys_pct() const noexcept { return pct(sys_ns); }

 private:
  [[nodiscard]] double pct(uint64_t ns) const noexcept {
    return wall_ns ? 100.0 * static_cast<double>(ns) / static_cast<double>(wall_ns) : __builtin_nan("");
  }
};

// User-space dTLB load misses of the calling thread (perf_event_open,
// PERF_COUNT_HW_CACHE_DTLB read misses). Virtual machines often expose no
// hardware counters: then ok() is false and why() says what the kernel said.
class DtlbCounter {
 public:
  DtlbCounter() noexcept;  // opens and enables the counter, or records why not
  ~DtlbCounter();
  DtlbCounter(DtlbCounter&& o) noexcept;
  DtlbCounter& operator=(DtlbCounter&& o) noexcept;
  DtlbCounter(const DtlbCounter&) = delete;
  DtlbCounter& operator=(const DtlbCounter&) = delete;

  [[nodiscard]] bool ok() const noexcept { return fd_ >= 0; }
  [[nodiscard]] const char* why() const noexcept { return why_; }
  // Misses so far; kNotCounted when the counter is not open or a read fails.
  [[nodiscard]] uint64_t read() const noexcept;

 private:
  int fd_ = -1;
  char why_[120] = "";
};

// A mark now; dtlb may be null (not counted).
[[nodiscard]] UsageMark usage_mark(const DtlbCounter* dtlb) noexcept;

// Distinct pages of `page` bytes that a sweep writing the byte ranges
// [addr_i, addr_i + len_i), in order, enters: a range that starts on the page
// the previous one ended on does not enter it again.
class PageSweep {
 public:
  explicit PageSweep(uint64_t page) noexcept : page_(page) {}
  void add(uint64_t addr, uint64_t len) noexcept {
    if (!len) return;
    const uint64_t first = addr / page_, last = (addr + len - 1) / page_;
    pages_ += last - first + 1 - (have_ && first == last_ ? 1 : 0);
    last_ = last;
    have_ = true;
  }
  [[nodiscard]] uint64_t pages() const noexcept { return pages_; }

 private:
  uint64_t page_;
  uint64_t pages_ = 0, last_ = 0;
  bool have_ = false;
};

// The kernel page size of the mapping holding addr (/proc/self/smaps'
// KernelPageSize: 2 MiB on hugetlbfs), bytes; 0 if it cannot be read.
[[nodiscard]] uint64_t mapping_page_size(const void* addr);

}  // namespace mdcast::app::bench
