// A relay over the in-memory medium (runtime/relay.hpp): the origin's
// PublisherAgent on one bus; the relay's upstream SubscriberAgent, behind a
// fault injector (loss, reordering), forwarding through runtime::Forwarder
// into a PublisherAgent of the origin's session on a second bus; downstream
// subscribers on that bus, one of them lossy. Driven on one thread in real
// time, as an application drives agents. What must hold: every datagram the
// relay committed is the origin's datagram of that sequence, byte for byte
// (both seal with a CRC), fragmented messages included; downstream
// subscribers deliver exactly what the origin published, with its books,
// recovering from the relay; a relay that starts behind the origin's ring
// begins from its upstream's snapshot; and one whose upstream has to take a
// snapshot after it forwarded goes on past it, its subscribers taking their
// snapshot from the relay.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "delivery_check.hpp"
#include "feed_drive.hpp"
#include "mdcast/book/synthetic_source.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/runtime/relay.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mem_sub.hpp"
#include "recorder.hpp"

namespace mdcast::test {
namespace {

using media::fault::FaultProfile;
using media::fault::FaultyMedium;
using PubAgent = feed::PublisherAgent<media::mem::PublisherMedium>;
using SubMedium = FaultyMedium<media::mem::SubscriberMedium>;
using SubAgent = MemSubAgent;
using Forwarder = runtime::Forwarder<PubAgent>;

constexpr uint32_t kInstruments = 32;
constexpr uint64_t kMessages = 6000;
constexpr uint64_t kDeadlineNs = 60 * kNsPerSec;  // real time: a sanitizer build is slow
constexpr feed::PublisherAgentOptions kPubOpts{0};
constexpr feed::SubscriberAgentOptions kSubOpts{0, IdleMode::kSpin, 64};

feed::PublisherConfig pub_config(size_t retransmit_bytes = 8u << 20) {
  feed::PublisherConfig c;
  c.max_datagram = 1472;
  c.flush_interval_ns = 5 * kNsPerUs;
  c.heartbeat_interval_ns = kNsPerMs;
  c.retransmit_bytes = retransmit_bytes;
  c.crc = true;
  c.max_message = 8192;  // the source's large messages are fragmented
  c.books = {kInstruments, 1u << 14, 256};
  return c;
}

feed::SubscriberConfig sub_config(size_t window_bytes = 4u << 20) {
  feed::SubscriberConfig c;
  c.books = {kInstruments, 1u << 14, 256};
  c.window_bytes = window_bytes;
  c.reorder_wait_ns = 200 * kNsPerUs;
  c.request_timeout_ns = 20 * kNsPerMs;
  c.max_message = 8192;
  return c;
}

// `left` messages of the synthetic flow, every 50th a 3000-byte opaque one.
struct Source {
  book::SyntheticSource src;
  uint64_t left;
  bool next(wire::Message& m) noexcept { return left != 0 && (--left, src.next(m)); }
};
Source source(uint64_t seed, uint64_t n) {
  book::GeneratorConfig g;
  g.seed = seed;
  g.instruments = kInstruments;
  return {book::SyntheticSource(g, {0, 50, 3000}), n};
}

// A relay: its upstream subscriber (behind `faults`) forwarding into its own
// publisher of `session`. Members in teardown order: the agent first, the
// downstream medium last.
struct Relay {
  Relay(media::mem::PublisherMedium& origin, uint64_t session, const FaultProfile& faults,
        size_t window_bytes = 4u << 20)
      : down(down_medium, runtime::relay_engine(pub_config(), session), {}, {}, kPubOpts),
        fwd(down, counters),
        up_medium(origin),
        faulty(up_medium, faults),
        agent(faulty, sub_config(window_bytes), fwd, nullptr, kSubOpts) {
    fwd.watch(agent.subscriber());
    agent.start();
  }
  // One round, as runtime::relay_lane runs it; the downstream session ends
  // once the upstream's did and everything was forwarded.
  size_t do_work(uint64_t now) {
    const size_t n = agent.do_work(now);
    fwd.end_round(now);
    down.do_work(now);
    if (agent.finished() && !ended) ended = down.end_session(now);
    return n;
  }
  [[nodiscard]] bool finished() const { return ended; }

  media::mem::PublisherMedium down_medium;
  PubAgent down;
  runtime::RelayCounters counters;
  Forwarder fwd;
  media::mem::SubscriberMedium up_medium;
  SubMedium faulty;
  feed::SubscriberAgent<SubMedium, Forwarder> agent;
  bool ended = false;
};

struct Sub : MemSub {
  Sub(media::mem::PublisherMedium& pub, const FaultProfile& f, std::string n)
      : MemSub(pub, f, std::move(n), sub_config(), kInstruments, kSubOpts) {}
};

FaultProfile lossy(uint64_t seed) {
  FaultProfile f;
  f.seed = seed;
  f.loss = 0.05;
  f.reorder = 0.1;
  f.reorder_depth = 6;
  return f;
}

// The relay's datagram n against the origin's: the same bytes, header,
// send time and CRC included; every one from `first` on where both rings
// still hold it (`whole`: the origin's must hold them all, and the relay
// every one; else the relay's may have holes where it skipped ahead).
void expect_same_datagrams(const feed::PublisherCore& origin, const feed::PublisherCore& relay, uint64_t first = 1,
                           bool whole = true) {
  ASSERT_EQ(relay.last_committed(), origin.last_committed());
  ASSERT_GE(origin.ring().oldest(), 1u);
  if (whole) {
    ASSERT_LE(origin.ring().oldest(), first) << "the origin's ring no longer holds the run";
  }
  first = std::max(first, origin.ring().oldest());
  uint64_t compared = 0;
  for (uint64_t s = first; s <= origin.last_committed(); ++s) {
    const auto a = origin.datagram(s), b = relay.datagram(s);
    ASSERT_FALSE(a.empty());
    if (b.empty() && !whole) continue;  // skipped ahead over it, or lapped
    ASSERT_FALSE(b.empty()) << "sequence " << s;
    const wire::DatagramHeader ha = wire::read_header(a.data()), hb = wire::read_header(b.data());
    ASSERT_EQ(ha.sequence, hb.sequence);
    ASSERT_EQ(ha.message_count, hb.message_count) << "sequence " << s;
    ASSERT_EQ(ha.send_time_ns, hb.send_time_ns) << "sequence " << s;
    ASSERT_EQ(a.size(), b.size()) << "sequence " << s;
    ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << "sequence " << s << ": other bytes";
    ++compared;
  }
  // A relay that skipped ahead may hold nothing the origin's ring still
  // does (a second skip near the end); its books are what is checked then.
  if (whole) {
    EXPECT_GT(compared, 0u) << "no datagram held by both to compare";
  }
}

class RelayOverMem : public ::testing::TestWithParam<uint64_t> {};

TEST_P(RelayOverMem, ForwardsTheOriginsDatagramsUnderTheirSequences) {
  const uint64_t seed = GetParam();
  media::mem::PublisherMedium origin_medium;
  PubAgent origin(origin_medium, pub_config(), {}, {}, kPubOpts);
  Relay relay(origin_medium, origin.core().session(), lossy(seed));
  Sub clean(relay.down_medium, FaultProfile{}, "clean");
  Sub faulty(relay.down_medium, lossy(seed + 1), "lossy");

  PublishedLog log(kInstruments);
  Logged<PubAgent> logged{origin, log};
  Source src = source(seed, kMessages);
  struct Drive {
    Relay& relay;
    std::vector<Sub*> subs;
    bool on_round(uint64_t now, uint64_t) noexcept {
      relay.do_work(now);
      for (Sub* s : subs) s->agent.do_work(now);
      return true;
    }
  } drive{relay, {&clean, &faulty}};
  feed::Pace pace;
  pace.rate = 200'000;
  pace.start_ns = monotonic_ns();
  const auto paced = feed::run_paced(logged, src, pace, drive);
  ASSERT_EQ(paced.refused, feed::PublishResult::kOk);
  ASSERT_EQ(paced.published, kMessages);

  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  while (!origin.end_session(now)) origin.do_work(now = monotonic_ns());
  auto report = [&] {
    return fmt::format("relay:{}{}{}\n  clean:{}\n  lossy:{}\n", nonzero(relay.counters, "relay."),
                       nonzero(relay.agent.subscriber().counters(), "sub."), nonzero(relay.faulty.counters(), "fault."),
                       nonzero(clean.agent.subscriber().counters()), nonzero(faulty.agent.subscriber().counters()));
  };
  for (bool done = false; !done;) {
    now = monotonic_ns();
    ASSERT_LT(now, deadline) << "did not converge\n" << report();
    origin.do_work(now);
    relay.do_work(now);
    done = relay.finished();
    for (Sub* s : {&clean, &faulty}) {
      s->agent.do_work(now);
      done &= s->agent.finished();
    }
  }
  const std::string r = report();
  ASSERT_FALSE(relay.fwd.failed()) << relay.fwd.failure_text();
  EXPECT_EQ(relay.counters.sequence_mismatches.get(), 0u) << r;
  EXPECT_EQ(relay.counters.instrument_mismatches.get(), 0u) << r;
  EXPECT_EQ(relay.counters.messages.get(), kMessages) << r;
  EXPECT_GT(relay.agent.subscriber().counters().datagrams_recovered.get(), 0u) << r;
  EXPECT_GT(relay.faulty.counters().lost.get(), 0u) << r;
  EXPECT_GT(origin.core().counters().messages_published.get(), 0u);
  expect_same_datagrams(origin.core(), relay.down.core());
  for (Sub* s : {&clean, &faulty}) {
    SCOPED_TRACE(s->name);
    expect_exact_delivery(log, origin.core(), s->agent.subscriber(), s->rec, r);
    EXPECT_EQ(s->rec.delivered, kMessages);
    EXPECT_EQ(s->agent.subscriber().session(), origin.core().session());
  }
  EXPECT_GT(faulty.agent.subscriber().counters().datagrams_recovered.get(), 0u) << "recovered from the relay\n" << r;
}

INSTANTIATE_TEST_SUITE_P(Seeds, RelayOverMem, ::testing::Values(1, 2, 3));

// The origin's feed as far as `total` messages at `rate` (0: as fast as it
// goes), `more(now)` each round.
template <class Round>
void publish_until(PubAgent& origin, Logged<PubAgent>& logged, Source& src, uint64_t total, double rate, Round&& more) {
  struct Hooks {
    Round& more;
    bool on_round(uint64_t now, uint64_t) noexcept {
      more(now);
      return true;
    }
  } hooks{more};
  feed::Pace pace;
  pace.rate = rate;
  pace.start_ns = monotonic_ns();
  src.left = total - origin.core().counters().messages_published.get();
  ASSERT_EQ(feed::run_paced(logged, src, pace, hooks).refused, feed::PublishResult::kOk);
}

TEST(RelayOverMemLate, ARelayThatStartsBehindTheOriginsRingBeginsFromItsSnapshot) {
  media::mem::PublisherMedium origin_medium;
  PubAgent origin(origin_medium, pub_config(1u << 20), {}, {}, kPubOpts);
  PublishedLog log(kInstruments);
  Logged<PubAgent> logged{origin, log};
  Source src = source(7, 0);
  publish_until(origin, logged, src, 40'000, 0, [](uint64_t) {});
  ASSERT_GT(origin.core().ring().oldest(), 1u) << "the ring still holds the start";

  // The relay joins now: what it missed is beyond the origin's ring, so its
  // upstream takes a snapshot, and it begins after it; its subscriber, there
  // from the relay's start, takes its snapshot from the relay.
  Relay relay(origin_medium, origin.core().session(), FaultProfile{});
  Sub late(relay.down_medium, FaultProfile{}, "late");
  publish_until(origin, logged, src, 60'000, 200'000, [&](uint64_t now) {
    relay.do_work(now);
    late.agent.do_work(now);
  });
  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  while (!origin.end_session(now)) origin.do_work(now = monotonic_ns());
  while (!(relay.finished() && late.agent.finished())) {
    now = monotonic_ns();
    ASSERT_LT(now, deadline) << "did not converge: relay" << nonzero(relay.counters, "relay.")
                             << nonzero(relay.agent.subscriber().counters(), "sub.") << "\n  late:"
                             << nonzero(late.agent.subscriber().counters());
    ASSERT_FALSE(relay.fwd.failed()) << relay.fwd.failure_text() << "\n  relay"
                                     << nonzero(relay.agent.subscriber().counters(), "sub.");
    origin.do_work(now);
    relay.do_work(now);
    late.agent.do_work(now);
  }
  const uint64_t first = relay.counters.first_sequence.get();
  EXPECT_GT(first, 1u) << "the relay began after its upstream's snapshot";
  // A second snapshot (the feed outran the relay's window again while it
  // caught up) is skipped past: the log goes on from the latest.
  EXPECT_GE(relay.down.core().first_sequence(), first);
  EXPECT_EQ(relay.agent.subscriber().counters().snapshots_applied.get(), 1 + relay.counters.skips.get());
  EXPECT_EQ(relay.counters.sequence_mismatches.get(), 0u);
  EXPECT_EQ(relay.counters.instrument_mismatches.get(), 0u);
  expect_same_datagrams(origin.core(), relay.down.core(), relay.down.core().first_sequence(), false);
  const auto& books = *late.agent.subscriber().books();
  for (uint32_t i = 0; i < kInstruments; ++i)
    EXPECT_EQ(origin.core().books().diff(i, books), "") << "the relay's subscriber, instrument " << i;
  EXPECT_GE(late.agent.subscriber().counters().snapshots_applied.get(), 1u) << "its snapshot came from the relay";
  EXPECT_EQ(late.agent.subscriber().session(), origin.core().session());
}

TEST(RelayOverMemLate, ASnapshotUpstreamAfterForwardingIsSkippedPastAndItsSubscribersTakeOneFromTheRelay) {
  media::mem::PublisherMedium origin_medium;
  PubAgent origin(origin_medium, pub_config(1u << 20), {}, {}, kPubOpts);
  PublishedLog log(kInstruments);
  Logged<PubAgent> logged{origin, log};
  Source src = source(7, 0);
  // From its 100th datagram the relay's link loses 3000 in a row: more than
  // the origin's ring holds, after the relay forwarded.
  FaultProfile outage;
  outage.burst_start = 100;
  outage.burst_length = 3000;
  outage.sequenced_only = true;
  Relay relay(origin_medium, origin.core().session(), outage, 1u << 20);
  Sub sub(relay.down_medium, FaultProfile{}, "downstream");
  auto serve = [&](uint64_t now) {
    relay.do_work(now);
    sub.agent.do_work(now);
  };
  publish_until(origin, logged, src, 40'000, 0, serve);
  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  // The outage's gap is past the origin's ring: the relay skips ahead once
  // its upstream has its snapshot; the feed goes on after that.
  while (relay.counters.skips.get() == 0) {
    now = monotonic_ns();
    ASSERT_LT(now, deadline) << "the relay never skipped ahead:" << nonzero(relay.agent.subscriber().counters(), "sub.");
    ASSERT_FALSE(relay.fwd.failed()) << relay.fwd.failure_text();
    origin.do_work(now);
    serve(now);
  }
  const uint64_t skipped_to = relay.down.core().first_sequence();
  publish_until(origin, logged, src, 50'000, 200'000, serve);
  while (!origin.end_session(now)) origin.do_work(now = monotonic_ns());
  while (!(relay.finished() && sub.agent.finished())) {
    now = monotonic_ns();
    ASSERT_LT(now, deadline) << "did not converge: relay" << nonzero(relay.counters, "relay.")
                             << nonzero(relay.agent.subscriber().counters(), "sub.") << "\n  downstream:"
                             << nonzero(sub.agent.subscriber().counters());
    ASSERT_FALSE(relay.fwd.failed()) << relay.fwd.failure_text();
    origin.do_work(now);
    serve(now);
  }
  const std::string r = fmt::format("relay{}{}{}", nonzero(relay.counters, "relay."),
                                    nonzero(relay.agent.subscriber().counters(), "sub."), nonzero(relay.faulty.counters(), "fault."));
  EXPECT_EQ(relay.counters.first_sequence.get(), 1u) << r;
  EXPECT_GE(relay.counters.skips.get(), 1u) << "the relay went on past its upstream's snapshot\n" << r;
  EXPECT_GT(relay.down.core().first_sequence(), 1u);
  EXPECT_EQ(relay.counters.sequence_mismatches.get(), 0u);
  EXPECT_EQ(relay.counters.instrument_mismatches.get(), 0u);
  SCOPED_TRACE(r);
  expect_same_datagrams(origin.core(), relay.down.core(), skipped_to, false);
  const auto& books = *sub.agent.subscriber().books();
  for (uint32_t i = 0; i < kInstruments; ++i)
    EXPECT_EQ(origin.core().books().diff(i, books), "") << "the relay's subscriber, instrument " << i;
  EXPECT_GE(sub.agent.subscriber().counters().snapshots_applied.get(), 1u) << "its snapshot came from the relay";
  EXPECT_EQ(sub.agent.subscriber().session(), origin.core().session());
}

}  // namespace
}  // namespace mdcast::test
