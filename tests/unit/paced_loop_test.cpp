// run_paced with a sleeping publisher in bursts: one wake per burst. The
// burst's last datagram is sent before the loop sleeps, not on a second wake
// a flush interval later (what made clock_nanosleep 15 % of the bench
// publisher's profile).
#include <gtest/gtest.h>

#include <cstddef>

#include "mdcast/core/clock.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher.hpp"

namespace mdcast::test {
namespace {

struct NullSink {
  uint64_t datagrams = 0;
  feed::SendResult send(std::span<const std::byte>, uint64_t) noexcept {
    ++datagrams;
    return feed::SendResult::kSent;
  }
  feed::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return feed::SendResult::kSent; }
};

// The agent surface run_paced uses, over a real publisher engine.
struct Agent {
  feed::Publisher<NullSink>& pub;
  uint64_t flushes = 0;
  feed::PublishResult publish(wire::Message& m, uint64_t now) noexcept { return pub.publish(m, now); }
  void flush(uint64_t now) noexcept {
    ++flushes;
    pub.flush(now);
  }
  size_t do_work(uint64_t now) noexcept {
    pub.poll(now);  // the flush timer, as the real agent's duty cycle runs it
    return 0;
  }
  [[nodiscard]] const feed::PublisherCore& core() const noexcept { return pub.core(); }
};

struct Opaque {
  std::byte payload[40]{};
  bool next(wire::Message& m) noexcept {
    m = wire::Message::make_opaque(0, payload);
    return true;
  }
};

// Each round starts before its burst; a round that follows one which
// published nothing followed a sleep, and must find nothing left open. The
// loop ends after `wakes` of them: on a busy host it may run behind for a
// while (every round finds messages due, and none sleeps).
struct Rounds {
  const Agent& agent;
  uint64_t wakes = 8;
  uint64_t rounds = 0, after_sleep = 0, woke_to_open_datagram = 0, last_published = UINT64_MAX;
  bool on_round(uint64_t, uint64_t published) noexcept {
    ++rounds;
    if (published == last_published) {
      ++after_sleep;
      woke_to_open_datagram += agent.core().has_open();
    }
    last_published = published;
    return after_sleep < wakes;
  }
};

TEST(PacedLoop, SleepingPublisherWakesOncePerBurstWithNothingLeftOpen) {
  feed::PublisherConfig pc;
  pc.session = 1;
  pc.max_datagram = 4032;
  pc.flush_interval_ns = 20 * kNsPerUs;  // well inside a burst's 1 ms
  pc.heartbeat_interval_ns = kNsPerSec;
  NullSink sink;
  feed::Publisher<NullSink> pub(pc, sink);
  Agent agent{pub};
  Opaque src;
  Rounds rounds{agent};
  feed::Pace pace;
  pace.rate = 100'000;  // 100 messages per 1 ms burst: a few datagrams, the last one open
  pace.start_ns = monotonic_ns();
  pace.end_ns = pace.start_ns + 60 * kNsPerSec;  // a bound only: the rounds end it
  pace.idle = IdleMode::kSleep;
  pace.burst_ns = kNsPerMs;
  const feed::PaceResult r = feed::run_paced(agent, src, pace, rounds);
  ASSERT_EQ(r.refused, feed::PublishResult::kOk);
  ASSERT_GT(r.published, 0u);
  EXPECT_EQ(rounds.after_sleep, rounds.wakes) << "the loop slept too seldom in 60 s: nothing was tested";
  EXPECT_EQ(rounds.woke_to_open_datagram, 0u)
      << "of " << rounds.after_sleep << " wakes, these found the last burst's datagram still open: a wake for "
      << "the flush timer, not for a burst";
  EXPECT_GE(agent.flushes, 1u);
  // Everything published was sent: the open datagram never waited for a timer.
  pub.flush(monotonic_ns());
  EXPECT_EQ(pub.core().next_unsent(), pub.core().last_committed() + 1);
}

}  // namespace
}  // namespace mdcast::test
