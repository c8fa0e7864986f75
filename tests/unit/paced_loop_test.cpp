// run_paced with a sleeping publisher in bursts: one wake per burst. The
// burst's last datagram is sent before the loop sleeps, not on a second wake
// a flush interval later (what made clock_nanosleep 15 % of the bench
// publisher's profile).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <vector>

#include "mdcast/book/synthetic_source.hpp"
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

// What a pair member's rail carries: each sequenced datagram's bytes.
struct Wire {
  std::map<uint64_t, std::vector<std::byte>> sent;
  // Each member stamps its own send time; the rest is the input's.
  feed::SendResult send(std::span<const std::byte> d, uint64_t seq) noexcept {
    sent[seq].assign(d.begin(), d.end());
    std::fill_n(sent[seq].begin() + wire::dgram::kSendTime, 8, std::byte{0});
    return feed::SendResult::kSent;
  }
  feed::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return feed::SendResult::kSent; }
};
struct Member {
  explicit Member(const feed::PublisherConfig& pc) : pub(pc, wire) {}
  Wire wire;
  feed::Publisher<Wire> pub;
  feed::PublishResult publish(wire::Message& m, uint64_t now) noexcept { return pub.publish(m, now); }
  void flush(uint64_t now) noexcept { pub.flush(now); }
  size_t do_work(uint64_t now) noexcept {
    pub.poll(now);
    return 0;
  }
  [[nodiscard]] const feed::PublisherCore& core() const noexcept { return pub.core(); }
};
struct Always {
  bool on_round(uint64_t, uint64_t) const noexcept { return true; }
};
// The input ends after `left` messages (run_paced's loop with it).
struct Limited {
  book::SyntheticSource& s;
  uint64_t left;
  bool next(wire::Message& m) noexcept { return left-- > 0 && s.next(m); }
  [[nodiscard]] bool packet_end() const noexcept { return s.packet_end(); }
};

feed::PublisherConfig pair_config() {
  feed::PublisherConfig pc;
  pc.session = 7;
  pc.max_datagram = 1472;
  pc.boundaries = feed::Boundaries::kInput;
  pc.flush_interval_ns = 0;
  pc.heartbeat_interval_ns = kNsPerSec;
  return pc;
}
book::GeneratorConfig flow() {
  book::GeneratorConfig g;
  g.seed = 5;
  g.instruments = 20;
  return g;
}
constexpr book::SyntheticConfig kPackets{8, 50, 3000};  // large messages fragment over 1472-byte datagrams

// Two members of a pair at different paces, one in bursts of 7 messages and
// one of 256: datagrams end where the input's packets end, so sequence n is
// the same bytes from either (but for each member's send time); and a member that replays through sequence S
// sends only what follows S.
TEST(PacedLoop, PacketsCutTheSameDatagramsAtAnyPaceAndAReplayedStretchIsNotSent) {
  constexpr uint64_t kMessages = 20'000;
  Member a(pair_config()), b(pair_config());
  book::SyntheticSource sa(flow(), kPackets), sb(flow(), kPackets);
  feed::Pace slow, fast;
  slow.max_burst = 7;
  fast.max_burst = 256;
  Always go;
  Limited la{sa, kMessages}, lb{sb, kMessages};
  (void)feed::run_paced(a, la, slow, go);
  (void)feed::run_paced(b, lb, fast, go);
  a.flush(monotonic_ns());
  b.flush(monotonic_ns());
  ASSERT_GT(a.wire.sent.size(), 100u);
  ASSERT_EQ(a.wire.sent.size(), b.wire.sent.size());
  EXPECT_GT(a.core().counters().fragments_sent.get(), 0u) << "no large message fragmented: nothing cut mid-message";
  for (const auto& [seq, bytes] : a.wire.sent) ASSERT_EQ(bytes, b.wire.sent[seq]) << "sequence " << seq << " differs";

  // A third member rejoins: its input again from the start, quietly through
  // half of what the others sent, then on the wire.
  Member c(pair_config());
  book::SyntheticSource sc(flow(), kPackets);
  const uint64_t through = a.wire.sent.size() / 2;
  c.pub.replay_through(UINT64_MAX);
  wire::Message m;
  uint64_t messages = 0;
  while (c.core().last_committed() < through) {
    ASSERT_TRUE(sc.next(m));
    ++messages;
    ASSERT_EQ(c.publish(m, monotonic_ns()), feed::PublishResult::kOk);
    if (sc.packet_end()) c.flush(monotonic_ns());
  }
  const uint64_t replayed = c.core().last_committed();
  c.pub.replay_through(replayed);
  Limited lc{sc, kMessages - messages};
  (void)feed::run_paced(c, lc, fast, go);
  c.flush(monotonic_ns());
  EXPECT_EQ(c.core().counters().datagrams_replayed.get(), replayed);
  ASSERT_FALSE(c.wire.sent.empty());
  EXPECT_EQ(c.wire.sent.begin()->first, replayed + 1) << "a replayed datagram went on the wire";
  for (const auto& [seq, bytes] : c.wire.sent) ASSERT_EQ(bytes, a.wire.sent[seq]) << "sequence " << seq << " differs";
}

}  // namespace
}  // namespace mdcast::test

namespace mdcast::test {
namespace {

// A counted input (a pair's members: SyntheticPlan::counted) ends at its
// limit, `already` included, however late its timeline began.
TEST(PacedLoop, ALimitEndsTheLoopAtThatManyMessages) {
  feed::PublisherConfig pc;
  pc.session = 1;
  pc.max_datagram = 4032;
  NullSink sink;
  feed::Publisher<NullSink> pub(pc, sink);
  Agent agent{pub};
  Opaque src;
  struct Forever {
    bool on_round(uint64_t, uint64_t) noexcept { return true; }
  } rounds;
  feed::Pace pace;
  pace.rate = 10'000'000;
  pace.start_ns = monotonic_ns() - kNsPerSec;  // ten million due at once: only the limit ends it
  pace.already = 300;
  pace.limit = 5'000;
  const feed::PaceResult r = feed::run_paced(agent, src, pace, rounds);
  EXPECT_EQ(r.refused, feed::PublishResult::kOk);
  EXPECT_EQ(r.published, 5'000u);
  EXPECT_EQ(pub.core().counters().messages_published.get(), 4'700u);
}

}  // namespace
}  // namespace mdcast::test
