// A feed over four channels on the in-memory medium: PublisherChannels
// publishing every channel from one thread, SubscriberChannels taking several
// in one subscriber. Each channel has its own sequence space and recovery:
// loss on one channel is recovered on that channel alone; a subscriber joins
// only the channels its instruments are on; an instrument added at run time
// joins its channel and recovers its history there.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "delivery_check.hpp"
#include "feed_drive.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "recorder.hpp"

namespace mdcast::test {
namespace {

using media::fault::FaultProfile;
using media::fault::FaultyMedium;
using SubMedium = FaultyMedium<media::mem::SubscriberMedium>;
using Pub = feed::PublisherChannels<media::mem::PublisherMedium>;
using Sub = feed::SubscriberChannels<SubMedium, Recorder>;

constexpr uint32_t kInstruments = 64;
constexpr uint32_t kChannels = 4;
constexpr uint16_t kBaseChannel = 7;
constexpr uint64_t kMessages = 8000;
constexpr uint64_t kDeadlineNs = 60 * kNsPerSec;

feed::PublisherConfig pub_config(uint32_t index) {
  feed::PublisherConfig c;
  c.channel = static_cast<uint16_t>(kBaseChannel + index);
  c.session = 0x5e55;  // one session for every channel of the feed
  c.max_datagram = 1472;
  c.flush_interval_ns = 5 * kNsPerUs;
  c.heartbeat_interval_ns = kNsPerMs;
  c.retransmit_bytes = 8u << 20;  // holds the whole run: recovery is by retransmission
  c.crc = true;
  c.books = {kInstruments, 1u << 14, 256};
  return c;
}

feed::SubscriberConfig sub_config() {
  feed::SubscriberConfig c;
  c.channel = kBaseChannel;
  c.books = {kInstruments, 1u << 14, 256};
  c.window_bytes = 4u << 20;
  c.reorder_wait_ns = 200 * kNsPerUs;
  c.request_timeout_ns = 20 * kNsPerMs;
  return c;
}

constexpr feed::PublisherAgentOptions kPubOpts{0};
constexpr feed::SubscriberAgentOptions kSubOpts{0, IdleMode::kSpin, 64};

std::unique_ptr<Pub> make_publisher(const feed::ChannelMap& map) {
  auto pub = std::make_unique<Pub>(map);
  for (uint32_t k = 0; k < map.count(); ++k)
    pub->add(k, std::make_unique<media::mem::PublisherMedium>(), pub_config(k), {}, {}, kPubOpts);
  return pub;
}

// One subscriber over several channels: a recorder per channel index (the
// checks compare each channel's delivery with that channel's publisher),
// channel `lossy` behind an interceptor that loses and reorders.
struct ChannelSub {
  ChannelSub(Pub& pub, feed::SubscriberConfig cfg, std::string n, int lossy = -1, uint64_t seed = 1)
      : name(std::move(n)) {
    for (uint32_t k = 0; k < kChannels; ++k) recs.push_back(std::make_unique<Recorder>(kInstruments));
    auto open = [&pub, lossy, seed](uint32_t k) -> std::shared_ptr<SubMedium> {
      FaultProfile f;
      if (static_cast<int>(k) == lossy) {
        f.seed = seed;
        f.loss = 0.05;
        f.reorder = 0.1;
        f.reorder_depth = 6;
      }
      // The interceptor wraps its medium: one allocation owns both.
      struct Both {
        Both(media::mem::PublisherMedium& p, const FaultProfile& f) : medium(p), faulty(medium, f) {}
        media::mem::SubscriberMedium medium;
        SubMedium faulty;
      };
      auto both = std::make_shared<Both>(pub.find(k)->medium(), f);
      return std::shared_ptr<SubMedium>(both, &both->faulty);
    };
    sub = std::make_unique<Sub>(pub.map(), std::move(cfg), Sub::HandlerAt([this](uint32_t k) -> Recorder& { return *recs[k]; }),
                                open, Sub::CountersAt{}, kSubOpts);
    sub->start();
  }
  std::string name;
  std::vector<std::unique_ptr<Recorder>> recs;
  std::unique_ptr<Sub> sub;
};

std::string report(const std::vector<ChannelSub*>& subs) {
  std::string r;
  for (const ChannelSub* s : subs)
    for (size_t i = 0; i < s->sub->size(); ++i) {
      r += fmt::format("  {} channel index {}:{}\n", s->name, s->sub->index(i),
                       nonzero(s->sub->agent(i).subscriber().counters()));
    }
  return r;
}


bool finish(Pub& pub, const std::vector<ChannelSub*>& subs) {
  return finish_all(pub, subs, [](ChannelSub& s) -> Sub& { return *s.sub; }, kDeadlineNs);
}

// Each channel a subscriber joined delivered exactly what that channel's
// publisher published, for the instruments the subscriber wants there.
void expect_exact(const PublishedLog& log, Pub& pub, ChannelSub& s, const std::string& r) {
  for (size_t i = 0; i < s.sub->size(); ++i) {
    const uint32_t k = s.sub->index(i);
    SCOPED_TRACE(fmt::format("{} channel index {}", s.name, k));
    expect_exact_delivery(log, pub.find(k)->core(), s.sub->agent(i).subscriber(), *s.recs[k], r, false,
                          [&](uint32_t inst) { return pub.map().of(inst) == k; });
  }
  for (uint32_t k = 0; k < kChannels; ++k)
    if (!s.sub->find(k)) {
      for (uint32_t inst = 0; inst < kInstruments; ++inst)
        EXPECT_TRUE(s.recs[k]->per_inst[inst].empty()) << "channel index " << k << " was never joined";
    }
}

book::GeneratorConfig generator(uint64_t seed) {
  book::GeneratorConfig g;
  g.seed = seed;
  g.instruments = kInstruments;
  return g;
}

class FourChannels : public ::testing::TestWithParam<uint64_t> {};

TEST_P(FourChannels, LossOnOneChannelIsRecoveredOnThatChannelAlone) {
  const uint64_t seed = GetParam();
  const feed::ChannelMap map(kChannels, kInstruments);
  auto pub = make_publisher(map);
  ChannelSub clean(*pub, sub_config(), "clean");
  ChannelSub lossy(*pub, sub_config(), "lossy", /*lossy channel index*/ 2, seed);
  const std::vector<ChannelSub*> subs{&clean, &lossy};
  ASSERT_EQ(clean.sub->size(), kChannels) << "all instruments: every channel";

  PublishedLog log(kInstruments);
  Logged<Pub> logged{*pub, log};
  Messages messages{book::Generator(generator(seed)), kMessages};
  auto drive = drive_all(subs, [](ChannelSub& s) -> Sub& { return *s.sub; });
  feed::Pace pace;
  pace.rate = 300'000;
  pace.start_ns = monotonic_ns();
  const auto paced = feed::run_paced(logged, messages, pace, drive);
  ASSERT_EQ(paced.refused, feed::PublishResult::kOk);
  ASSERT_EQ(paced.published, kMessages);
  EXPECT_EQ(logged.out_of_order, 0u);

  ASSERT_TRUE(finish(*pub, subs)) << "did not converge\n" << report(subs);
  const std::string r = report(subs);
  expect_exact(log, *pub, clean, r);
  expect_exact(log, *pub, lossy, r);
  uint64_t delivered = 0;
  for (const auto& rec : lossy.recs) delivered += rec->delivered;
  EXPECT_EQ(delivered, kMessages);

  for (uint32_t k = 0; k < kChannels; ++k) {
    SCOPED_TRACE(fmt::format("channel index {}", k));
    // Each channel is its own sequence space, and every one carried traffic.
    EXPECT_GT(pub->find(k)->core().last_committed(), 0u);
    EXPECT_EQ(pub->find(k)->core().config().channel, kBaseChannel + k);
    const auto& c = lossy.sub->find(k)->subscriber().counters();
    if (k == 2) {
      EXPECT_GT(c.gaps.get(), 0u) << r;
      EXPECT_GT(c.datagrams_recovered.get(), 0u) << r;
    } else {
      EXPECT_EQ(c.gaps.get(), 0u) << r;
      EXPECT_EQ(c.retransmit_requests.get(), 0u) << r;
      EXPECT_EQ(c.datagrams_recovered.get(), 0u) << r;
    }
    EXPECT_EQ(c.foreign_channel.get(), 0u) << "each medium carries one channel";
    EXPECT_EQ(clean.sub->find(k)->subscriber().counters().gaps.get(), 0u) << r;
    // Only the lossy channel's publisher served retransmits.
    const uint64_t served = pub->find(k)->control().counters().retransmit_requests.get();
    if (k != 2) {
      EXPECT_EQ(served, 0u) << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, FourChannels, ::testing::Values(1, 2));

// Drives the feed message by message so a test can act halfway.
template <class Halfway>
void publish_all(Pub& pub, PublishedLog& log, const std::vector<ChannelSub*>& subs, Halfway&& halfway) {
  book::Generator gen(generator(5));
  for (uint64_t i = 0; i < kMessages; ++i) {
    wire::Message m;
    gen.next(m);
    const uint64_t now = monotonic_ns();
    ASSERT_EQ(pub.publish(m, now), feed::PublishResult::kOk) << "the bus never pushes back";
    ASSERT_TRUE(log.add(m));
    if (i % 16 == 0) {
      pub.do_work(now);
      for (ChannelSub* s : subs) s->sub->do_work(now);
    }
    if (i == kMessages / 2) {
      pub.flush(now);
      halfway(now);
    }
  }
}

std::vector<uint32_t> on(const feed::ChannelMap& map, uint32_t channel, size_t n) {
  std::vector<uint32_t> v = map.instruments(channel);
  v.resize(std::min(v.size(), n));
  return v;
}

TEST(Channels, ASubscriberOnTwoOfFourGetsExactlyItsInstruments) {
  const feed::ChannelMap map(kChannels, kInstruments);
  auto pub = make_publisher(map);
  feed::SubscriberConfig cfg = sub_config();
  cfg.all_instruments = false;
  cfg.instruments = on(map, 1, 100);  // all of channel 1
  for (uint32_t i : on(map, 3, 3)) cfg.instruments.push_back(i);
  std::sort(cfg.instruments.begin(), cfg.instruments.end());
  ChannelSub two(*pub, cfg, "two");
  ASSERT_EQ(two.sub->size(), 2u);
  EXPECT_NE(two.sub->find(1), nullptr);
  EXPECT_NE(two.sub->find(3), nullptr);

  PublishedLog log(kInstruments);
  publish_all(*pub, log, {&two}, [](uint64_t) {});
  ASSERT_TRUE(finish(*pub, {&two})) << "did not converge\n" << report({&two});
  const std::string r = report({&two});
  expect_exact(log, *pub, two, r);
  uint64_t want = 0, got = 0;
  for (uint32_t i : cfg.instruments) want += log.of(i).size();
  for (const auto& rec : two.recs) got += rec->delivered;
  EXPECT_EQ(got, want) << r;
  EXPECT_GT(want, 0u);
  // Channels 0 and 2 were never opened: their publishers have no client.
  EXPECT_EQ(pub->find(0)->clients(), 0u);
  EXPECT_EQ(pub->find(2)->clients(), 0u);
  EXPECT_EQ(pub->find(1)->subscribed_clients(), 1u);
}

TEST(Channels, AnInstrumentAddedAtRunTimeJoinsItsChannelAndRecovers) {
  const feed::ChannelMap map(kChannels, kInstruments);
  auto pub = make_publisher(map);
  feed::SubscriberConfig cfg = sub_config();
  cfg.all_instruments = false;
  cfg.instruments = on(map, 0, 4);
  for (uint32_t i : on(map, 1, 4)) cfg.instruments.push_back(i);
  std::sort(cfg.instruments.begin(), cfg.instruments.end());
  ChannelSub s(*pub, cfg, "adder");
  ASSERT_EQ(s.sub->size(), 2u);
  // The busiest instrument of channel 2 in the first half: history to recover.
  const uint32_t added = on(map, 2, 1).front();

  PublishedLog log(kInstruments);
  uint64_t before = 0;
  publish_all(*pub, log, {&s}, [&](uint64_t now) {
    before = log.of(added).size();
    s.sub->add_instruments(std::vector<uint32_t>{added}, now);
  });
  ASSERT_EQ(s.sub->size(), 3u) << "the added instrument's channel was joined";
  ASSERT_NE(s.sub->find(2), nullptr);
  EXPECT_GT(before, 0u) << "the instrument had history when added";
  ASSERT_TRUE(finish(*pub, {&s})) << "did not converge\n" << report({&s});
  const std::string r = report({&s});
  expect_exact(log, *pub, s, r);
  EXPECT_TRUE(s.sub->find(2)->subscriber().wants(added));
  const auto& c = s.sub->find(2)->subscriber().counters();
  EXPECT_GT(c.datagrams_recovered.get() + c.snapshots_applied.get(), 0u) << "it recovered the history\n" << r;
  // What it holds of the added instrument is the publisher's book.
  const auto* books = s.sub->find(2)->subscriber().books();
  ASSERT_NE(books, nullptr);
  EXPECT_EQ(books->book(added).instrument_seq(), log.of(added).size());
}

// A subscriber that arrives while the feed runs, and whose second channel
// takes a while to build (each channel's engine allocates its books and
// window: seconds on a loaded host). Its channels attach together, once
// every one is built: the first one built must not hear what was published
// while the second was being built. Attached early and served only after,
// it would hear a publisher that may have finished and left meanwhile -
// held data behind a gap from the start of the session (0 messages, 1 gap)
// and a last heartbeat, then silence: "publisher silent", then
// "publisher-lost", for a subscriber that was never in time to subscribe.
TEST(Channels, ASubscriberAttachesItsChannelsTogetherOnceAllAreBuilt) {
  const feed::ChannelMap map(2, kInstruments);
  auto pub = make_publisher(map);
  PublishedLog log(kInstruments);
  book::Generator gen(generator(11));
  auto publish = [&](uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      wire::Message m;
      gen.next(m);
      const uint64_t now = monotonic_ns();
      ASSERT_EQ(pub->publish(m, now), feed::PublishResult::kOk);
      ASSERT_TRUE(log.add(m));
      if (i % 16 == 0) pub->do_work(now);
    }
    pub->flush(monotonic_ns());
    pub->do_work(monotonic_ns());
  };
  publish(kMessages / 2);  // the feed is live when the subscriber arrives

  std::vector<std::unique_ptr<Recorder>> recs;
  for (uint32_t k = 0; k < map.count(); ++k) recs.push_back(std::make_unique<Recorder>(kInstruments));
  std::vector<uint32_t> opened;
  auto open = [&](uint32_t k) -> std::shared_ptr<SubMedium> {
    opened.push_back(k);
    if (k == 1) {
      // Channel index 0 is built; index 1 takes its time. Meanwhile the
      // publisher runs its session to the end and announces it.
      publish(kMessages / 2);
      uint64_t now = monotonic_ns();
      while (!pub->end_session(now)) pub->do_work(now = monotonic_ns());
      pub->do_work(now);
    }
    struct Both {
      explicit Both(media::mem::PublisherMedium& p) : medium(p), faulty(medium, FaultProfile{}) {}
      media::mem::SubscriberMedium medium;
      SubMedium faulty;
    };
    auto both = std::make_shared<Both>(pub->find(k)->medium());
    return std::shared_ptr<SubMedium>(both, &both->faulty);
  };
  Sub sub(map, sub_config(), Sub::HandlerAt([&](uint32_t k) -> Recorder& { return *recs[k]; }), open, Sub::CountersAt{},
          kSubOpts);
  sub.start();
  ASSERT_EQ(sub.size(), 2u);
  ASSERT_EQ(opened, (std::vector<uint32_t>{0, 1}));

  // The first duty cycle: each channel hears what came since it attached.
  sub.do_work(monotonic_ns());
  for (size_t i = 0; i < sub.size(); ++i) {
    SCOPED_TRACE(fmt::format("channel index {}", sub.index(i)));
    const auto& c = sub.agent(i).subscriber().counters();
    EXPECT_EQ(c.datagrams_received.get(), 0u)
        << "attached before the subscriber could serve it: it heard the session that ran while channel index 1 "
           "was being built\n"
        << nonzero(c);
    EXPECT_EQ(c.gaps.get(), 0u) << nonzero(c);
  }

  // The publisher still serves recovery: both channels get the whole session.
  const std::vector<Sub*> subs{&sub};
  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  bool done = false;
  while (!done && now < deadline) {
    pub->do_work(now = monotonic_ns());
    sub.do_work(now);
    done = sub.finished();
  }
  std::string r;
  for (size_t i = 0; i < sub.size(); ++i)
    r += fmt::format("  channel index {}:{}\n", sub.index(i), nonzero(sub.agent(i).subscriber().counters()));
  ASSERT_TRUE(done) << "did not converge\n" << r;
  uint64_t delivered = 0;
  for (size_t i = 0; i < sub.size(); ++i) {
    const uint32_t k = sub.index(i);
    SCOPED_TRACE(fmt::format("channel index {}", k));
    expect_exact_delivery(log, pub->find(k)->core(), sub.agent(i).subscriber(), *recs[k], r, false,
                          [&](uint32_t inst) { return map.of(inst) == k; });
    delivered += recs[k]->delivered;
  }
  const auto totals = [&](auto field) {
    uint64_t v = 0;
    for (size_t i = 0; i < sub.size(); ++i) v += field(sub.agent(i).subscriber().counters());
    return v;
  };
  EXPECT_GT(totals([](const auto& c) { return c.datagrams_recovered.get() + c.snapshots_applied.get(); }), 0u)
      << "the session before it attached was recovered\n" << r;
  EXPECT_GT(delivered, 0u) << r;
}

}  // namespace
}  // namespace mdcast::test
