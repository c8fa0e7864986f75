// runtime::PublisherRuntime over the shm medium, as an application runs it:
// 4 channels on 2 pinned-or-not threads behind one control endpoint, a
// subscriber of every channel (feed::SubscriberChannels on its own thread)
// that the runtime waits for, the whole session delivered with the
// publisher's books; a channel that cannot be built fails the run with its
// name and stops the other thread; a stop request ends a run that waits for
// subscribers who never come, and a stopped pair member ends its session
// unless its hand-over hook says a peer carries it on; plans that cannot run are refused. Then the
// subscriber's side: runtime::SubscriberRuntime reads such a feed to its end,
// and when a subscriber gives up.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"

using namespace mdcast;
namespace shm = media::shm;

namespace {

constexpr uint32_t kChannels = 4;
constexpr uint32_t kInstruments = 32;
constexpr uint16_t kBase = 40;
constexpr uint64_t kPerThread = 3000;
constexpr book::BookConfig kBooks{kInstruments, 1u << 14, 256};

using Runtime = runtime::PublisherRuntime<shm::PublisherMedium, media::ControlFrontDoor>;

std::string feed_name(const char* what) { return fmt::format("rt-{}-{}", what, ::getpid()); }

shm::Options ring(const std::string& feed, uint32_t k) {
  shm::Options o;
  o.name = shm::channel_ring_name(feed, kChannels, k);
  o.dir = "/dev/shm";
  o.slots = 2048;
  o.huge_pages = false;
  o.channel = static_cast<uint16_t>(kBase + k);
  o.wait_ns = 20 * kNsPerSec;
  return o;
}

runtime::PublisherPlan plan(uint32_t threads) {
  runtime::PublisherPlan p;
  p.map = feed::ChannelMap(kChannels, kInstruments);
  p.threads = threads;
  p.engine.channel = kBase;
  p.engine.session = 0x7e57;
  p.engine.books = kBooks;
  p.engine.retransmit_bytes = 8u << 20;
  p.linger_ns = 20 * kNsPerSec;  // ends once the subscriber has left
  return p;
}

Runtime make(runtime::PublisherPlan p, const std::string& feed, int fail_channel = -1) {
  shm::Options d;
  d.name = feed;
  auto door = shm::open_control_door(d);
  const std::string address = door->address();
  return Runtime(std::move(p), std::move(door), [feed, address, fail_channel](uint32_t k, auto inbox) {
    if (static_cast<int>(k) == fail_channel) fail("no ring for you");
    shm::Options o = ring(feed, k);
    o.control = address;
    o.control_inbox = std::move(inbox);
    return std::make_unique<shm::PublisherMedium>(o, 0x7e57);
  });
}

struct Limited {  // kPerThread messages of the thread's own instruments
  book::Generator gen;
  uint64_t left = kPerThread;
  bool next(wire::Message& m) noexcept {
    if (!left) return false;
    --left;
    gen.next(m);
    return true;
  }
};

struct NoHooks {
  bool on_round(uint64_t, uint64_t) noexcept { return true; }
};

feed::PaceResult publish_limited(Runtime::Lane& lane, const feed::ChannelMap& map) {
  book::GeneratorConfig g;
  g.seed = 11 + lane.thread();
  g.instruments = kInstruments;
  for (uint32_t i = 0; i < kInstruments; ++i)
    for (uint32_t k : lane.channels())
      if (map.of(i) == k) g.ids.push_back(i);
  Limited src{book::Generator(g)};
  feed::Pace pace;
  pace.start_ns = lane.t0();
  struct Hooks {
    Runtime::Lane& lane;
    bool on_round(uint64_t now, uint64_t) noexcept {
      lane.report(now);
      return !lane.stopping();
    }
  } hooks{lane};
  return feed::run_paced(lane.publisher(), src, pace, hooks);
}

// A subscriber of every channel of `feed`, patient on a loaded host.
runtime::SubscriberPlan sub_plan(const feed::ChannelMap& map, const std::string& feed) {
  runtime::SubscriberPlan sp;
  sp.map = map;
  sp.engine.channel = kBase;
  sp.engine.books = kBooks;
  sp.first_channel = kBase;
  sp.name = feed;
  sp.medium = "shm";
  sp.limits.wait_ns = sp.limits.give_up_ns = 60 * kNsPerSec;
  return sp;
}

struct Counting {
  uint64_t messages = 0;
  void on_message(const wire::Message&, const feed::Delivery&) noexcept { ++messages; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

struct Digest {
  uint64_t seq = 0;
  uint64_t checksum = 0;
  bool operator==(const Digest&) const = default;
};

}  // namespace

TEST(PublisherRuntime, FourChannelsOnTwoThreadsDeliverEverySessionWithThePublishersBooks) {
  const std::string feed = feed_name("four");
  runtime::PublisherPlan p = plan(2);
  p.wait_subscribers = kChannels;  // one subscriber, every channel
  p.counters.name = feed;
  p.counters.medium = "shm";
  const feed::ChannelMap map = p.map;
  Runtime rt = make(std::move(p), feed);

  // The subscriber: its own thread, every channel, until each session has
  // been delivered to its end.
  std::vector<Digest> got(kInstruments);
  std::atomic<bool> sub_done{false};
  std::string sub_error;
  uint64_t delivered = 0;
  std::thread sub([&] {
    try {
      feed::SubscriberConfig c;
      c.channel = kBase;
      c.books = kBooks;
      Counting h;
      feed::SubscriberChannels<shm::SubscriberMedium, Counting> ch(
          map, c, h, [&](uint32_t k) { return std::make_shared<shm::SubscriberMedium>(ring(feed, k)); });
      ch.start();
      const uint64_t deadline = monotonic_ns() + 60 * kNsPerSec;
      while (!ch.finished() && monotonic_ns() < deadline) ch.idle(ch.do_work(monotonic_ns()));
      for (uint32_t i = 0; i < kInstruments; ++i) {
        const auto* books = ch.find(map.of(i))->subscriber().books();
        got[i] = {books->book(i).instrument_seq(), books->book(i).checksum()};
      }
      delivered = h.messages;
      if (!ch.finished()) sub_error = "the subscriber did not finish within 60 s";
    } catch (const std::exception& e) {
      sub_error = e.what();
    }
    sub_done = true;
  });

  std::vector<Digest> want(kInstruments);
  bool file_seen = false;
  Runtime::Hooks hooks;
  hooks.publish = [&](Runtime::Lane& lane) { return publish_limited(lane, map); };
  hooks.started = [&](Runtime& r) {
    file_seen = r.counters_file() && std::filesystem::exists(r.counters_file()->path());
    EXPECT_NE(r.described(3).find(shm::channel_ring_name(feed, kChannels, 3)), std::string::npos) << r.described(3);
  };
  hooks.finished = [&](Runtime::Lane& lane) {  // each thread, its own instruments: no overlap
    auto& ch = lane.publisher();
    for (size_t a = 0; a < ch.size(); ++a)
      for (uint32_t i = 0; i < kInstruments; ++i)
        if (map.of(i) == ch.index(a)) {
          const auto& b = ch.agent(a).core().books().book(i);
          want[i] = {b.instrument_seq(), b.checksum()};
        }
  };
  Runtime::Outcome out;
  try {
    out = rt.run(std::move(hooks));
  } catch (...) {
    sub.join();
    throw;
  }
  sub.join();
  ASSERT_TRUE(sub_error.empty()) << sub_error;
  EXPECT_FALSE(out.stopped);
  EXPECT_EQ(out.published, 2 * kPerThread);
  EXPECT_EQ(delivered, 2 * kPerThread);
  EXPECT_TRUE(file_seen) << "the counters file exists while the feed runs";
  for (uint32_t i = 0; i < kInstruments; ++i) {
    EXPECT_GT(want[i].seq, 0u) << "instrument " << i;
    EXPECT_EQ(got[i], want[i]) << "instrument " << i << " on channel index " << map.of(i);
  }
  for (size_t t = 0; t < rt.lanes(); ++t) EXPECT_EQ(rt.lane(t).paced.published, kPerThread);
}

TEST(PublisherRuntime, AChannelThatCannotBeBuiltFailsTheRunWithItsNameAndStopsTheOthers) {
  const std::string feed = feed_name("fail");
  Runtime rt = make(plan(2), feed, /*fail_channel*/ 3);
  Runtime::Hooks hooks;
  bool published = false;
  hooks.publish = [&](Runtime::Lane&) {
    published = true;
    return feed::PaceResult{};
  };
  try {
    (void)rt.run(std::move(hooks));
    FAIL() << "run() returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("channel {}", kBase + 3)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no ring for you"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(published) << "no thread publishes once one could not build its channels";
}

TEST(PublisherRuntime, AStopRequestEndsARunThatWaitsForSubscribers) {
  const std::string feed = feed_name("stop");
  StopFlag stop;
  runtime::PublisherPlan p = plan(1);
  p.wait_subscribers = 1;  // nobody comes
  p.stop = &stop;
  Runtime rt = make(std::move(p), feed);
  Runtime::Hooks hooks;
  hooks.started = [&](Runtime&) { stop.request(); };  // as a signal handler would, once it runs
  uint64_t seen_stopping = 0;
  hooks.publish = [&](Runtime::Lane& lane) {
    seen_stopping += lane.stopping();
    return feed::PaceResult{0, monotonic_ns()};
  };
  const auto out = rt.run(std::move(hooks));
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(seen_stopping, 1u);
  EXPECT_EQ(out.published, 0u);
}

// A pair member's way out (Hooks::hand_over): asked only after a stop
// request, never at the input's end; true leaves every channel's session
// unended, false ends it as without the hook.
TEST(PublisherRuntime, AStoppedMemberLeavesTheSessionUnendedOnlyWhenItsHandOverSaysSo) {
  for (const bool peer_carries_on : {true, false}) {
    SCOPED_TRACE(peer_carries_on ? "the peer carries on" : "no peer");
    StopFlag stop;
    runtime::PublisherPlan p = plan(2);
    p.stop = &stop;
    Runtime rt = make(std::move(p), feed_name(peer_carries_on ? "handover" : "nohandover"));
    Runtime::Hooks hooks;
    std::atomic<int> asked{0}, ended{0}, channels{0};
    std::once_flag signal;
    hooks.publish = [&](Runtime::Lane& lane) {
      std::call_once(signal, [&] { stop.request(); });  // as one SIGTERM would, while publishing
      return publish_limited(lane, feed::ChannelMap(kChannels, kInstruments));
    };
    hooks.hand_over = [&](Runtime::Lane&) {
      ++asked;
      return peer_carries_on;
    };
    hooks.finished = [&](Runtime::Lane& lane) {
      for (size_t i = 0; i < lane.publisher().size(); ++i, ++channels)
        ended += lane.publisher().agent(i).core().ended();
    };
    const auto out = rt.run(std::move(hooks));
    EXPECT_TRUE(out.stopped);
    EXPECT_EQ(asked.load(), 2) << "each thread asks once";
    EXPECT_EQ(out.handed_over, peer_carries_on);
    EXPECT_EQ(channels.load(), static_cast<int>(kChannels));
    EXPECT_EQ(ended.load(), peer_carries_on ? 0 : static_cast<int>(kChannels));
  }
  // The input's end is the session's end: nobody is asked.
  Runtime rt = make(plan(1), feed_name("natural"));
  Runtime::Hooks hooks;
  std::atomic<int> asked{0};
  hooks.publish = [&](Runtime::Lane& lane) { return publish_limited(lane, feed::ChannelMap(kChannels, kInstruments)); };
  hooks.hand_over = [&](Runtime::Lane&) { return ++asked > 0; };
  const auto out = rt.run(std::move(hooks));
  EXPECT_FALSE(out.stopped);
  EXPECT_FALSE(out.handed_over);
  EXPECT_EQ(asked.load(), 0);
}

TEST(PublisherRuntime, RefusesAPlanThatCannotRun) {
  auto refused = [](runtime::PublisherPlan p, const char* why) {
    try {
      Runtime rt(std::move(p), nullptr, [](uint32_t, auto) -> std::unique_ptr<shm::PublisherMedium> { return nullptr; });
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(plan(5), "5 publishing threads for 4 channels");
  refused(plan(0), "0 publishing threads");
  runtime::PublisherPlan cpus = plan(2);
  cpus.cpus = {0};
  refused(cpus, "1 CPUs for 2 publishing threads");
  runtime::PublisherPlan high = plan(1);
  high.engine.channel = 65534;
  refused(high, "goes past channel id 65535");
}

// The subscriber side: runtime::SubscriberRuntime reads the 4 channels the
// publisher runtime publishes, ends when every session has ended, and holds
// the publisher's books; its counters file has the totals and a section per
// channel.
TEST(SubscriberRuntime, ReadsEveryChannelToTheEndWithThePublishersBooks) {
  const std::string feed = feed_name("sub");
  runtime::PublisherPlan p = plan(2);
  p.wait_subscribers = kChannels;
  const feed::ChannelMap map = p.map;
  Runtime rt = make(std::move(p), feed);

  using Sub = runtime::SubscriberRuntime<shm::SubscriberMedium, Counting>;
  std::vector<runtime::BookDigest> got;
  std::vector<std::pair<std::string, uint64_t>> counters;
  Sub::Outcome sub_out;
  runtime::RunResult sub_result;
  uint64_t delivered = 0, totals = 0, refreshes = 0;
  std::string sub_error;
  std::thread sub([&] {
    try {
      const runtime::SubscriberPlan sp = sub_plan(map, feed);
      Counting h;
      Sub s(sp, [&](uint32_t) -> Counting& { return h; },
            [&](uint32_t k) { return std::make_shared<shm::SubscriberMedium>(ring(feed, k)); });
      EXPECT_EQ(s.joined().size(), kChannels);
      EXPECT_TRUE(std::filesystem::exists(s.counters_file().path()));
      sub_out = s.run([&](uint64_t) { ++refreshes; });
      got = s.books();
      s.dump_counters(counters);
      sub_result = s.result(sub_out);
      delivered = h.messages;
      totals = s.totals().messages_delivered.get();
    } catch (const std::exception& e) {
      sub_error = e.what();
    }
  });
  std::vector<runtime::BookDigest> want;
  Runtime::Hooks hooks;
  hooks.publish = [&](Runtime::Lane& lane) { return publish_limited(lane, map); };
  std::mutex m;  // the two threads' finished hooks
  hooks.finished = [&](Runtime::Lane& lane) {
    std::lock_guard lock(m);
    auto& ch = lane.publisher();
    for (size_t a = 0; a < ch.size(); ++a)
      for (uint32_t i = 0; i < kInstruments; ++i)
        if (map.of(i) == ch.index(a)) {
          const auto& b = ch.agent(a).core().books().book(i);
          want.push_back({i, b.instrument_seq(), b.checksum()});
        }
  };
  Runtime::Outcome pub_out;
  try {
    pub_out = rt.run(std::move(hooks));
  } catch (...) {
    sub.join();
    throw;
  }
  sub.join();
  ASSERT_TRUE(sub_error.empty()) << sub_error;
  // The result files' content, from each runtime, agree as `mdcast verify` checks them.
  const runtime::RunResult pub_result = rt.result(pub_out);
  EXPECT_EQ(pub_result.role, "publisher");
  EXPECT_EQ(sub_result.outcome, "ok");
  EXPECT_EQ(pub_result.messages, 2 * kPerThread);
  EXPECT_EQ(pub_result.counter("pub.messages_published"), 2 * kPerThread) << "the totals, as one channel writes them";
  EXPECT_EQ(pub_result.last_sequence, sub_result.last_sequence);
  const runtime::BookVerdict verdict = runtime::compare_books(pub_result, sub_result);
  EXPECT_TRUE(verdict.identical) << verdict.detail;
  EXPECT_EQ(verdict.compared, pub_result.books.size());
  EXPECT_EQ(sub_out.ending, runtime::SubscriberEnding::kEnded) << to_string(sub_out.ending) << " " << sub_out.error;
  EXPECT_EQ(delivered, 2 * kPerThread);
  EXPECT_EQ(totals, 2 * kPerThread) << "the totals section sums the channels";
  EXPECT_GE(refreshes, 1u) << "the refresh hook runs at the end at least";
  std::sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.instrument < b.instrument; });
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].instrument, want[i].instrument);
    EXPECT_EQ(got[i].instrument_seq, want[i].instrument_seq) << "instrument " << got[i].instrument;
    EXPECT_EQ(got[i].checksum, want[i].checksum) << "instrument " << got[i].instrument;
  }
  auto value = [&](const std::string& key) -> std::optional<uint64_t> {
    for (const auto& [k, v] : counters)
      if (k == key) return v;
    return std::nullopt;
  };
  EXPECT_EQ(value("sub.messages_delivered"), 2 * kPerThread);
  for (uint32_t k = 0; k < kChannels; ++k)
    EXPECT_TRUE(value(fmt::format("sub@{}.messages_delivered", kBase + k))) << "channel " << kBase + k;
}

// An application's hooks (a recorder's): `started` once the channels exist,
// before any delivery, with their books; `round` every control round, whose
// false ends the run as kFailed with its reason in the result; the counters
// file says the plan's role.
TEST(SubscriberRuntime, TheApplicationsRoundHookEndsTheRunWithItsReason) {
  const std::string feed = feed_name("hooks");
  runtime::PublisherPlan p = plan(1);
  p.wait_subscribers = kChannels;
  p.linger_ns = kNsPerSec;  // its subscriber is gone before the end
  const feed::ChannelMap map = p.map;
  Runtime rt = make(std::move(p), feed);

  using Sub = runtime::SubscriberRuntime<shm::SubscriberMedium, Counting>;
  Sub::Outcome out;
  runtime::RunResult result;
  std::string role, sub_error;
  bool books_at_start = false;
  uint64_t delivered_at_start = UINT64_MAX, rounds = 0;
  std::thread sub([&] {
    try {
      runtime::SubscriberPlan sp = sub_plan(map, feed);
      sp.role = "recorder";
      Counting h;
      Sub s(sp, [&](uint32_t) -> Counting& { return h; },
            [&](uint32_t k) { return std::make_shared<shm::SubscriberMedium>(ring(feed, k)); });
      Sub::RunHooks hooks;
      hooks.started = [&](Sub& r) {
        books_at_start = r.channels().agent(0).subscriber().books() != nullptr;
        delivered_at_start = h.messages;
        role = stats::read_counters(r.counters_file().path()).role;
      };
      hooks.round = [&](uint64_t, std::string& error) {
        ++rounds;
        if (h.messages == 0) return true;
        error = "disk full";
        return false;
      };
      out = s.run(hooks);
      result = s.result(out);
    } catch (const std::exception& e) {
      sub_error = e.what();
    }
  });
  Runtime::Hooks hooks;
  hooks.publish = [&](Runtime::Lane& lane) { return publish_limited(lane, map); };
  try {
    (void)rt.run(std::move(hooks));
  } catch (...) {
    sub.join();
    throw;
  }
  sub.join();
  ASSERT_TRUE(sub_error.empty()) << sub_error;
  EXPECT_TRUE(books_at_start);
  EXPECT_EQ(delivered_at_start, 0u) << "started runs before the first delivery";
  EXPECT_EQ(role, "recorder");
  EXPECT_GE(rounds, 1u);
  EXPECT_EQ(out.ending, runtime::SubscriberEnding::kFailed) << to_string(out.ending);
  EXPECT_EQ(out.error, "disk full");
  EXPECT_EQ(result.outcome, "error: disk full");
}

namespace {
// What subscriber_should_end reads of an agent, set by hand.
struct FakeSubscriber {
  bool refused = false;
  bool is_subscribed = false;
  uint64_t unproven_since = 0;
  feed::SubscriberCounters c;
  [[nodiscard]] bool subscribe_refused() const noexcept { return refused; }
  [[nodiscard]] bool subscribed() const noexcept { return is_subscribed; }
  [[nodiscard]] uint64_t peer_unproven_since() const noexcept { return unproven_since; }
  [[nodiscard]] std::string last_error() const { return "not entitled"; }
  [[nodiscard]] const feed::SubscriberCounters& counters() const noexcept { return c; }
};
struct FakeAgent {
  FakeSubscriber sub;
  uint64_t last_data = 0;
  [[nodiscard]] const FakeSubscriber& subscriber() const noexcept { return sub; }
  [[nodiscard]] uint64_t last_data_ns() const noexcept { return last_data; }
};
}  // namespace

// Data heard but no control plane ever answered (a dead feed.control, every
// announcement unsigned where a key is set): a setup error after
// subscriber.wait from the first datagram, with a reason; once subscribed, a
// later control outage is not.
TEST(SubscriberRuntime, AFeedHeardWithoutASubscriptionEndsAsASetupErrorAfterTheWait) {
  using runtime::SubscriberEnding;
  runtime::SubscriberLimits l{nullptr, 0, 10 * kNsPerSec, 60 * kNsPerSec};
  FakeAgent a;
  const uint64_t t0 = 100 * kNsPerSec;
  SubscriberEnding why{};
  std::string error;
  runtime::FirstSubscription first;
  auto ends = [&](uint64_t now) {
    a.last_data = now;  // the feed flows all along
    return runtime::subscriber_should_end(a, l, t0, now, why, error, &first);
  };
  EXPECT_FALSE(ends(t0 + 5 * kNsPerSec)) << "nothing heard yet";
  a.sub.c.datagrams_received.set(5);
  EXPECT_FALSE(ends(t0 + 8 * kNsPerSec)) << "heard, not subscribed: the wait starts now";
  EXPECT_FALSE(ends(t0 + 17 * kNsPerSec)) << "9 s of the 10 s wait";
  EXPECT_TRUE(ends(t0 + 19 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kRefused);
  EXPECT_NE(error.find("the feed was heard for 11 s, but no control plane answered a Subscribe"), std::string::npos)
      << error;

  runtime::FirstSubscription later;
  a.sub.is_subscribed = true;
  EXPECT_FALSE(runtime::subscriber_should_end(a, l, t0, t0 + 20 * kNsPerSec, why, error, &later));
  a.sub.is_subscribed = false;  // the control plane lost after a subscription
  EXPECT_FALSE(runtime::subscriber_should_end(a, l, t0, t0 + 21 * kNsPerSec, why, error, &later));
  EXPECT_FALSE(runtime::subscriber_should_end(a, l, t0, t0 + 40 * kNsPerSec, why, error, &later))
      << "an outage after a subscription is the media's to ride out";
}

TEST(SubscriberRuntime, EndsOnAStopADurationARefusalOrASilentPublisher) {
  using runtime::SubscriberEnding;
  StopFlag stop;
  runtime::SubscriberLimits l{&stop, 0, 10 * kNsPerSec, 2 * kNsPerSec};
  FakeAgent a;
  const uint64_t t0 = 100 * kNsPerSec;
  SubscriberEnding why{};
  std::string error;
  auto ends = [&](uint64_t now) { return runtime::subscriber_should_end(a, l, t0, now, why, error); };

  a.last_data = t0;
  EXPECT_FALSE(ends(t0 + kNsPerSec)) << "nothing heard yet, within subscriber.wait";
  EXPECT_TRUE(ends(t0 + 11 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kPublisherLost) << "never heard within subscriber.wait";

  a.sub.c.datagrams_received.set(5);
  a.last_data = t0 + 5 * kNsPerSec;
  EXPECT_FALSE(ends(t0 + 6 * kNsPerSec)) << "heard 1 s ago";
  EXPECT_TRUE(ends(t0 + 8 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kPublisherLost) << "silent past give_up";

  a.last_data = t0 + 8 * kNsPerSec;
  a.sub.refused = true;
  EXPECT_TRUE(ends(t0 + 8 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kRefused);
  EXPECT_EQ(error, "not entitled");
  EXPECT_EQ(to_string(why), "error");

  // A control peer that could not prove itself (an impostor the medium may
  // be leaving) is a refusal only after subscriber.wait without a publisher that could.
  a.sub.refused = false;
  a.sub.unproven_since = t0 + 8 * kNsPerSec;
  EXPECT_FALSE(ends(t0 + 9 * kNsPerSec));
  EXPECT_TRUE(ends(t0 + 19 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kRefused);
  a.sub.unproven_since = 0;

  l.duration_ns = 3 * kNsPerSec;
  EXPECT_TRUE(ends(t0 + 3 * kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kDuration);

  stop.request();
  EXPECT_TRUE(ends(t0 + kNsPerSec));
  EXPECT_EQ(why, SubscriberEnding::kStopped) << "a stop request comes first";
}
