// Histograms in counters files and their export: the cumulative buckets
// Prometheus gets are exact counts of the log-linear histogram (cumulative,
// +Inf equal to the count, the sum carried over), a file's histogram reads
// back whole, and a reader racing the writer never mixes two refreshes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/export.hpp"
#include "stat_catalogue.hpp"
#include "stat_dir.hpp"

namespace mdcast::stats {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// Samples on both sides of every bound (b and b + 1), and far above the last.
Histogram around_bounds() {
  Histogram h;
  for (const uint64_t b : kHistogramBounds) {
    h.record(b);
    h.record(b + 1);
  }
  h.record(5'000'000'000);  // 5 s: above every bound, counted in +Inf only
  return h;
}

TEST(HistogramExport, BucketsAreCumulativeExactAndEndInTheCount) {
  const Histogram h = around_bounds();
  const auto b = cumulative_buckets(h);
  ASSERT_EQ(b.size(), std::size(kHistogramBounds) + 1);
  for (size_t i = 0; i < std::size(kHistogramBounds); ++i) {
    EXPECT_EQ(b[i].le, kHistogramBounds[i]);
    // b is at its bound, b + 1 above it: exactly 2i + 1 samples are <= the i-th.
    EXPECT_EQ(b[i].count, 2 * i + 1) << "le " << b[i].le;
    if (i > 0) {
      EXPECT_GE(b[i].count, b[i - 1].count);
    }
  }
  EXPECT_EQ(b.back().le, UINT64_MAX);
  EXPECT_EQ(b.back().count, h.count());
  EXPECT_EQ(h.count(), 2 * std::size(kHistogramBounds) + 1);
}

TEST(HistogramExport, EmptyHistogramIsAllZeros) {
  for (const auto& b : cumulative_buckets(Histogram{})) EXPECT_EQ(b.count, 0u);
}

CountersSnapshot with_latency(uint64_t pid, const Histogram& h) {
  CountersSnapshot s;
  s.path = "/dev/shm/mdcast-" + std::to_string(pid) + ".stat";
  s.pid = pid;
  s.role = "subscriber";
  s.name = "feed1";
  s.medium = "shm";
  s.state = ProcessState::kRunning;
  s.alive = true;
  s.values = {{"sub.gaps", 0}};
  s.histograms.push_back({"app.latency_ns", h});
  return s;
}

TEST(HistogramExport, PrometheusHasBucketsSumAndCountInSeconds) {
  Histogram h;
  for (int i = 0; i < 90; ++i) h.record(100);    // <= 127 ns
  for (int i = 0; i < 10; ++i) h.record(3000);   // <= 3071 ns
  ExportStats st;
  const std::string out = to_prometheus({with_latency(11, h), with_latency(12, Histogram{})}, app::stat_catalogue(), &st);
  EXPECT_EQ(st.unknown_labels, 0u);
  EXPECT_EQ(count(out, "# TYPE mdcast_app_latency_seconds histogram\n"), 1u) << out;
  EXPECT_EQ(count(out, "# HELP mdcast_app_latency_seconds "), 1u);
  const std::string l = "pid=\"11\",role=\"subscriber\",name=\"feed1\",medium=\"shm\"";
  EXPECT_NE(out.find("mdcast_app_latency_seconds_bucket{" + l + ",le=\"6.3e-08\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("mdcast_app_latency_seconds_bucket{" + l + ",le=\"1.27e-07\"} 90\n"), std::string::npos);
  EXPECT_NE(out.find("mdcast_app_latency_seconds_bucket{" + l + ",le=\"2.047e-06\"} 90\n"), std::string::npos);
  EXPECT_NE(out.find("mdcast_app_latency_seconds_bucket{" + l + ",le=\"3.071e-06\"} 100\n"), std::string::npos);
  EXPECT_NE(out.find("mdcast_app_latency_seconds_bucket{" + l + ",le=\"+Inf\"} 100\n"), std::string::npos);
  EXPECT_NE(out.find("mdcast_app_latency_seconds_sum{" + l + "} 3.9e-05\n"), std::string::npos);  // 90*100 + 10*3000 ns
  EXPECT_NE(out.find("mdcast_app_latency_seconds_count{" + l + "} 100\n"), std::string::npos);
  EXPECT_EQ(count(out, "mdcast_app_latency_seconds_bucket{"), 2 * (std::size(kHistogramBounds) + 1));
  EXPECT_NE(out.find("mdcast_app_latency_seconds_count{pid=\"12\",role=\"subscriber\",name=\"feed1\",medium=\"shm\"} 0\n"),
            std::string::npos);
  // A family's samples together: 11's buckets, sum, count, then 12's.
  EXPECT_LT(out.find("mdcast_app_latency_seconds_count{pid=\"11\""), out.find("mdcast_app_latency_seconds_bucket{pid=\"12\""));
}

TEST(HistogramExport, AnUnknownHistogramIsLeftOutAndCounted) {
  auto s = with_latency(13, Histogram{});
  s.histograms.push_back({"zzz.made_up_ns", Histogram{}});
  ExportStats st;
  const std::string out = to_prometheus({s}, app::stat_catalogue(), &st);
  EXPECT_EQ(st.unknown_labels, 1u);
  EXPECT_EQ(out.find("made_up"), std::string::npos) << out;
}

TEST(HistogramExport, JsonHasCountSumPercentilesAndCumulativeBuckets) {
  Histogram h;
  for (int i = 0; i < 100; ++i) h.record(100);
  const std::string out = to_json({with_latency(7, h)}, 1);
  EXPECT_NE(out.find("\"histograms\":{\"app.latency_ns\":{\"count\":100,\"sum\":10000,\"max\":100,\"p50\":100,"
                     "\"p99\":100,\"p99.9\":100,\"buckets\":[[63,0],[127,100],[191,100],"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("[1073741823,100]]}}"), std::string::npos) << out;
}

class CountersFileHistogram : public StatDirTest {};

constexpr CounterInfo kOne[] = {{"x", "a counter"}};

TEST_F(CountersFileHistogram, PublishedHistogramReadsBackWhole) {
  CountersFile f("subscriber", "feed1", "shm", {{"app", kOne}}, {"app.latency_ns", "app.other_ns"});
  const Histogram h = around_bounds();
  f.publish(0, h);
  f.publish(7, h);  // no such histogram: ignored
  const CountersSnapshot s = read_counters(f.path());
  ASSERT_EQ(s.histograms.size(), 2u);
  EXPECT_EQ(s.histograms[0].label, "app.latency_ns");
  EXPECT_EQ(s.histograms[1].label, "app.other_ns");
  const Histogram* r = s.histogram("app.latency_ns");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->count(), h.count());
  EXPECT_EQ(r->sum(), h.sum());
  EXPECT_EQ(r->max(), h.max());
  EXPECT_EQ(r->buckets(), h.buckets());
  EXPECT_EQ(r->percentile(99), h.percentile(99));
  EXPECT_EQ(s.histogram("app.other_ns")->count(), 0u);
  EXPECT_EQ(s.histogram("app.none"), nullptr);
  EXPECT_EQ(s.get("app.x", 9), 0u);  // the counters are where they were
}

TEST_F(CountersFileHistogram, AFileWithoutHistogramsHasNone) {
  CountersFile f("publisher", "feed1", "shm", {{"app", kOne}});
  EXPECT_TRUE(read_counters(f.path()).histograms.empty());
}

// Every refresh the writer adds samples of one value, so a whole read has
// sum == 1000 * count; a read mixing two refreshes would not. The writer
// publishes twice per read, then waits for that read to end: each read
// overlaps writes (and must retry) yet gets a quiet moment, as a reader of
// a real subscriber (a refresh every 250 ms) always does.
TEST_F(CountersFileHistogram, AReaderRacingTheWriterSeesOneRefreshAtATime) {
  CountersFile f("subscriber", "feed1", "shm", {{"app", kOne}}, {"app.latency_ns"});
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread writer([&] {
    Histogram h;
    for (uint64_t n = 1; !stop.load(std::memory_order_relaxed); ++n) {
      h.record(1000);
      f.publish(0, h);
      if (n % 2 == 0)
        for (const uint64_t r = reads.load(); reads.load() == r && !stop.load();) std::this_thread::yield();
    }
  });
  uint64_t last = 0, torn = 0, partial = 0, backwards = 0;
  for (int i = 0; i < 300 || last == 0; ++i) {
    const CountersSnapshot s = read_counters(f.path());
    const auto& h = s.histograms.at(0);
    torn += h.hist.sum() != 1000 * h.hist.count();
    partial += !h.whole;
    backwards += h.hist.count() < last;
    last = h.hist.count();
    reads.fetch_add(1);
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(partial, 0u);
  EXPECT_EQ(backwards, 0u);
}

}  // namespace
}  // namespace mdcast::stats
