// Move-only owner of an mmap'd region: anonymous memory (huge pages when the
// host has them, 4 KiB pages otherwise) or a shared file mapping. Engines take
// spans of it; the media that register memory (verbs) register it once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace mdcast {

class MappedMemory {
 public:
  enum class Pages { kHugeIfAvailable, kSmall };

  MappedMemory() noexcept = default;
  // Anonymous, zeroed, private. Throws Error on failure (with size and errno).
  static MappedMemory anonymous(size_t bytes, Pages pages = Pages::kHugeIfAvailable);
  // Shared mapping of an open file descriptor (the caller keeps or closes the
  // fd), from `offset` (a multiple of the file's page size).
  static MappedMemory shared(int fd, size_t bytes, bool writable, const std::string& what, uint64_t offset = 0);

  MappedMemory(MappedMemory&& o) noexcept;
  MappedMemory& operator=(MappedMemory&& o) noexcept;
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;
  ~MappedMemory();

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }
  [[nodiscard]] bool huge_pages() const noexcept { return huge_; }
  [[nodiscard]] explicit operator bool() const noexcept { return data_ != nullptr; }

 private:
  MappedMemory(std::byte* d, size_t n, bool huge) noexcept : data_(d), size_(n), huge_(huge) {}
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool huge_ = false;
};

}  // namespace mdcast
