// The crash drill (core/drill.hpp): a publisher whose fragment drill is
// armed dies right after the first datagram that ends inside a fragmented
// message, and nowhere else; unarmed, or at another point, it never does.
#include <signal.h>

#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "mdcast/core/drill.hpp"
#include "mdcast/feed/publisher.hpp"

namespace mdcast {
namespace {

// Says each datagram it is handed, at once (stderr is unbuffered), so that
// what a killed child sent is in what it printed.
struct SayingSink {
  uint64_t sent = 0;
  media::SendResult send(std::span<const std::byte>, uint64_t seq) noexcept {
    ++sent;
    std::fprintf(stderr, "sent %llu\n", static_cast<unsigned long long>(seq));
    return media::SendResult::kSent;
  }
  media::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return media::SendResult::kSent; }
};

feed::PublisherConfig small_datagrams(const CrashDrill* drill) {
  feed::PublisherConfig c;
  c.max_datagram = 256;  // a 1000-byte message: 6 pieces
  c.flush_interval_ns = 0;
  c.retransmit_bytes = 1 << 20;
  c.drill = drill;
  return c;
}

void publish(feed::Publisher<SayingSink>& pub, size_t bytes) {
  std::vector<std::byte> payload(bytes, std::byte{7});
  wire::Message m = wire::Message::make_opaque(1, payload);
  ASSERT_EQ(pub.publish(m, 1), feed::PublishResult::kOk);
  pub.flush(1);
}

TEST(CrashDrill, PointsByName) {
  EXPECT_EQ(parse_drill_point(""), DrillPoint::kNone);
  EXPECT_EQ(parse_drill_point("fragment"), DrillPoint::kFragment);
  EXPECT_EQ(parse_drill_point("snapshot"), DrillPoint::kSnapshot);
  EXPECT_FALSE(parse_drill_point("burst"));
  EXPECT_EQ(drill_point_name(DrillPoint::kSnapshot), "snapshot");
}

TEST(CrashDrill, UnarmedOrElsewhereNothingHappens) {
  CrashDrill fragment(DrillPoint::kFragment), snapshot(DrillPoint::kSnapshot);
  snapshot.arm();  // armed, but a publisher's datagrams are not its point
  for (const CrashDrill* d : {&fragment, &snapshot}) {
    SayingSink sink;
    feed::Publisher<SayingSink> pub(small_datagrams(d), sink);
    publish(pub, 40);
    publish(pub, 1000);
    publish(pub, 40);
    EXPECT_EQ(sink.sent, 8u);
  }
}

TEST(CrashDrillDeathTest, AnArmedFragmentDrillDiesBetweenTheFirstAndSecondPiece) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        CrashDrill drill(DrillPoint::kFragment);
        SayingSink sink;
        feed::Publisher<SayingSink> pub(small_datagrams(&drill), sink);
        publish(pub, 40);  // datagram 1
        drill.arm();
        publish(pub, 40);  // datagram 2: whole messages, not the point
        publish(pub, 1000);  // datagrams 3-8: dies right after 3
        std::fprintf(stderr, "still alive\n");
        std::exit(0);
      },
      testing::KilledBySignal(SIGKILL), "sent 1\nsent 2\nsent 3\n$");
}

}  // namespace
}  // namespace mdcast
