// A publisher pair's takeover as the subscriber sees it (subscriber_rails.cpp):
// one rail silent while the other goes on, the rail coming back, and the
// time without new data, on a virtual clock with a poll at every step.
#include "subscriber_fixture.hpp"

namespace mdcast::test {
namespace {

constexpr uint64_t kTimeout = 10'000;

class SubscriberRailsTest : public SubscriberTest {
 protected:
  void start_pair() {
    auto c = sub_config();
    c.publisher_timeout_ns = kTimeout;
    start(c);
    publish_pairs(40);
  }
  // Moves the clock, then what arrived is read and the control round runs.
  void at(uint64_t dt, std::initializer_list<std::pair<uint64_t, Rail>> arrivals = {}) {
    now_ += dt;
    for (const auto& [seq, rail] : arrivals) rx(feed_.dg(seq), rail);
    poll();
  }
  // A heartbeat saying the publisher's tail is `last`. Its instrument count
  // is not the feed's, so no global checksum is compared: this test's feed
  // published ahead of what it delivers.
  Bytes idle_heartbeat(uint64_t last) const { return feed_.heartbeat({}, last, {}, 0, 1); }
  const feed::SubscriberCounters& c() const { return sub_->counters(); }
};

TEST_F(SubscriberRailsTest, OneRailSilentWhileTheOtherGoesOnIsCountedOnceForThatRail) {
  start_pair();
  // Rail B one datagram behind rail A, as the member behind is.
  at(0, {{1, Rail::kA}});
  uint64_t seq = 2;
  for (; seq <= 5; ++seq) at(1000, {{seq, Rail::kA}, {seq - 1, Rail::kB}});
  // Member A dies: only rail B from now on, the survivor catching up.
  for (uint64_t b = seq - 1; b < 30; ++b) at(1000, {{b, Rail::kB}});
  EXPECT_EQ(c().rail_a_silences.get(), 1u);
  EXPECT_EQ(c().rail_b_silences.get(), 0u);
  EXPECT_EQ(c().rail_a_returns.get(), 0u);
  EXPECT_EQ(c().publisher_timeouts.get(), 0u) << "rail B went on: the publisher was never silent";
  // Rail A is heard again (the member restarted, or its path came back).
  at(1000, {{30, Rail::kA}, {30, Rail::kB}});
  EXPECT_EQ(c().rail_a_returns.get(), 1u);
  EXPECT_EQ(c().rail_a_silences.get(), 1u);
  EXPECT_EQ(c().rail_b_silences.get(), 0u);
}

TEST_F(SubscriberRailsTest, BothRailsSilentIsThePublishersSilenceNotARails) {
  start_pair();
  for (uint64_t s = 1; s <= 3; ++s) at(1000, {{s, Rail::kA}, {s, Rail::kB}});
  for (int i = 0; i < 30; ++i) at(1000);
  EXPECT_EQ(c().publisher_timeouts.get(), 1u);
  EXPECT_EQ(c().rail_a_silences.get(), 0u);
  EXPECT_EQ(c().rail_b_silences.get(), 0u);
}

TEST_F(SubscriberRailsTest, ARailNeverHeardIsNeverSilent) {
  start_pair();
  for (uint64_t s = 1; s <= 30; ++s) at(1000, {{s, Rail::kA}});
  EXPECT_EQ(c().rail_a_silences.get(), 0u);
  EXPECT_EQ(c().rail_b_silences.get(), 0u);
}

TEST_F(SubscriberRailsTest, LongestDataGapIsTheLongestIntervalBetweenNewSequences) {
  start_pair();
  at(0, {{1, Rail::kA}});  // the session's first delivery starts the clock
  EXPECT_EQ(c().longest_data_gap_ns.get(), 0u);
  at(2000, {{2, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 2000u);
  at(3000);
  at(4000, {{2, Rail::kB}});  // a duplicate is no new data
  EXPECT_EQ(c().longest_data_gap_ns.get(), 2000u);
  at(1000, {{3, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 8000u);
  at(500, {{4, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 8000u) << "a high-water mark";
}

TEST_F(SubscriberRailsTest, APauseTheHeartbeatsShowIsNoDataGap) {
  start_pair();
  at(0, {{1, Rail::kA}});
  at(1000, {{2, Rail::kA}});
  // The publisher sent nothing for a heartbeat interval: its heartbeats
  // repeat a tail that is what we have.
  for (int i = 0; i < 2; ++i) {
    now_ += 1000;
    rx(idle_heartbeat(2), Rail::kA);
  }
  for (int i = 0; i < 50; ++i) at(1000);
  at(1000, {{3, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 1000u);
  // A heartbeat of a member behind (its tail below what was delivered) is
  // no pause: the feed goes on elsewhere, and this interval counts.
  now_ += 1000;
  rx(idle_heartbeat(1), Rail::kB);
  for (int i = 0; i < 20; ++i) at(1000);
  at(1000, {{4, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 22'000u);
}

TEST_F(SubscriberRailsTest, OneHeartbeatCaughtUpIsABusyFeedNotAPause) {
  start_pair();
  at(0, {{1, Rail::kA}});
  // Heartbeats come busy or idle: one whose tail is what was delivered says
  // only that the subscriber is caught up, and each rail's counts alone.
  now_ += 1000;
  rx(idle_heartbeat(1), Rail::kA);
  now_ += 1000;
  rx(idle_heartbeat(1), Rail::kB);
  for (int i = 0; i < 3; ++i) at(1000);
  at(1000, {{2, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 6000u);
}

TEST_F(SubscriberRailsTest, ASilenceCostsTheTimeUntilTheSurvivorBringsANewSequence) {
  start_pair();
  at(0, {{1, Rail::kA}});
  for (uint64_t s = 2; s <= 5; ++s) at(1000, {{s, Rail::kA}, {s - 1, Rail::kB}});
  // A dies after 5; B, one behind, sends 5 (a duplicate), then 6 three
  // thousand ns after A's last new sequence.
  at(1000, {{5, Rail::kB}});
  at(2000, {{6, Rail::kB}});
  for (uint64_t s = 7; s < 25; ++s) at(1000, {{s, Rail::kB}});
  ASSERT_EQ(c().rail_a_silences.get(), 1u);
  EXPECT_EQ(c().silence_gap_ns.get(), 3000u);
  EXPECT_EQ(c().longest_data_gap_ns.get(), 3000u);
}

TEST_F(SubscriberRailsTest, ARailLostInAPauseCostsNothing) {
  start_pair();
  at(0, {{1, Rail::kA}, {1, Rail::kB}});
  at(1000, {{2, Rail::kA}, {2, Rail::kB}});
  now_ += 1000;
  rx(idle_heartbeat(2), Rail::kB);  // both idle; then A dies, B heartbeats on
  for (int i = 0; i < 15; ++i) {
    now_ += 1000;
    rx(idle_heartbeat(2), Rail::kB);
    poll();
  }
  ASSERT_EQ(c().rail_a_silences.get(), 1u);
  EXPECT_EQ(c().silence_gap_ns.get(), 0u);
  at(1000, {{3, Rail::kB}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 1000u);
}

TEST_F(SubscriberRailsTest, TheWaitForTheFirstDeliveryIsNoDataGap) {
  start_pair();
  for (int i = 0; i < 50; ++i) at(1000);
  at(1000, {{1, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 0u);
  at(1000, {{2, Rail::kA}});
  EXPECT_EQ(c().longest_data_gap_ns.get(), 1000u);
}

}  // namespace
}  // namespace mdcast::test
