// How much memory and file-system space there is, asked before a medium
// commits to a large shared mapping. A mapping of a file that the file system
// cannot back is "created" fine and then kills every process touching it with
// SIGBUS; a mapping bigger than the host's memory is populated until the OOM
// killer picks someone. Both are setup errors with numbers instead.
//
//   check_room(bytes, dir, "shm ring /dev/shm/x", "lower shm.slots");  // throws Error
//   reserve_file(fd, bytes, path);                                     // fallocate, throws Error
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace mdcast {

// "64 MiB", "1.5 GiB", "512 B": binary units, at most one decimal.
[[nodiscard]] std::string format_bytes(uint64_t bytes);

// MemAvailable of /proc/meminfo (or another file in that format) in bytes:
// what the kernel thinks new allocations can get without swapping. nullopt
// when the file or the line is missing (old kernels, odd containers).
[[nodiscard]] std::optional<uint64_t> memory_available_bytes(const std::string& meminfo = "/proc/meminfo");

struct FsSpace {
  uint64_t free_bytes = 0;   // what an unprivileged writer may still allocate (f_bavail)
  uint64_t total_bytes = 0;
  bool memory_backed = false;  // tmpfs or ramfs: its pages are the host's memory
  bool huge_pages = false;     // hugetlbfs: free_bytes counts free huge pages
};
// The file system holding `path` (a directory or a file). nullopt if it cannot be asked.
[[nodiscard]] std::optional<FsSpace> filesystem_space(const std::string& path);

// Throws Error unless `bytes` fit in the file system of `dir` and, where that
// file system is memory (tmpfs, ramfs), in the memory the host has
// available. `what` names the thing ("shm ring /dev/shm/mdcast-x.ring"),
// `advice` says which setting makes it smaller. Checks what can be known:
// a file system that cannot be asked passes (reserve_file still catches it).
void check_room(uint64_t bytes, const std::string& dir, const std::string& what, const std::string& advice);

// Throws Error unless `bytes` of private memory fit in what the host has
// available (MemAvailable): "<what> need(s) 3 GiB, this host has 2 GiB of
// memory available (MemAvailable in /proc/meminfo): <advice>". Asked before
// allocating, so that a setting in its range but beyond this host is refused
// with numbers instead of a bad_alloc, an OOM kill or minutes of paging.
// Passes where MemAvailable cannot be read.
void check_memory(uint64_t bytes, const std::string& what, const std::string& advice);

// Allocates [0, bytes) of the open file fd (fallocate; the file grows to
// `bytes`), so that every page of a later shared mapping is backed. Throws
// Error naming `path`, the size and the space left when the file system is
// full (ENOSPC, ending with `advice`: what the operator can do) or refuses.
void reserve_file(int fd, uint64_t bytes, const std::string& path,
                  const std::string& advice = "free space there or make it smaller");

// Descriptors a server may hold at once (its connections), claimed at setup.
// Debian's default soft open-files limit (1024) is below what a control
// server admitting 1024 clients holds, and past the limit accept() fails:
// the server still works (it turns connections away, counted), but short of
// what it was configured for. A claim raises the soft RLIMIT_NOFILE to what
// the process has open now plus every live claim, up to the hard limit, and
// says when that is not enough. Move-only; the claim ends with its owner (the
// limit stays raised).
class OpenFilesClaim {
 public:
  OpenFilesClaim() = default;
  // `what` names the claimant and its settings ("control server unix:@x
  // (control.max_clients 1024 + control.max_unadmitted 64)").
  OpenFilesClaim(size_t descriptors, std::string what);
  OpenFilesClaim(OpenFilesClaim&& o) noexcept;
  OpenFilesClaim& operator=(OpenFilesClaim&& o) noexcept;
  OpenFilesClaim(const OpenFilesClaim&) = delete;
  OpenFilesClaim& operator=(const OpenFilesClaim&) = delete;
  ~OpenFilesClaim();

  // Empty, or for the operator: "the open-files limit is 1024 (hard 1024),
  // below the 1150 descriptors ... needs: ... raise the hard limit ...".
  [[nodiscard]] const std::string& shortfall() const noexcept { return shortfall_; }
  [[nodiscard]] size_t descriptors() const noexcept { return descriptors_; }
  // Every live claim of this process together.
  [[nodiscard]] static size_t claimed() noexcept;

 private:
  size_t descriptors_ = 0;
  std::string shortfall_;
};

}  // namespace mdcast
