#include "mdcast/core/resources.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <utility>

#include "mdcast/core/error.hpp"

namespace mdcast {

std::string format_bytes(uint64_t b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (b < 1024) return fmt::format("{} B", b);
  size_t u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  // Whole numbers print whole ("64 MiB"); anything else with one decimal,
  // rounded down so that "has 1.9 GiB" never reads as enough for 2 GiB.
  const double tenths = static_cast<double>(static_cast<uint64_t>(v * 10)) / 10;
  if (tenths == static_cast<double>(static_cast<uint64_t>(tenths))) return fmt::format("{:.0f} {}", tenths, kUnits[u]);
  return fmt::format("{:.1f} {}", tenths, kUnits[u]);
}

std::optional<uint64_t> memory_available_bytes(const std::string& meminfo) {
  std::FILE* f = std::fopen(meminfo.c_str(), "r");
  if (!f) return std::nullopt;
  char line[256];
  std::optional<uint64_t> out;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      out = static_cast<uint64_t>(kib) * 1024;
      break;
    }
  }
  std::fclose(f);
  return out;
}

std::optional<FsSpace> filesystem_space(const std::string& path) {
  struct statvfs vfs;
  struct statfs fs;
  if (::statvfs(path.c_str(), &vfs) != 0 || ::statfs(path.c_str(), &fs) != 0) return std::nullopt;
  FsSpace s;
  s.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  s.total_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  const auto type = static_cast<unsigned long>(fs.f_type);
  s.memory_backed = type == TMPFS_MAGIC || type == RAMFS_MAGIC;
  s.huge_pages = type == HUGETLBFS_MAGIC;
  // tmpfs mounted without a size limit reports 0 blocks: it is bounded by
  // memory alone, which the caller checks.
  if (s.memory_backed && vfs.f_blocks == 0) s.free_bytes = s.total_bytes = UINT64_MAX;
  return s;
}

void check_room(uint64_t bytes, const std::string& dir, const std::string& what, const std::string& advice) {
  const auto fs = filesystem_space(dir);
  if (fs && bytes > fs->free_bytes)
    fail("{} needs {}, {} has {} free{}: free space there, {}", what, format_bytes(bytes), dir,
         format_bytes(fs->free_bytes), fs->huge_pages ? " (huge pages)" : "", advice);
  // Memory-backed files are the host's memory: a ring that does not fit in
  // what is available would be populated until the OOM killer chose someone.
  if (fs && fs->memory_backed) check_memory(bytes, what, advice);
}

void check_memory(uint64_t bytes, const std::string& what, const std::string& advice) {
  const auto avail = memory_available_bytes();
  if (avail && bytes > *avail)
    fail("{} needs {}, this host has {} of memory available (MemAvailable in /proc/meminfo): {}", what,
         format_bytes(bytes), format_bytes(*avail), advice);
}

void reserve_file(int fd, uint64_t bytes, const std::string& path, const std::string& advice) {
  if (bytes == 0) return;
  // fallocate(2) itself: glibc's posix_fallocate emulates a missing one by
  // writing a byte per block, which hugetlbfs refuses; EOPNOTSUPP falls back
  // to that emulation for file systems that have no fallocate.
  int rc = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (rc == EOPNOTSUPP) rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc == 0) return;
  std::string room;
  struct statvfs vfs;
  if (::fstatvfs(fd, &vfs) == 0)
    room = fmt::format(", its file system has {} free", format_bytes(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize));
  if (rc == ENOSPC)
    fail("{} needs {}{}: no space left to back it (a mapping of it would die with SIGBUS); {}", path,
         format_bytes(bytes), room, advice);
  fail("cannot reserve {} for {}{}: {} (errno {})", format_bytes(bytes), path, room, std::strerror(rc), rc);
}

namespace {

std::atomic<size_t> g_claimed{0};

// Descriptors open now (rings, sockets, epoll and io_uring instances, files).
size_t open_descriptors() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// Room for what a process opens after setup: a stat file, a recording, a
// reconnecting client's socket.
constexpr size_t kHeadroom = 64;

}  // namespace

OpenFilesClaim::OpenFilesClaim(size_t descriptors, std::string what) : descriptors_(descriptors) {
  const size_t all = g_claimed.fetch_add(descriptors) + descriptors;
  const size_t open_now = open_descriptors();
  const size_t want = open_now + all + kHeadroom;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, rl.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want) return;
  const size_t room = rl.rlim_cur > open_now + kHeadroom ? rl.rlim_cur - open_now - kHeadroom : 0;
  shortfall_ = fmt::format(
      "the open-files limit is {} (hard {}), below the {} descriptors this process may need ({} open now, {} for {}{}, "
      "{} spare): past about {} connections new ones are turned away (control.refused_descriptors); raise the hard "
      "limit (ulimit -Hn, systemd LimitNOFILE=) or lower the setting",
      rl.rlim_cur, rl.rlim_max, want, open_now, descriptors, what,
      all > descriptors ? fmt::format(", {} for the process's other servers", all - descriptors) : std::string(),
      kHeadroom, room > all - descriptors ? room - (all - descriptors) : 0);
}

OpenFilesClaim::OpenFilesClaim(OpenFilesClaim&& o) noexcept
    : descriptors_(std::exchange(o.descriptors_, 0)), shortfall_(std::move(o.shortfall_)) {}

OpenFilesClaim& OpenFilesClaim::operator=(OpenFilesClaim&& o) noexcept {
  if (this != &o) {
    g_claimed.fetch_sub(descriptors_);
    descriptors_ = std::exchange(o.descriptors_, 0);
    shortfall_ = std::move(o.shortfall_);
  }
  return *this;
}

OpenFilesClaim::~OpenFilesClaim() { g_claimed.fetch_sub(descriptors_); }

size_t OpenFilesClaim::claimed() noexcept { return g_claimed.load(); }

}  // namespace mdcast
