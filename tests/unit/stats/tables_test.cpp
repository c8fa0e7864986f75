// The counters file's tables: a publisher's subscriber rows and a
// subscriber's loss report read back as written, a reader racing the
// writer never takes half a row, a planted file whose tables do not fit is
// refused with the file's name (never read out of bounds), and the
// exporters show them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "mdcast/core/error.hpp"
#include "mdcast/feed/loss_report.hpp"
#include "mdcast/feed/subscriber_table.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/export.hpp"
#include "stat_catalogue.hpp"
#include "stat_dir.hpp"

namespace mdcast::stats {
namespace {

using feed::LossHow;
using feed::LossRecord;
using feed::LossReport;
using feed::SubscriberRow;
using feed::SubscriberTable;

class CountersFileTables : public StatDirTest {};

constexpr CounterInfo kOne[] = {{"x", "a counter"}};

TableSpec spec(size_t subscriber_rows, size_t loss_rows) {
  TableSpec t;
  t.subscriber_rows = subscriber_rows;
  t.loss_rows = loss_rows;
  return t;
}

SubscriberRow row(uint64_t client, std::string_view identity) {
  SubscriberRow r;
  r.client = client;
  r.channel = 3;
  r.flags = SubscriberRow::kSubscribed | SubscriberRow::kUnixPeer | (identity.empty() ? 0 : SubscriberRow::kAuthenticated);
  r.pid = 4000 + client;
  r.position = 100 * client;
  r.lag = client;
  r.drops = 7;
  r.retransmit_requests = 5;
  r.recoveries = 4;
  r.report_ns = 1'000'000;
  std::memcpy(r.identity, identity.data(), identity.size());
  return r;
}

TEST_F(CountersFileTables, SubscriberRowsReadBackAsWritten) {
  CountersFile f("publisher", "feed1", "shm", {{"app", kOne}}, {}, spec(4, 0));
  SubscriberTable t(f.subscriber_rows());
  ASSERT_EQ(t.rows(), 4u);
  const size_t a = t.claim(), b = t.claim();
  EXPECT_EQ(a, 0u);  // the first rows first
  EXPECT_EQ(b, 1u);
  t.write(a, row(1, "alice"));
  t.write(b, row(2, ""));
  CountersSnapshot s = read_counters(f.path());
  EXPECT_EQ(s.subscriber_rows, 4u);
  ASSERT_EQ(s.subscribers.size(), 2u);
  EXPECT_EQ(s.subscribers[0].slot, 0u);
  EXPECT_EQ(s.subscribers[0].row.identity_view(), "alice");
  EXPECT_EQ(s.subscribers[0].row.position, 100u);
  EXPECT_EQ(s.subscribers[0].row.recoveries, 4u);
  EXPECT_TRUE(s.subscribers[0].whole);
  EXPECT_EQ(subscriber_name(s.subscribers[0].row), "alice");
  EXPECT_EQ(subscriber_name(s.subscribers[1].row), "pid 4002");
  EXPECT_EQ(s.get("app.x", 9), 0u);  // the counters are where they were

  t.release(a);  // a subscriber that left is gone from the table at once
  s = read_counters(f.path());
  ASSERT_EQ(s.subscribers.size(), 1u);
  EXPECT_EQ(s.subscribers[0].slot, 1u);
  EXPECT_EQ(t.claim(), a);  // and its row is taken again
  EXPECT_EQ(t.claim(), 2u);
  EXPECT_EQ(t.claim(), 3u);
  EXPECT_EQ(t.claim(), SubscriberTable::kNone);  // bounded: every row taken
}

TEST_F(CountersFileTables, AFileWithoutTablesHasNone) {
  CountersFile f("publisher", "feed1", "shm", {{"app", kOne}});
  const CountersSnapshot s = read_counters(f.path());
  EXPECT_EQ(s.subscriber_rows, 0u);
  EXPECT_EQ(s.loss_rows, 0u);
  EXPECT_TRUE(f.subscriber_rows().empty());
  EXPECT_TRUE(f.loss_rows().empty());
  SubscriberTable t(f.subscriber_rows());
  EXPECT_EQ(t.claim(), SubscriberTable::kNone);
}

TEST_F(CountersFileTables, LossRingKeepsTheLastGapsOldestFirst) {
  CountersFile f("subscriber", "feed1", "shm", {{"app", kOne}}, {}, spec(0, 8));
  LossReport report(f.loss_rows());
  std::vector<LossRecord> recs(10);
  for (size_t i = 0; i < recs.size(); ++i) {
    recs[i].channel = 1;
    recs[i].first_seq = 100 * (i + 1);
    recs[i].datagrams = i + 1;
    recs[i].detected_ns = 1000 * (i + 1);
    report.open(recs[i]);
    EXPECT_EQ(recs[i].ordinal, i + 1);
  }
  recs[9].closed_ns = recs[9].detected_ns + 500;
  recs[9].how = static_cast<uint64_t>(LossHow::kRetransmit);
  recs[9].retransmitted = 10;
  report.update(recs[9]);
  recs[0].how = static_cast<uint64_t>(LossHow::kSnapshot);
  report.update(recs[0]);  // its row went to gap 9: not written over it
  const CountersSnapshot s = read_counters(f.path());
  EXPECT_EQ(s.loss_rows, 8u);
  ASSERT_EQ(s.losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(s.losses[i].record.ordinal, i + 3);
    EXPECT_EQ(s.losses[i].record.first_seq, 100 * (i + 3));
  }
  EXPECT_EQ(s.losses.back().record.method(), LossHow::kRetransmit);
  EXPECT_EQ(s.losses.back().record.closed_ns - s.losses.back().record.detected_ns, 500u);
  EXPECT_EQ(s.losses.front().record.method(), LossHow::kOpen);

  const std::string json = to_json({s}, 1, 0);
  EXPECT_NE(json.find("\"losses\":[{\"gap\":3,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"how\":\"retransmit\",\"recovery_ns\":500,\"retransmitted\":10"), std::string::npos) << json;
  EXPECT_NE(json.find("\"how\":\"open\",\"recovery_ns\":null"), std::string::npos) << json;
}

// Every row the writer writes has all its words equal (one refresh's
// value); a read that mixed two writes would not. The writer waits for each
// read after a few writes, so every read overlaps writes yet gets a quiet
// moment.
TEST_F(CountersFileTables, AReaderRacingTheWriterNeverTakesHalfARow) {
  CountersFile f("publisher", "feed1", "shm", {{"app", kOne}}, {}, spec(2, 2));
  SeqlockRows subs = f.subscriber_rows();
  LossReport losses(f.loss_rows());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread writer([&] {
    uint64_t w[feed::kSubscriberRowWords];
    for (uint64_t n = 1; !stop.load(std::memory_order_relaxed); ++n) {
      for (auto& x : w) x = n;
      w[offsetof(SubscriberRow, identity) / 8] = 0;  // the name stays printable
      subs.write(0, w);
      LossRecord r;
      r.channel = r.first_seq = r.datagrams = r.detected_ns = r.closed_ns = r.retransmitted = n;
      losses.open(r);
      if (n % 4 == 0)
        for (const uint64_t seen = reads.load(); reads.load() == seen && !stop.load();) std::this_thread::yield();
    }
  });
  uint64_t torn = 0, partial = 0, rows_seen = 0;
  for (int i = 0; i < 300; ++i) {
    const CountersSnapshot s = read_counters(f.path());
    for (const auto& x : s.subscribers) {
      ++rows_seen;
      partial += !x.whole;
      const SubscriberRow& r = x.row;
      torn += r.position != r.client || r.lag != r.client || r.written_ns != r.client || r.channel != r.client;
    }
    for (const auto& x : s.losses) {
      partial += !x.whole;
      const LossRecord& r = x.record;
      torn += r.first_seq != r.channel || r.closed_ns != r.channel || r.retransmitted != r.channel;
    }
    reads.fetch_add(1);
  }
  stop = true;
  writer.join();
  EXPECT_GT(rows_seen, 0u);
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(partial, 0u);
}

// Header fields a planted file could lie in (offsets from
// src/stats/counters_file.cpp's Header, fixed by the file format).
constexpr size_t kSubsRows = 180, kSubsOffset = 184, kSubsWords = 188, kLossRows = 192, kLossOffset = 196;

std::string plant(const std::filesystem::path& dir, const std::string& from, size_t at, uint32_t value) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::memcpy(bytes.data() + at, &value, sizeof value);
  const std::string path = (dir / "planted.stat").string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

TEST_F(CountersFileTables, APlantedTableThatDoesNotFitIsRefusedByName) {
  CountersFile f("publisher", "feed1", "shm", {{"app", kOne}}, {}, spec(4, 4));
  SubscriberTable t(f.subscriber_rows());
  t.write(t.claim(), row(1, "alice"));
  ASSERT_EQ(read_counters(f.path()).subscribers.size(), 1u);  // the original reads
  const auto refused = [&](size_t at, uint32_t value) {
    const std::string p = plant(dir_, f.path(), at, value);
    try {
      (void)read_counters(p);
      ADD_FAILURE() << "a file with " << value << " at byte " << at << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("inconsistent"), std::string::npos) << e.what();
    }
  };
  refused(kSubsRows, 1u << 30);          // more rows than any mdcast writes
  refused(kSubsRows, 5000);              // rows past the end of the file
  refused(kSubsOffset, 1u << 30);        // a table past the end
  refused(kSubsOffset, 64);              // inside the header
  refused(kSubsOffset, 4096 + 8);        // not aligned
  refused(kSubsWords, 100000);           // rows wider than any mdcast writes
  refused(kLossRows, 1u << 20);
  refused(kLossOffset, 0xffffffffu);
  // Rows narrower than this mdcast's: a table of another layout, left out.
  const CountersSnapshot narrow = read_counters(plant(dir_, f.path(), kSubsWords, 4));
  EXPECT_EQ(narrow.subscriber_rows, 4u);
  EXPECT_TRUE(narrow.subscribers.empty());
}

CountersSnapshot publisher_with(std::vector<CountersSnapshot::Subscriber> rows) {
  CountersSnapshot s;
  s.pid = 42;
  s.role = "publisher";
  s.name = "feed1";
  s.medium = "shm";
  s.alive = true;
  s.subscriber_rows = 256;
  s.subscribers = std::move(rows);
  return s;
}

TEST_F(CountersFileTables, PrometheusHasBoundedLabelsAndOneSamplePerRow) {
  auto a = row(1, "alice");
  a.peer = 0x0a000001;  // an address never becomes a label
  auto b = row(2, "");
  const CountersSnapshot s = publisher_with({{0, a, true}, {5, b, true}});
  const std::string text = to_prometheus({s}, app::stat_catalogue(), nullptr, 3'000'000);
  EXPECT_NE(text.find("# TYPE mdcast_subscriber_lag gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE mdcast_subscriber_recoveries_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("mdcast_subscriber_lag{pid=\"42\",role=\"publisher\",name=\"feed1\",medium=\"shm\",channel=\"3\","
                      "slot=\"0\",identity=\"alice\",subscriber_pid=\"4001\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("slot=\"5\",identity=\"\",subscriber_pid=\"4002\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("mdcast_subscriber_status_age_seconds{"), std::string::npos) << text;
  EXPECT_EQ(text.find("10.0.0.1"), std::string::npos);
  EXPECT_EQ(text.find("position=\""), std::string::npos);

  const std::string json = to_json({s}, 1, 3'000'000);
  EXPECT_NE(json.find("\"subscribers\":[{\"slot\":0,\"channel\":3,\"identity\":\"alice\",\"authenticated\":true,"
                      "\"subscriber_pid\":4001"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"status_age_ns\":2000000"), std::string::npos) << json;
}

}  // namespace
}  // namespace mdcast::stats
