// record::Recorder as the subscriber agent drives it: each delivered
// datagram written in order, a session marker before a new session's first,
// and after a break - a recording that starts late, a snapshot that replaced
// a range - a gap marker followed by the books as the snapshot left them, in
// image frames a replay rebuilds them from.
#include <gtest/gtest.h>

#include <cstring>

#include "mdcast/record/image.hpp"
#include "mdcast/record/recorder.hpp"
#include "record_support.hpp"

using namespace mdcast;
using namespace mdcast::record;
using test::TempDir;

namespace {

feed::Delivery at(uint64_t seq) { return {seq, 0, 1'000'000 * seq, false}; }

void deliver(Recorder& r, uint64_t seq) {
  const test::Bytes d = test::feed_datagram(seq);
  r.on_datagram_delivered(d, at(seq));
}

WriterOptions into(const TempDir& d) {
  WriterOptions o;
  o.base = d.base();
  return o;
}

// Books with something in each part of an image: definitions, a status, orders.
void fill(book::BookSet& b, uint32_t orders) {
  for (uint32_t i = 0; i < 2; ++i) ASSERT_EQ(b.apply(test::definition(i)), book::ApplyResult::kOk);
  ASSERT_EQ(b.apply(test::status(1, wire::TradingStatus::kHalted)), book::ApplyResult::kOk);
  for (uint32_t k = 1; k <= orders; ++k)
    ASSERT_EQ(b.apply(wire::Message::make_add(k % 2, k, 100 + k % 50, k, k % 3 ? wire::Side::kBuy : wire::Side::kSell)),
              book::ApplyResult::kOk);
}

}  // namespace

TEST(Recorder, WritesDatagramsInOrderAfterTheSessionMarker) {
  TempDir d;
  RecordCounters c;
  {
    Recorder r(into(d), &c);
    r.on_reset(0xabcdef);
    for (uint64_t s = 1; s <= 3; ++s) deliver(r, s);
    EXPECT_EQ(r.last_sequence(), 3u);
    r.close();
    EXPECT_TRUE(r.replayable());
  }
  const auto rb = test::read_all(recording_file(d.base(), 0));
  ASSERT_EQ(rb.end, ReadResult::kEnd);
  ASSERT_EQ(rb.frames.size(), 4u);
  ASSERT_TRUE(rb.frames[0].is_marker);
  EXPECT_EQ(rb.frames[0].marker.kind, MarkerKind::kSession);
  EXPECT_EQ(rb.frames[0].marker.a, 0xabcdefu);
  // The clock offset behind the frames' times (receive time + b), which
  // turns a same-host publisher's monotonic send times into wall-clock times.
  EXPECT_NE(rb.frames[0].marker.b, 0u);
  EXPECT_EQ(rb.frames[1].time_ns, at(1).receive_time_ns + rb.frames[0].marker.b);
  for (uint64_t s = 1; s <= 3; ++s) {
    EXPECT_FALSE(rb.frames[s].is_marker);
    EXPECT_EQ(rb.frames[s].header.sequence, s);
    EXPECT_EQ(rb.payloads[s], test::feed_datagram(s));
  }
  // Wall-clock times, as far apart as the deliveries were.
  EXPECT_EQ(rb.frames[3].time_ns - rb.frames[1].time_ns, 2'000'000u);
  EXPECT_EQ(c.session_markers.get(), 1u);
  EXPECT_EQ(c.datagrams.get(), 3u);
  EXPECT_EQ(c.gap_markers.get(), 0u);
  EXPECT_EQ(c.files.get(), 1u);
}

TEST(Recorder, GapAfterASnapshotIsFollowedByTheBooksItLeft) {
  TempDir d;
  book::BookSet books({8, 1024, 64});
  fill(books, 20);
  Recorder r(into(d));
  r.attach(&books);
  deliver(r, 1);
  deliver(r, 9);  // 2..8 replaced by a snapshot
  r.close();
  EXPECT_EQ(r.counters().gap_markers.get(), 1u);
  EXPECT_EQ(r.counters().image_frames.get(), 1u);
  EXPECT_TRUE(r.replayable());

  const auto rb = test::read_all(recording_file(d.base(), 0));
  ASSERT_EQ(rb.frames.size(), 4u);
  EXPECT_EQ(rb.frames[0].header.sequence, 1u);
  ASSERT_TRUE(rb.frames[1].is_marker);
  EXPECT_EQ(rb.frames[1].marker.kind, MarkerKind::kGap);
  EXPECT_EQ(rb.frames[1].marker.a, 2u);
  EXPECT_EQ(rb.frames[1].marker.b, 9u);
  ASSERT_TRUE(rb.frames[2].is_marker);
  EXPECT_EQ(rb.frames[2].marker.kind, MarkerKind::kImage);
  EXPECT_EQ(rb.frames[2].marker.a, 9u);
  EXPECT_EQ(rb.frames[2].marker.b, 1u);  // the last (only) frame of the image
  EXPECT_EQ(rb.frames[3].header.sequence, 9u);

  // The image rebuilds the books: same orders, statuses and definitions.
  Marker image;
  ASSERT_TRUE(decode_marker(rb.payloads[2], image));
  book::BookSet rebuilt({8, 1024, 64});
  uint32_t n = 0;
  EXPECT_TRUE(for_each_image_message(image, [&](const wire::Message& m) {
    ++n;
    return rebuilt.apply(m) == book::ApplyResult::kOk;
  }));
  EXPECT_EQ(n, 2u + 1u + 20u);  // 2 definitions, the halt (pre-open is where books start), 20 orders
  for (uint32_t i = 0; i < 8; ++i) {
    EXPECT_EQ(rebuilt.book(i).checksum(), books.book(i).checksum()) << i;
    EXPECT_EQ(rebuilt.book(i).status(), books.book(i).status()) << i;
  }
}

TEST(Recorder, LargeImageSpansFramesTheLastFlagged) {
  TempDir d;
  book::BookSet books({8, 1u << 14, 256});
  fill(books, 5000);  // ~40 bytes an add: over three frames of kImageChunk
  Recorder r(into(d));
  r.attach(&books);
  deliver(r, 5);  // a recording that began late
  r.close();
  const auto rb = test::read_all(recording_file(d.base(), 0));
  ASSERT_GE(rb.frames.size(), 5u);
  EXPECT_EQ(rb.frames.front().marker.kind, MarkerKind::kGap);
  const size_t images = rb.frames.size() - 2;
  EXPECT_EQ(r.counters().image_frames.get(), images);
  book::BookSet rebuilt({8, 1u << 14, 256});
  for (size_t i = 1; i <= images; ++i) {
    ASSERT_EQ(rb.frames[i].marker.kind, MarkerKind::kImage);
    EXPECT_EQ(rb.frames[i].marker.b, i == images ? 1u : 0u) << i;
    EXPECT_LE(rb.payloads[i].size(), kMarkerSize + kImageChunk);
    Marker m;
    ASSERT_TRUE(decode_marker(rb.payloads[i], m));
    for_each_image_message(m, [&](const wire::Message& msg) { return rebuilt.apply(msg) == book::ApplyResult::kOk; });
  }
  EXPECT_EQ(rebuilt.order_count(), 5000u);
  EXPECT_EQ(rebuilt.global_checksum(), books.global_checksum());
}

TEST(Recorder, WithoutBooksAGapIsRecordedBareAndDoesNotReplay) {
  TempDir d;
  Recorder r(into(d));
  deliver(r, 1);
  deliver(r, 4);
  r.close();
  EXPECT_EQ(r.counters().gap_markers.get(), 1u);
  EXPECT_EQ(r.counters().image_frames.get(), 0u);
  EXPECT_FALSE(r.replayable());
  EXPECT_EQ(test::read_all(recording_file(d.base(), 0)).frames.size(), 3u);
}

TEST(Recorder, LearnsThePublishersAddressFromTheMedium) {
  struct Udp {
    std::string addr;
    [[nodiscard]] const std::string& control_address() const noexcept { return addr; }
  };
  struct Wrapped {  // as media::fault::FaultyMedium is
    Udp u;
    Udp& inner() noexcept { return u; }
  };
  FrameAddress a;
  Wrapped w{{"unix:/tmp/x"}};
  EXPECT_FALSE(publisher_address(w, a));
  w.u.addr = "tcp:10.1.2.3:7471";
  ASSERT_TRUE(publisher_address(w, a));
  EXPECT_EQ(a.source_ip, 0x0a010203u);
  struct Shm {};
  Shm s;
  EXPECT_FALSE(publisher_address(s, a));
}
