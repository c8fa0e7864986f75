// A conflating relay over the in-memory medium (runtime/conflate.hpp): the
// origin publishes bursts of the synthetic flow; the relay's upstream
// subscriber, behind loss and reordering, recovers them; at each
// conflation point the relay publishes the changed instruments' books as a
// feed of its own, which a lossy subscriber reads. What must hold: at every
// point, once the subscriber has the point, its books are the origin's
// (order for order: the checksums, order counts and statuses); the relay's
// own check finds no mismatch; far fewer messages go downstream than came
// upstream; and the slow subscriber never needs a snapshot.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "mdcast/book/synthetic_source.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/runtime/conflate.hpp"

namespace mdcast::test {
namespace {

using media::fault::FaultProfile;
using media::fault::FaultyMedium;
using PubAgent = feed::PublisherAgent<media::mem::PublisherMedium>;
using SubMedium = FaultyMedium<media::mem::SubscriberMedium>;
using Conflator = runtime::Conflator<PubAgent>;

constexpr uint32_t kInstruments = 64;
constexpr uint64_t kDeadlineNs = 60 * kNsPerSec;  // real time: a sanitizer build is slow
constexpr feed::PublisherAgentOptions kPubOpts{0};
constexpr feed::SubscriberAgentOptions kSubOpts{0, IdleMode::kSpin, 64};

feed::PublisherConfig pub_config(uint64_t session) {
  feed::PublisherConfig c;
  c.session = session;
  c.max_datagram = 1472;
  c.flush_interval_ns = 5 * kNsPerUs;
  c.heartbeat_interval_ns = kNsPerMs;
  c.retransmit_bytes = 8u << 20;
  c.books = {kInstruments, 1u << 14, 256};
  return c;
}

feed::SubscriberConfig sub_config() {
  feed::SubscriberConfig c;
  c.books = {kInstruments, 1u << 14, 256};
  c.window_bytes = 4u << 20;
  c.reorder_wait_ns = 200 * kNsPerUs;
  c.request_timeout_ns = 20 * kNsPerMs;
  return c;
}

FaultProfile lossy(uint64_t seed) {
  FaultProfile f;
  f.seed = seed;
  f.loss = 0.05;
  f.reorder = 0.1;
  f.reorder_depth = 6;
  return f;
}

struct Quiet {
  void on_message(const wire::Message&, const feed::Delivery&) noexcept {}
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

// The relay, members in teardown order (the agent first, the downstream
// medium last). Points only when the test says (publish_point).
struct ConflatingRelay {
  explicit ConflatingRelay(media::mem::PublisherMedium& origin)
      : down(down_medium, pub_config(0xc0f1a7e), {}, {}, kPubOpts),
        conflator(down, counters, UINT64_MAX),
        up_medium(origin),
        faulty(up_medium, lossy(7)),
        agent(faulty, sub_config(), conflator, nullptr, kSubOpts) {
    conflator.watch(agent.subscriber());
    agent.start();
  }
  void do_work(uint64_t now) {
    agent.do_work(now);
    down.do_work(now);
  }

  media::mem::PublisherMedium down_medium;
  PubAgent down;
  runtime::ConflateCounters counters;
  Conflator conflator;
  media::mem::SubscriberMedium up_medium;
  SubMedium faulty;
  feed::SubscriberAgent<SubMedium, Conflator> agent;
};

TEST(ConflatingRelay, EachPointGivesItsSubscribersTheOriginsBooksAndNoSnapshot) {
  media::mem::PublisherMedium origin_medium;
  PubAgent origin(origin_medium, pub_config(0x0419), {}, {}, kPubOpts);
  ConflatingRelay relay(origin_medium);
  media::mem::SubscriberMedium sub_medium(relay.down_medium);
  SubMedium sub_faulty(sub_medium, lossy(11));
  Quiet quiet;
  feed::SubscriberAgent<SubMedium, Quiet> sub(sub_faulty, sub_config(), quiet, nullptr, kSubOpts);
  sub.start();

  book::GeneratorConfig g;
  g.seed = 5;
  g.instruments = kInstruments;
  book::SyntheticSource src(g, {});
  const uint64_t deadline = monotonic_ns() + kDeadlineNs;
  auto drive_until = [&](auto&& done, const char* what) {
    for (;;) {
      const uint64_t now = monotonic_ns();
      origin.do_work(now);
      relay.do_work(now);
      sub.do_work(now);
      if (done()) return true;
      if (now > deadline) {
        ADD_FAILURE() << "did not converge: " << what;
        return false;
      }
    }
  };

  constexpr int kPoints = 20;
  constexpr int kBurst = 5000;  // upstream messages between points
  uint64_t published = 0;
  for (int p = 0; p < kPoints; ++p) {
    SCOPED_TRACE(fmt::format("point {}", p + 1));
    for (int i = 0; i < kBurst; ++i) {
      wire::Message m;
      ASSERT_TRUE(src.next(m));
      for (uint64_t now = monotonic_ns();; now = monotonic_ns()) {
        const auto r = origin.publish(m, now);
        if (r == feed::PublishResult::kOk) break;
        ASSERT_EQ(r, feed::PublishResult::kBackPressured);
        origin.do_work(now);
        relay.do_work(now);
      }
      ++published;
    }
    origin.flush(monotonic_ns());
    const feed::SubscriberCore& up = relay.agent.subscriber();
    ASSERT_TRUE(drive_until(
        [&] { return up.caught_up() && up.next_sequence() > origin.core().last_committed(); }, "relay upstream"));
    relay.conflator.publish_point(monotonic_ns());
    const feed::SubscriberCore& down = sub.subscriber();
    ASSERT_TRUE(drive_until(
        [&] { return down.caught_up() && down.next_sequence() > relay.down.core().last_committed(); },
        "subscriber of the conflated feed"));
    const book::BookSet& want = origin.core().books();
    const book::BookSet& got = *down.books();
    for (uint32_t i = 0; i < kInstruments; ++i) {
      ASSERT_EQ(got.book(i).order_count(), want.book(i).order_count()) << "instrument " << i;
      ASSERT_EQ(got.book(i).checksum(), want.book(i).checksum()) << "instrument " << i;
      ASSERT_EQ(got.book(i).status(), want.book(i).status()) << "instrument " << i;
    }
  }
  const auto& c = relay.counters;
  EXPECT_EQ(c.points.get(), uint64_t{kPoints});
  EXPECT_EQ(c.mismatches.get(), 0u);
  EXPECT_EQ(c.refused.get(), 0u);
  EXPECT_EQ(c.upstream_messages.get(), published);
  EXPECT_LT(c.messages.get(), published / 2) << "conflation sends the net change, not every message";
  EXPECT_GT(relay.agent.subscriber().counters().datagrams_recovered.get(), 0u) << "upstream loss recovered";
  EXPECT_EQ(sub.subscriber().counters().snapshots_applied.get(), 0u);
  EXPECT_EQ(sub.subscriber().counters().checksum_mismatch.get(), 0u);
  EXPECT_EQ(sub.subscriber().session(), 0xc0f1a7eu) << "a session of its own";
}

}  // namespace
}  // namespace mdcast::test
