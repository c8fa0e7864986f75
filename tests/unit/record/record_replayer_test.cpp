// record::Replayer: a recording published again, message for message, in
// order; from a sequence, a time or an offset with the books before it
// published first as an image; paced by the recorded times; across a
// recorded snapshot through its image; fragments reassembled as the
// subscriber engine does; damage reported with the file and the offset,
// everything before it published. Through a fake target (what was published,
// exactly) and once through a real PublisherAgent over the in-memory medium.
#include <gtest/gtest.h>

#include <filesystem>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/record/recorder.hpp"
#include "mdcast/record/replayer.hpp"
#include "mdcast/record/writer.hpp"
#include "record_support.hpp"

using namespace mdcast;
using namespace mdcast::record;
using test::TempDir;

namespace {

constexpr uint64_t kT0 = 1'780'000'000'000'000'000ull;
constexpr book::BookConfig kBooks{8, 1024, 64};

// The publisher as the replay sees it: every message it took, its books.
struct FakeTarget final : ReplayTarget {
  book::BookSet books_{kBooks};
  std::vector<wire::Message> out;
  uint64_t works = 0;
  uint64_t stop_after = UINT64_MAX;  // work() rounds before the application says stop
  book::ApplyResult last = book::ApplyResult::kOk;

  feed::PublishResult publish(wire::Message& m) override {
    last = books_.apply(m);
    if (last != book::ApplyResult::kOk && last != book::ApplyResult::kIgnored) return feed::PublishResult::kRejected;
    out.push_back(m);
    return feed::PublishResult::kOk;
  }
  bool work(uint64_t, bool) override { return ++works < stop_after; }
  [[nodiscard]] const book::BookSet& books() const noexcept override { return books_; }
  [[nodiscard]] std::string_view refusal(feed::PublishResult) const noexcept override { return book::to_string(last); }
};

feed::PublisherConfig config() {
  feed::PublisherConfig c;
  c.books = kBooks;
  return c;
}

// Datagrams first..last, `step_ns` apart.
std::string write_feed(const TempDir& d, uint64_t first, uint64_t last, uint64_t step_ns = kNsPerMs) {
  WriterOptions o;
  o.base = d.base();
  o.index_every = 4;
  RecordingWriter w(std::move(o));
  for (uint64_t s = first; s <= last; ++s) EXPECT_TRUE(w.write(test::feed_datagram(s), s, kT0 + s * step_ns));
  w.close();
  return recording_file(d.base(), 0);
}

ReplayOptions options(const std::string& file, double speed = 0, ReplayFrom from = {}) {
  return {{file}, speed, from};
}

uint64_t checksum_of_full_replay(const std::string& file) {
  FakeTarget t;
  Replayer r(options(file));
  EXPECT_TRUE(r.run(t, config()));
  return t.books_.global_checksum();
}

}  // namespace

TEST(Replayer, PublishesEveryRecordedMessageInOrder) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  FakeTarget t;
  Replayer r(options(file));
  EXPECT_TRUE(r.run(t, config()));
  EXPECT_TRUE(r.damage().empty());
  EXPECT_TRUE(r.started());
  ASSERT_EQ(t.out.size(), 6u + 10u);
  for (uint64_t s = 1; s <= 10; ++s) EXPECT_EQ(t.out[5 + s].add.order_id, s);
  EXPECT_EQ(r.published(), 16u);
  EXPECT_EQ(r.last_sequence(), 10u);
  EXPECT_EQ(r.counters().datagrams.get(), 10u);
  EXPECT_EQ(r.counters().image_messages.get(), 0u);
}

TEST(Replayer, FromASequencePublishesTheBooksBeforeItAsAnImageFirst) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  const auto at = locate({file}, 6);
  ASSERT_TRUE(at);
  EXPECT_EQ(at->entry.sequence, 5u);  // indexed every 4: 1, 5, 9

  FakeTarget t;
  Replayer r(options(file, 0, parse_from("6")));
  EXPECT_TRUE(r.run(t, config()));
  EXPECT_EQ(r.counters().skipped.get(), 5u);
  EXPECT_EQ(r.counters().image_messages.get(), 3u + 3u + 5u);  // definitions, statuses, orders 1-5
  ASSERT_EQ(t.out.size(), 11u + 5u);
  EXPECT_EQ(t.out[0].type, wire::MsgType::kInstrumentDefinition);
  for (uint64_t s = 6; s <= 10; ++s) EXPECT_EQ(t.out[11 + s - 6].add.order_id, s);
  EXPECT_EQ(t.books_.global_checksum(), checksum_of_full_replay(file));
}

TEST(Replayer, FromAnOffsetOrATimeStartsAtTheFirstDatagramAtOrAfterIt) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  {
    FakeTarget t;
    Replayer r(options(file, 0, parse_from("4500us")));  // the first frame is at 1 ms: 5.5 ms, datagram 6
    EXPECT_TRUE(r.run(t, config()));
    EXPECT_EQ(r.counters().skipped.get(), 5u);
  }
  {
    FakeTarget t;
    ReplayFrom f;
    f.time_ns = kT0 + 7 * kNsPerMs;
    Replayer r(options(file, 0, f));
    EXPECT_TRUE(r.run(t, config()));
    EXPECT_EQ(r.counters().skipped.get(), 6u);
    EXPECT_EQ(t.out.back().add.order_id, 10u);
  }
}

TEST(Replayer, PacesByTheRecordedTimes) {
  TempDir d;
  const std::string file = write_feed(d, 1, 5, 20 * kNsPerMs);  // 80 ms recorded
  for (const double speed : {1.0, 2.0}) {
    FakeTarget t;
    Replayer r(options(file, speed));
    const uint64_t t0 = monotonic_ns();
    EXPECT_TRUE(r.run(t, config()));
    EXPECT_GE(monotonic_ns() - t0, static_cast<uint64_t>(80 * kNsPerMs / speed)) << speed;
    EXPECT_GT(t.works, 5u);  // the publisher worked while it waited
  }
}

TEST(Replayer, CutFileStopsAtTheOffsetAfterEverythingBeforeIt) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 10);
  FakeTarget t;
  Replayer r(options(file));
  EXPECT_FALSE(r.run(t, config()));
  EXPECT_NE(r.damage().find(file + ": offset "), std::string::npos) << r.damage();
  EXPECT_EQ(r.last_sequence(), 9u);
  EXPECT_EQ(t.out.size(), 6u + 9u);
  EXPECT_EQ(r.counters().damaged.get(), 1u);
}

// A disk that filled exactly between two records leaves a readable file; the
// recorder marked its index cut, and the replay says where the file stops
// after publishing everything in it.
TEST(Replayer, AFileCutBetweenTwoRecordsIsDamageWhenItsIndexSaysCut) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);  // indexed at 1, 5, 9; the records are the same size
  const auto ix = read_index(index_file(file));
  ASSERT_TRUE(ix && ix->entries.size() == 3);
  const uint64_t size = std::filesystem::file_size(file);
  const uint64_t record = (size - ix->entries[2].offset) / 2;
  std::filesystem::resize_file(file, size - record);  // sequence 10 never reached the disk
  {
    FakeTarget t;
    Replayer r(options(file));
    EXPECT_TRUE(r.run(t, config())) << "without the mark, a clean cut reads as a whole file: " << r.damage();
  }
  {
    // The mark a failed write leaves (RecordFile.AFailedWriteStopsTheRecordingAndMarksItsIndexCut).
    std::FILE* f = std::fopen(index_file(file).c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(kIndexCutMagic, 1, sizeof kIndexCutMagic, f), sizeof kIndexCutMagic);
    std::fclose(f);
  }
  FakeTarget t;
  Replayer r(options(file));
  EXPECT_FALSE(r.run(t, config()));
  EXPECT_NE(r.damage().find(file + ": offset " + std::to_string(size - record) + ": "), std::string::npos)
      << r.damage() << r.note();
  EXPECT_EQ(r.last_sequence(), 9u);
}

TEST(Replayer, ABreakInTheSequenceIsDamage) {
  TempDir d;
  WriterOptions o;
  o.base = d.base();
  {
    RecordingWriter w(o);
    for (uint64_t s : {1, 2, 3, 5}) ASSERT_TRUE(w.write(test::feed_datagram(s), s, kT0 + s));
    w.close();
  }
  FakeTarget t;
  Replayer r(options(resolve_recording({d.base()}).at(0)));
  EXPECT_FALSE(r.run(t, config()));
  EXPECT_NE(r.damage().find("the sequence jumps from 3 to 5"), std::string::npos) << r.damage();
  EXPECT_EQ(r.last_sequence(), 3u);
}

TEST(Replayer, ARecordedSnapshotIsReplayedThroughItsImage) {
  TempDir d;
  // What the recorder's subscriber had after a snapshot at 8: orders 1-3
  // gone but 2, an order 100 added, instrument 2 halted.
  book::BookSet snap(kBooks);
  for (uint64_t s = 1; s <= 3; ++s) {
    const test::Bytes dg = test::feed_datagram(s);
    wire::MessageCursor cur = wire::MessageCursor::payload_of(dg);
    wire::MessageView v;
    while (cur.next(v)) ASSERT_EQ(snap.apply(wire::decode(v)), book::ApplyResult::kOk);
  }
  wire::Message del;
  del.type = wire::MsgType::kDeleteOrder;
  del.instrument = 1;
  del.del = {1};
  ASSERT_EQ(snap.apply(del), book::ApplyResult::kOk);
  ASSERT_EQ(snap.apply(wire::Message::make_add(1, 100, 900, 5, wire::Side::kSell)), book::ApplyResult::kOk);
  ASSERT_EQ(snap.apply(test::status(2, wire::TradingStatus::kHalted)), book::ApplyResult::kOk);
  {
    WriterOptions o;
    o.base = d.base();
    Recorder rec(o);
    for (uint64_t s = 1; s <= 3; ++s) rec.on_datagram_delivered(test::feed_datagram(s), {s, 0, s * kNsPerMs, false});
    rec.attach(&snap);
    rec.on_datagram_delivered(test::feed_datagram(9), {9, 0, 9 * kNsPerMs, false});
    rec.close();
  }
  // ... and then datagram 9's order.
  ASSERT_EQ(snap.apply(wire::Message::make_add(0, 9, 1009, 10, wire::Side::kBuy)), book::ApplyResult::kOk);
  FakeTarget t;
  Replayer r(options(resolve_recording({d.base() + ".pcap"}).at(0)));
  EXPECT_TRUE(r.run(t, config())) << r.damage();
  EXPECT_EQ(r.counters().gaps.get(), 1u);
  for (uint32_t i = 0; i < kBooks.max_instruments; ++i) {
    EXPECT_EQ(t.books_.book(i).checksum(), snap.book(i).checksum()) << i;
    EXPECT_EQ(t.books_.book(i).status(), snap.book(i).status()) << i;
  }
}

TEST(Replayer, FragmentsAreReassembledAndCheckedAsTheSubscriberDoes) {
  TempDir d;
  test::Bytes body(300);
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<std::byte>(i);
  const test::Bytes whole = test::encode_msg(wire::Message::make_opaque(1, body));
  const auto total = static_cast<uint32_t>(whole.size());
  const std::span<const std::byte> w(whole);
  WriterOptions o;
  o.base = d.base();
  {
    RecordingWriter rw(o);
    ASSERT_TRUE(rw.write(test::feed_datagram(1), 1, kT0));
    const test::Bytes d2 = test::DatagramBuilder(2).raw(test::fragment_msg(1, 77, 0, 2, total, w.first(100))).build();
    const test::Bytes d3 = test::DatagramBuilder(3).raw(test::fragment_msg(1, 77, 1, 2, total, w.subspan(100))).build();
    // An orphan: its first fragment never came.
    const test::Bytes d4 = test::DatagramBuilder(4).raw(test::fragment_msg(1, 78, 1, 2, total, w.subspan(100))).build();
    ASSERT_TRUE(rw.write(d2, 2, kT0 + 2));
    ASSERT_TRUE(rw.write(d3, 3, kT0 + 3));
    ASSERT_TRUE(rw.write(d4, 4, kT0 + 4));
    rw.close();
  }
  FakeTarget t;
  Replayer r(options(recording_file(d.base(), 0)));
  EXPECT_TRUE(r.run(t, config())) << r.damage();
  ASSERT_EQ(t.out.size(), 6u + 1u + 1u);
  EXPECT_EQ(t.out[7].type, wire::MsgType::kOpaque);
  EXPECT_EQ(t.out[7].opaque.size, body.size());
  EXPECT_EQ(r.counters().fragments_dropped.get(), 1u);
}

TEST(Replayer, StopsWhenTheApplicationSaysSo) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  FakeTarget t;
  t.stop_after = 3;
  Replayer r(options(file));
  EXPECT_FALSE(r.run(t, config()));
  EXPECT_TRUE(r.stopped());
  EXPECT_TRUE(r.damage().empty());
  EXPECT_EQ(r.last_sequence(), 3u);
}

TEST(Replayer, SetupRefusesWhatItCannotReplay) {
  TempDir d;
  EXPECT_THROW((void)resolve_recording({d.base()}), Error);
  EXPECT_THROW((void)parse_from("0"), Error);
  EXPECT_THROW((void)parse_from("soon"), Error);
  EXPECT_THROW((void)parse_from("2026-13-01T00:00:00Z"), Error);
  EXPECT_EQ(parse_from("2026-12-01T17:00:00.5Z").time_ns, 1'796'144'400'500'000'000ull);
  EXPECT_EQ(parse_from("2m").offset_ns, 120 * kNsPerSec);
  EXPECT_EQ(parse_from("123").seq, 123u);
  EXPECT_EQ(parse_speed("max"), 0.0);
  EXPECT_EQ(parse_speed("2.5"), 2.5);
  EXPECT_THROW((void)parse_speed("0"), Error);
  EXPECT_THROW((void)parse_speed("fast"), Error);
}

// The template path an application takes: a PublisherAgent over a medium
// (here the in-memory one), a subscriber of it delivered every message.
TEST(Replayer, RepublishesThroughAPublisherAgent) {
  TempDir d;
  const std::string file = write_feed(d, 1, 10);
  media::mem::PublisherMedium pub_medium;
  feed::PublisherConfig pc = config();
  pc.heartbeat_interval_ns = kNsPerMs;
  feed::PublisherAgent<media::mem::PublisherMedium> agent(pub_medium, pc, {}, {}, {0});
  struct Count {
    uint64_t messages = 0;
    void on_message(const wire::Message&, const feed::Delivery&) noexcept { ++messages; }
    void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
    void on_reset(uint64_t) noexcept {}
  } count;
  media::mem::SubscriberMedium sub_medium(pub_medium);
  feed::SubscriberConfig sc;
  sc.books = kBooks;
  feed::SubscriberAgent<media::mem::SubscriberMedium, Count> sub(sub_medium, sc, count, nullptr, {0});
  sub.start();
  struct Hooks {
    decltype(sub)& s;
    bool on_work(uint64_t now) {
      s.do_work(now);
      return true;
    }
  } hooks{sub};
  Replayer r(options(file, 0));
  EXPECT_TRUE(r.run(agent, hooks)) << r.damage();
  const uint64_t deadline = monotonic_ns() + 10 * kNsPerSec;
  bool ended = false;
  while (!sub.finished() && monotonic_ns() < deadline) {
    const uint64_t now = monotonic_ns();
    ended = ended || agent.end_session(now);
    agent.do_work(now);
    sub.do_work(now);
  }
  EXPECT_TRUE(sub.finished());
  EXPECT_EQ(count.messages, 16u);
  EXPECT_EQ(sub.subscriber().books()->global_checksum(), checksum_of_full_replay(file));
}
