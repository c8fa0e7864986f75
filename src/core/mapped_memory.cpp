#include "mdcast/core/mapped_memory.hpp"

#include <sys/mman.h>

#include <utility>

#include "mdcast/core/error.hpp"

namespace mdcast {

namespace {
constexpr size_t kHugePage = 2u << 20;
size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }
}  // namespace

MappedMemory MappedMemory::anonymous(size_t bytes, Pages pages) {
  if (bytes == 0) fail("cannot map 0 bytes");
  if (pages == Pages::kHugeIfAvailable) {
    const size_t n = round_up(bytes, kHugePage);
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) return {static_cast<std::byte*>(p), n, true};
    // No reserved huge pages (the usual case on a fresh host): fall back.
  }
  const size_t n = round_up(bytes, 4096);
  if (pages == Pages::kHugeIfAvailable && n >= kHugePage) {
    // No reserved huge pages: ask for transparent ones before populating.
    // A ring written sequentially (the retransmit ring: 64 MiB of 4 KiB
    // slots) otherwise starts every datagram on a page whose translation is
    // not in the TLB; best effort, where THP is off this is 4 KiB pages.
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail_errno("mmap of {} bytes of anonymous memory", n);
    (void)madvise(p, n, MADV_HUGEPAGE);
    if (madvise(p, n, MADV_POPULATE_WRITE) != 0) {  // before Linux 5.14: touch every page
      auto* b = static_cast<volatile std::byte*>(p);
      for (size_t i = 0; i < n; i += 4096) b[i] = std::byte{0};
    }
    return {static_cast<std::byte*>(p), n, false};
  }
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) fail_errno("mmap of {} bytes of anonymous memory", n);
  return {static_cast<std::byte*>(p), n, false};
}

MappedMemory MappedMemory::shared(int fd, size_t bytes, bool writable, const std::string& what, uint64_t offset) {
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  // Populated now, at setup: otherwise the first lap over a shm ring takes a
  // page fault per slot on the data path (~17 us per datagram in a PVM guest
  // against ~13 ns warm: BM_ShmRingFirstLap vs BM_ShmRingWrite/104).
  void* p = mmap(nullptr, bytes, prot, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(offset));
  if (p == MAP_FAILED) fail_errno("mmap of {} ({} bytes at offset {})", what, bytes, offset);
  return {static_cast<std::byte*>(p), bytes, false};
}

MappedMemory::MappedMemory(MappedMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), huge_(o.huge_) {}

MappedMemory& MappedMemory::operator=(MappedMemory&& o) noexcept {
  if (this != &o) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    huge_ = o.huge_;
  }
  return *this;
}

MappedMemory::~MappedMemory() {
  if (data_) munmap(data_, size_);
}

}  // namespace mdcast
