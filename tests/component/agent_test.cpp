// The agents over the in-memory medium: a PublisherAgent<mem::PublisherMedium>
// and SubscriberAgents over FaultyMedium<mem::SubscriberMedium>, driven as an
// application drives them (publish / do_work, run_paced), on one thread in
// real time. Proves the mem medium is an agent-compatible medium and that the
// interceptor in front of it is recovered from exactly.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "delivery_check.hpp"
#include "feed_drive.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mem_sub.hpp"
#include "recorder.hpp"

namespace mdcast::test {
namespace {

using media::fault::FaultProfile;
using media::fault::FaultyMedium;
using PubAgent = feed::PublisherAgent<media::mem::PublisherMedium>;
using SubMedium = FaultyMedium<media::mem::SubscriberMedium>;
using SubAgent = MemSubAgent;

constexpr uint32_t kInstruments = 32;
constexpr uint64_t kMessages = 5000;
// Real time, so a sanitizer build may be slow; a correct run takes well under a second.
constexpr uint64_t kDeadlineNs = 60 * kNsPerSec;

feed::PublisherConfig pub_config() {
  feed::PublisherConfig c;
  c.max_datagram = 1472;
  c.flush_interval_ns = 5 * kNsPerUs;  // a few messages a datagram at this rate: thousands of datagrams to lose
  c.heartbeat_interval_ns = kNsPerMs;  // the end of session is repeated this often
  c.retransmit_bytes = 8u << 20;       // holds the whole run: recovery is by retransmission
  c.crc = true;
  c.books = {kInstruments, 1u << 14, 256};
  return c;
}

feed::SubscriberConfig sub_config() {
  feed::SubscriberConfig c;
  c.books = {kInstruments, 1u << 14, 256};
  c.window_bytes = 4u << 20;
  c.reorder_wait_ns = 200 * kNsPerUs;  // reordering within that is not worth a request
  c.request_timeout_ns = 20 * kNsPerMs;
  return c;
}

// Control every round: in one thread, each agent's round is the others' wait.
constexpr feed::PublisherAgentOptions kPubOpts{0};
constexpr feed::SubscriberAgentOptions kSubOpts{0, IdleMode::kSpin, 64};

// One subscriber: medium, interceptor, recorder and agent, in teardown order.
struct Sub : MemSub {
  Sub(media::mem::PublisherMedium& pub, const FaultProfile& f, std::string n)
      : MemSub(pub, f, std::move(n), sub_config(), kInstruments, kSubOpts) {}
};

std::string report(const std::vector<Sub*>& subs) {
  std::string r;
  for (const Sub* s : subs) {
    r += fmt::format("  {}:{}{}\n", s->name, nonzero(s->agent.subscriber().counters()),
                     nonzero(s->faulty.counters(), "fault."));
  }
  return r;
}


bool finish(PubAgent& pub, const std::vector<Sub*>& subs) {
  return finish_all(pub, subs, [](Sub& s) -> SubAgent& { return s.agent; }, kDeadlineNs);
}

class AgentsOverMem : public ::testing::TestWithParam<uint64_t> {};

TEST_P(AgentsOverMem, LossyAndCleanSubscriberBothGetEverythingExactly) {
  const uint64_t seed = GetParam();
  media::mem::PublisherMedium pub_medium;
  PubAgent pub(pub_medium, pub_config(), {}, {}, kPubOpts);

  FaultProfile lossy;
  lossy.seed = seed;
  lossy.loss = 0.05;
  lossy.reorder = 0.1;
  lossy.reorder_depth = 6;
  Sub clean(pub_medium, FaultProfile{}, "clean");
  Sub faulty(pub_medium, lossy, "lossy");
  const std::vector<Sub*> subs{&clean, &faulty};

  PublishedLog log(kInstruments);
  Logged<PubAgent> logged{pub, log};
  book::GeneratorConfig g;
  g.seed = seed;
  g.instruments = kInstruments;
  Messages messages{book::Generator(g), kMessages};
  auto drive = drive_all(subs, [](Sub& s) -> SubAgent& { return s.agent; });
  feed::Pace pace;
  pace.rate = 200'000;  // 25 ms of feed: flush timers and heartbeats play their part
  pace.start_ns = monotonic_ns();
  const auto paced = feed::run_paced(logged, messages, pace, drive);
  ASSERT_EQ(paced.refused, feed::PublishResult::kOk);
  ASSERT_EQ(paced.published, kMessages);
  EXPECT_EQ(logged.out_of_order, 0u);

  ASSERT_TRUE(finish(pub, subs)) << "did not converge\n" << report(subs);
  const std::string r = report(subs);
  for (Sub* s : subs) {
    SCOPED_TRACE(s->name);
    expect_exact_delivery(log, pub.core(), s->agent.subscriber(), s->rec, r);
    EXPECT_EQ(s->rec.delivered, kMessages);
  }
  const auto& cc = clean.agent.subscriber().counters();
  EXPECT_EQ(cc.gaps.get(), 0u) << r;
  EXPECT_EQ(cc.retransmit_requests.get(), 0u) << r;
  const auto& lc = faulty.agent.subscriber().counters();
  EXPECT_GT(lc.gaps.get(), 0u) << r;
  EXPECT_GT(lc.datagrams_recovered.get(), 0u) << r;
  EXPECT_GT(faulty.faulty.counters().lost.get(), 0u);
  EXPECT_GT(faulty.faulty.counters().reordered.get(), 0u);
  EXPECT_EQ(faulty.faulty.counters().hold_pool_full.get(), 0u);
  EXPECT_EQ(faulty.faulty.lost_datagrams(), faulty.faulty.counters().lost.get()) << "the queues never overflowed";
  EXPECT_EQ(pub.clients(), 2u);
  EXPECT_EQ(pub.subscribed_clients(), 2u);
  if (getenv("SIM_REPORT")) std::cerr << r;
}

INSTANTIATE_TEST_SUITE_P(Seeds, AgentsOverMem, ::testing::Values(1, 2, 3));

// A subscriber that starts halfway, driven by a plain publish / do_work loop:
// its medium starts at the live edge and the agent recovers the history.
TEST(AgentsOverMemLoop, LateJoinerRecoversTheHistory) {
  media::mem::PublisherMedium pub_medium;
  PubAgent pub(pub_medium, pub_config(), {}, {}, kPubOpts);
  Sub early(pub_medium, FaultProfile{}, "early");
  std::unique_ptr<Sub> late;
  std::vector<Sub*> subs{&early};

  PublishedLog log(kInstruments);
  book::GeneratorConfig g;
  g.instruments = kInstruments;
  book::Generator gen(g);
  for (uint64_t i = 0; i < kMessages; ++i) {
    wire::Message m;
    gen.next(m);
    const uint64_t now = monotonic_ns();
    ASSERT_EQ(pub.publish(m, now), feed::PublishResult::kOk) << "the bus never pushes back";
    ASSERT_TRUE(log.add(m));
    if (i % 16 == 0) {
      pub.do_work(now);
      for (Sub* s : subs) s->agent.do_work(now);
    }
    if (i == kMessages / 2) {
      pub.flush(now);
      late = std::make_unique<Sub>(pub_medium, FaultProfile{}, "late");
      subs.push_back(late.get());
    }
  }
  ASSERT_TRUE(finish(pub, subs)) << "did not converge\n" << report(subs);
  const std::string r = report(subs);
  for (Sub* s : subs) {
    SCOPED_TRACE(s->name);
    expect_exact_delivery(log, pub.core(), s->agent.subscriber(), s->rec, r);
  }
  const auto& c = late->agent.subscriber().counters();
  EXPECT_GT(c.datagrams_recovered.get(), 0u) << r;
  EXPECT_EQ(c.snapshots_applied.get(), 0u) << "the ring still held the history\n" << r;
  EXPECT_EQ(late->rec.delivered, kMessages) << r;
  if (getenv("SIM_REPORT")) std::cerr << r;
}


// A mem medium that says its own link is down when told, as the UDP
// medium's link watch does; FaultyMedium passes that on.
struct DownableMedium : media::mem::SubscriberMedium {
  using media::mem::SubscriberMedium::SubscriberMedium;
  [[nodiscard]] bool link_down() const noexcept { return down; }
  bool down = false;
};

// While the subscriber's own link is down, silence is not the publisher's:
// neither publisher_timeout nor the run's give-up clock (last_data_ns) runs,
// for at most link_down_hold_ns; past that, and once the link is back, it does.
TEST(AgentsOverMemLoop, OwnLinkDownHoldsThePublishersSilenceForABoundedTime) {
  media::mem::PublisherMedium pub_medium;
  PubAgent pub(pub_medium, pub_config(), {}, {}, kPubOpts);
  DownableMedium medium(pub_medium);
  FaultyMedium<DownableMedium> faulty(medium, FaultProfile{});
  Recorder rec(kInstruments);
  feed::SubscriberConfig c = sub_config();
  c.publisher_timeout_ns = kNsPerSec;
  feed::SubscriberAgentOptions o = kSubOpts;
  o.link_down_hold_ns = 10 * kNsPerSec;
  feed::SubscriberAgent<FaultyMedium<DownableMedium>, Recorder> sub(faulty, c, rec, nullptr, o);
  sub.start();
  book::GeneratorConfig g;
  g.instruments = kInstruments;
  book::Generator gen(g);
  for (int i = 0; i < 100; ++i) {
    wire::Message m;
    gen.next(m);
    const uint64_t now = monotonic_ns();
    ASSERT_EQ(pub.publish(m, now), feed::PublishResult::kOk);
    pub.flush(now);
    pub.do_work(now);
    sub.do_work(now);
  }
  const auto& counters = sub.subscriber().counters();
  ASSERT_GT(counters.datagrams_received.get(), 0u);
  const uint64_t t0 = monotonic_ns() + 100 * kNsPerMs;
  sub.poll_control(t0);
  EXPECT_EQ(counters.publisher_timeouts.get(), 0u);

  medium.down = true;
  uint64_t t = t0;
  for (; t <= t0 + 5 * kNsPerSec; t += 100 * kNsPerMs) sub.poll_control(t);
  EXPECT_EQ(counters.publisher_timeouts.get(), 0u) << "5 s without data, but our own link was down";
  EXPECT_GE(sub.last_data_ns(), t0 + 5 * kNsPerSec) << "the give-up clock ran while our own link was down";

  // Back: the silence counts from the moment the link was.
  medium.down = false;
  for (; t <= t0 + 5500 * kNsPerMs; t += 100 * kNsPerMs) sub.poll_control(t);
  EXPECT_EQ(counters.publisher_timeouts.get(), 0u);
  for (; t <= t0 + 6500 * kNsPerMs; t += 100 * kNsPerMs) sub.poll_control(t);
  EXPECT_EQ(counters.publisher_timeouts.get(), 1u) << "1 s of silence with the link up";

  // Down for longer than link_down_hold_ns: held 10 s, then no more.
  medium.down = true;
  const uint64_t down = t;
  for (; t <= down + 15 * kNsPerSec; t += 100 * kNsPerMs) sub.poll_control(t);
  EXPECT_GE(sub.last_data_ns(), down + 9 * kNsPerSec);
  EXPECT_LE(sub.last_data_ns(), down + 10 * kNsPerSec) << "held past link_down_hold_ns";
}

}  // namespace
}  // namespace mdcast::test
