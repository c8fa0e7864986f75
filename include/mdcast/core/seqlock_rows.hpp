// Fixed rows of 64-bit words in memory that other processes map read-only
// (a counters file's tables, stats/counters_file.hpp), each row under its
// own seqlock, so a reader never takes half of one update and half of the
// next.
//
// Row layout: word 0 the sequence (odd while being written, 0 never
// written), then `words` payload words; rows are `stride(words)` bytes apart
// (whole cache lines, so two rows written by different threads share none).
// One writer per row; any number of readers, which never write.
// Writing is a handful of relaxed stores and two fences: no allocation, no
// lock, no system call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "mdcast/core/fence.hpp"

namespace mdcast {

class SeqlockRows {
 public:
  static constexpr size_t stride(size_t words) noexcept { return ((words + 1) * 8 + 63) / 64 * 64; }
  // A reader that finds the writer mid-update this many times running takes
  // what it read and says so: the writer may have died there.
  static constexpr int kReadTries = 1000;

  SeqlockRows() = default;
  // `base` 64-byte aligned, rows * stride(words) bytes, zeroed by its creator.
  SeqlockRows(std::byte* base, size_t n_rows, size_t n_words) noexcept : base_(base), rows_(n_rows), words_(n_words) {}

  [[nodiscard]] size_t rows() const noexcept { return rows_; }
  [[nodiscard]] size_t words() const noexcept { return words_; }
  [[nodiscard]] bool empty() const noexcept { return rows_ == 0; }
  // Rows [first, first + n) as a table of their own (clamped to this one's):
  // a writer per slice, say a thread per channel.
  [[nodiscard]] SeqlockRows slice(size_t first, size_t n) const noexcept {
    if (first >= rows_) return {};
    return {base_ + first * stride(words_), n < rows_ - first ? n : rows_ - first, words_};
  }

  // Row i's payload becomes `w` (its first words() words; fewer leave the rest).
  void write(size_t i, std::span<const uint64_t> w) noexcept {
    if (i >= rows_) return;
    auto* p = reinterpret_cast<uint64_t*>(base_ + i * stride(words_));
    std::atomic_ref<uint64_t> seq(p[0]);
    const uint64_t s = seq.load(std::memory_order_relaxed);
    seq.store(s + 1, std::memory_order_relaxed);  // odd: being written
    release_fence();
    const size_t n = w.size() < words_ ? w.size() : words_;
    for (size_t k = 0; k < n; ++k) std::atomic_ref<uint64_t>(p[1 + k]).store(w[k], std::memory_order_relaxed);
    seq.store(s + 2, std::memory_order_release);
  }

  // A trivially copyable struct of whole words, as a row.
  template <class T>
  void write_struct(size_t i, const T& v) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
    uint64_t w[sizeof(T) / 8];
    std::memcpy(w, &v, sizeof(T));
    write(i, w);
  }

  // Reads one row's payload (out.size() words) from `row` (a row's start in
  // a mapping, possibly read-only). Returns the sequence it read under (0:
  // never written), or UINT64_MAX when the writer was mid-update at every
  // try (out then holds the last try's words).
  static uint64_t read(const std::byte* row, std::span<uint64_t> out) noexcept {
    const auto* w = reinterpret_cast<const std::atomic<uint64_t>*>(row);
    for (int t = 0; t < kReadTries; ++t) {
      const uint64_t before = w[0].load(std::memory_order_acquire);
      for (size_t k = 0; k < out.size(); ++k) out[k] = w[1 + k].load(std::memory_order_relaxed);
      acquire_fence();
      if (before % 2 == 0 && w[0].load(std::memory_order_relaxed) == before) return before;
    }
    return UINT64_MAX;
  }
  template <class T>
  static uint64_t read_struct(const std::byte* row, T& v) noexcept {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 8 == 0);
    uint64_t w[sizeof(T) / 8];
    const uint64_t s = read(row, w);
    std::memcpy(&v, w, sizeof(T));
    return s;
  }

 private:
  std::byte* base_ = nullptr;
  size_t rows_ = 0;
  size_t words_ = 0;
};

}  // namespace mdcast
