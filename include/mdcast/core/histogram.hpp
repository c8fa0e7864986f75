// Log-linear latency histogram (the HdrHistogram idea, fixed precision):
// values below 2^kSubBits are exact, above that each power of two is split
// into 2^(kSubBits-1) linear buckets, so any value is reported within
// 1/64 (1.6%) of itself. Fixed storage, no allocation when recording: safe on
// the data path. Enough resolution for p99.99 over hundreds of millions of samples.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>

namespace mdcast {

class Histogram {
 public:
  static constexpr int kSubBits = 7;                 // 128 exact values, then 64 buckets per octave
  static constexpr int kMaxBits = 44;                // values up to ~4.9 hours in ns
  static constexpr uint64_t kSubCount = 1ull << kSubBits;
  static constexpr uint64_t kHalf = kSubCount / 2;
  static constexpr size_t kBuckets = kSubCount + (kMaxBits - kSubBits) * kHalf;

  void record(uint64_t v) noexcept {
    ++counts_[index_of(v)];
    ++total_;
    max_ = std::max(max_, v);
    min_ = std::min(min_, v);
    sum_ += v;
  }

  void merge(const Histogram& o) noexcept {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    max_ = std::max(max_, o.max_);
    min_ = std::min(min_, o.min_);
    sum_ += o.sum_;
  }

  void reset() noexcept { *this = Histogram{}; }

  [[nodiscard]] uint64_t count() const noexcept { return total_; }
  [[nodiscard]] uint64_t max() const noexcept { return total_ ? max_ : 0; }
  [[nodiscard]] uint64_t min() const noexcept { return total_ ? min_ : 0; }
  [[nodiscard]] double mean() const noexcept {
    return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0.0;
  }

  // The value at percentile p (0..100]: the upper edge of the bucket holding the
  // ceil(p% * count)-th smallest sample, clamped to the recorded max.
  [[nodiscard]] uint64_t percentile(double p) const noexcept {
    if (total_ == 0) return 0;
    auto rank = static_cast<uint64_t>(p / 100.0 * static_cast<double>(total_) + 0.9999999);
    rank = std::clamp<uint64_t>(rank, 1, total_);
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper_edge(i), max_);
    }
    return max_;
  }

  static constexpr size_t index_of(uint64_t v) noexcept {
    if (v < kSubCount) return static_cast<size_t>(v);
    const int msb = 63 - std::countl_zero(v);           // >= kSubBits
    if (msb >= kMaxBits) return kBuckets - 1;
    const int shift = msb - (kSubBits - 1);              // keep kSubBits significant bits
    const uint64_t mant = (v >> shift) - kHalf;          // 0 .. kHalf-1
    return static_cast<size_t>(kSubCount + static_cast<uint64_t>(msb - kSubBits) * kHalf + mant);
  }

  static constexpr uint64_t upper_edge(size_t i) noexcept {
    if (i < kSubCount) return i;
    const uint64_t j = i - kSubCount;
    const int msb = static_cast<int>(j / kHalf) + kSubBits;
    const int shift = msb - (kSubBits - 1);
    const uint64_t mant = j % kHalf + kHalf;
    return ((mant + 1) << shift) - 1;
  }

  [[nodiscard]] const std::array<uint64_t, kBuckets>& buckets() const noexcept { return counts_; }
  [[nodiscard]] uint64_t sum() const noexcept { return sum_; }

  // Rebuild from raw parts (e.g. read back from another process's result file).
  void add_bucket(size_t i, uint64_t n) noexcept {
    if (i >= kBuckets || n == 0) return;
    counts_[i] += n;
    total_ += n;
    const uint64_t edge = upper_edge(i);
    max_ = std::max(max_, edge);
    min_ = std::min(min_, i < kSubCount ? edge : upper_edge(i - 1) + 1);
    sum_ += edge * n;
  }
  void set_extremes(uint64_t mn, uint64_t mx, uint64_t sum) noexcept {
    min_ = mn;
    max_ = mx;
    sum_ = sum;
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t sum_ = 0;
};

}  // namespace mdcast
