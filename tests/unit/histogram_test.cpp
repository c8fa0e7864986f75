// Histogram: exact below 128, within 1/64 above, percentiles on known
// distributions, merge equals recording into one.
#include <gtest/gtest.h>

#include <cmath>

#include "mdcast/core/histogram.hpp"
#include "mdcast/core/rng.hpp"

namespace mdcast::test {
namespace {

TEST(Histogram, EmptyReportsZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.percentile(50), 0u);
}

TEST(Histogram, ExactBelow128) {
  for (uint64_t v = 0; v < Histogram::kSubCount; ++v) {
    EXPECT_EQ(Histogram::index_of(v), v);
    EXPECT_EQ(Histogram::upper_edge(v), v);
    Histogram h;
    h.record(v);
    EXPECT_EQ(h.percentile(50), v);
    EXPECT_EQ(h.percentile(100), v);
    EXPECT_EQ(h.min(), v);
    EXPECT_EQ(h.max(), v);
  }
}

TEST(Histogram, BucketsTileTheRangeWithBoundedError) {
  // Every value up to 2^20 exhaustively, then samples up to the top bucket:
  // the bucket's edges bracket the value, buckets are contiguous and the
  // reported upper edge is within 1/64 of the value.
  auto check = [](uint64_t v) {
    const size_t i = Histogram::index_of(v);
    ASSERT_LT(i, Histogram::kBuckets);
    const uint64_t hi = Histogram::upper_edge(i);
    ASSERT_GE(hi, v) << v;
    if (i > 0) {
      ASSERT_LT(Histogram::upper_edge(i - 1), v) << v;
    }
    ASSERT_LE(static_cast<double>(hi - v), static_cast<double>(v) / 64.0) << v;
  };
  size_t prev = 0;
  for (uint64_t v = 0; v < (1u << 20); ++v) {
    check(v);
    const size_t i = Histogram::index_of(v);
    ASSERT_TRUE(i == prev || i == prev + 1) << "buckets skip at " << v;
    prev = i;
  }
  Rng r(3);
  for (int k = 0; k < 200'000; ++k) {
    const int bits = 20 + static_cast<int>(r.below(Histogram::kMaxBits - 20));
    check((uint64_t{1} << bits) | (r.next() & ((uint64_t{1} << bits) - 1)));
  }
  EXPECT_EQ(Histogram::index_of((uint64_t{1} << Histogram::kMaxBits) - 1), Histogram::kBuckets - 1);
}

TEST(Histogram, HugeValuesClampToTheLastBucket) {
  Histogram h;
  h.record(UINT64_MAX / 2);
  EXPECT_EQ(Histogram::index_of(UINT64_MAX), Histogram::kBuckets - 1);
  EXPECT_EQ(h.max(), UINT64_MAX / 2) << "max is exact";
  EXPECT_EQ(h.count(), 1u);
}

TEST(Histogram, PercentilesOfAUniformDistribution) {
  Histogram h;
  for (uint64_t v = 1; v <= 100'000; ++v) h.record(v);
  EXPECT_EQ(h.count(), 100'000u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), 100'000u);
  EXPECT_DOUBLE_EQ(h.mean(), 50'000.5);
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 99.99}) {
    const double want = p / 100.0 * 100'000;
    const auto got = static_cast<double>(h.percentile(p));
    EXPECT_GE(got, want - 1) << p;
    EXPECT_LE(got, want * (1 + 1.0 / 64)) << p;
  }
  EXPECT_EQ(h.percentile(100), 100'000u) << "clamped to the recorded max";
}

TEST(Histogram, PercentilesOfASkewedDistribution) {
  // 99% at 50 ns, 1% at 1 ms: p99 is the fast mode, p99.5 the slow one.
  Histogram h;
  for (int i = 0; i < 99'000; ++i) h.record(50);
  for (int i = 0; i < 1'000; ++i) h.record(1'000'000);
  EXPECT_EQ(h.percentile(50), 50u);
  EXPECT_EQ(h.percentile(99), 50u);
  EXPECT_GE(h.percentile(99.5), 1'000'000u);
  EXPECT_LE(h.percentile(99.5), 1'000'000u);  // clamped to max
  EXPECT_EQ(h.percentile(0.0001), 50u);
}

TEST(Histogram, MergeEqualsRecordingIntoOne) {
  Histogram a, b, all;
  Rng r(11);
  for (int i = 0; i < 50'000; ++i) {
    const uint64_t v = r.below(1u << (1 + r.below(30)));
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  Histogram m = a;
  m.merge(b);
  EXPECT_EQ(m.count(), all.count());
  EXPECT_EQ(m.min(), all.min());
  EXPECT_EQ(m.max(), all.max());
  EXPECT_EQ(m.sum(), all.sum());
  EXPECT_EQ(m.buckets(), all.buckets());
  for (double p : {50.0, 99.0, 99.99}) EXPECT_EQ(m.percentile(p), all.percentile(p));
  // Merging an empty histogram changes nothing, in either direction.
  Histogram e;
  m.merge(e);
  EXPECT_EQ(m.min(), all.min());
  e.merge(all);
  EXPECT_EQ(e.min(), all.min());
  EXPECT_EQ(e.percentile(50), all.percentile(50));
}

TEST(Histogram, RebuildFromBuckets) {
  Histogram h;
  for (uint64_t v : {3, 3, 200, 5000, 1'000'000}) h.record(v);
  Histogram r;
  for (size_t i = 0; i < Histogram::kBuckets; ++i) r.add_bucket(i, h.buckets()[i]);
  r.add_bucket(Histogram::kBuckets, 5);  // out of range: ignored
  EXPECT_EQ(r.count(), h.count());
  EXPECT_EQ(r.buckets(), h.buckets());
  EXPECT_EQ(r.min(), 3u);
  r.set_extremes(h.min(), h.max(), h.sum());
  for (double p : {20.0, 50.0, 90.0, 100.0}) EXPECT_EQ(r.percentile(p), h.percentile(p)) << p;
  EXPECT_EQ(r.mean(), h.mean());
}

TEST(Histogram, Reset) {
  Histogram h;
  h.record(5);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  h.record(9);
  EXPECT_EQ(h.min(), 9u) << "reset restores the min sentinel";
}

}  // namespace
}  // namespace mdcast::test
