// Requests leave the data path (SubscriberCore, "Requests leave the data
// path"): a datagram that raises a request - a gap, a window overflow, an
// instrument's gap, a claimed session - allocates nothing and sends nothing
// while it is processed; the next control round sends the request, and
// allocates nothing either.
//
// A SubscriberAgent runs over a scripted medium whose source forbids every
// allocation while it hands a datagram to the engine (a poll callback), and
// the test forbids them around each control round. This executable replaces
// the global allocation functions: while forbidden on this thread, an
// allocation fails (std::bad_alloc, or null for the nothrow forms) and is
// counted; the tests fail on any count. Nothing here is timed: the clock is
// the test's.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>

#include "mdcast/feed/subscriber_agent.hpp"
#include "failing_allocator.hpp"
#include "subscriber_support.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

// While alive, every allocation on this thread fails and is counted. Nests
// (a control round forbids around the source's own callbacks).
class Forbidden {
 public:
  Forbidden() noexcept : was_(t_fail_allocations) { t_fail_allocations = true; }
  ~Forbidden() { t_fail_allocations = was_; }
  Forbidden(const Forbidden&) = delete;
  Forbidden& operator=(const Forbidden&) = delete;

 private:
  bool was_;
};

// A SubscriberMedium the test scripts: datagrams queued for its source,
// control frames queued for the engine, and a control channel that keeps
// what the engine sends in fixed storage (it runs while allocations fail).
struct ScriptedMedium {
  struct Source {
    std::deque<Bytes> queue;
    uint64_t rx_ns = 0;
    template <class Fn>
    size_t poll(Fn&& fn, size_t budget) noexcept {
      size_t n = 0;
      for (; n < budget && !queue.empty(); ++n) {
        {
          const Forbidden inside_the_callback;
          media::hand_datagram(fn, queue.front(), rx_ns, media::RailId::kA);
        }
        queue.pop_front();
      }
      return n;
    }
    bool block(uint64_t) noexcept { return false; }
  };
  struct Channel final : media::ControlChannel {
    static constexpr size_t kFrames = 32, kFrameBytes = 256;
    std::array<std::array<std::byte, kFrameBytes>, kFrames> frames{};
    std::array<size_t, kFrames> sizes{};
    size_t count = 0;
    bool lost = false;  // a frame did not fit here: the test fails
    bool send(std::span<const std::byte> f) override {
      if (count == kFrames || f.size() > kFrameBytes) {
        lost = true;
        return false;
      }
      std::memcpy(frames[count].data(), f.data(), f.size());
      sizes[count++] = f.size();
      return true;
    }
    // Every frame sent of body type T, with its request id (allocates: call outside Forbidden).
    template <class T>
    std::vector<std::pair<uint32_t, T>> all() const {
      std::vector<std::pair<uint32_t, T>> v;
      for (size_t i = 0; i < count; ++i) {
        std::string why;
        auto p = parse_control(std::span<const std::byte>(frames[i].data(), sizes[i]), &why);
        EXPECT_TRUE(p) << "the subscriber sent a malformed frame: " << why;
        if (p && std::holds_alternative<T>(p->body)) v.emplace_back(p->request_id, std::get<T>(p->body));
      }
      return v;
    }
  };

  Source src;
  Channel ctl;
  std::deque<Bytes> replies;  // to the engine, at the next poll_control
  bool connected = false;

  Source& source() noexcept { return src; }
  Channel& control() noexcept { return ctl; }
  [[nodiscard]] media::SubscriberFit configure(const media::SubscriberFit& f) const { return f; }
  void start() {}
  size_t poll_control(media::ControlEvents& e, uint64_t now) {
    size_t work = 0;
    if (!connected) {
      connected = true;
      e.on_control_connected(now);
      ++work;
    }
    for (; !replies.empty(); ++work) {
      e.on_control_frame(replies.front(), now);
      replies.pop_front();
    }
    return work;
  }
  [[nodiscard]] std::string describe() const { return "scripted"; }
  [[nodiscard]] std::vector<media::CounterGroup> counter_groups() const { return {}; }
  [[nodiscard]] uint64_t lost_datagrams() const noexcept { return 0; }
};
static_assert(media::SubscriberMedium<ScriptedMedium>);

// Counts; records nothing that allocates.
struct CountingHandler {
  uint64_t messages = 0;
  void on_message(const Message&, const feed::Delivery&) noexcept { ++messages; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

class SubscriberNoAllocTest : public ::testing::Test {
 protected:
  using Agent = feed::SubscriberAgent<ScriptedMedium, CountingHandler>;
  static constexpr uint64_t kPollNs = feed::SubscriberAgentOptions{}.control_poll_ns;

  static feed::SubscriberConfig config() {
    auto c = sub_config();
    c.request_timeout_ns = kNsPerSec;  // no retry within a test: each request is sent once
    return c;
  }
  // The agent, subscribed (the subscription itself may allocate: it is not
  // the steady state), with nothing sent since.
  void start(const feed::SubscriberConfig& c = config(), uint16_t features = 0) {
    agent_ = std::make_unique<Agent>(medium_, c, h_);
    agent_->start();
    agent_->poll_control(now_);  // connects: the subscription goes out
    const auto subs = medium_.ctl.all<Subscribe>();
    ASSERT_EQ(subs.size(), 1u);
    medium_.replies.push_back(encode_control(subs[0].first, SubscribeAck{kSession, 0, 1, ctl::kAll, features}));
    now_ += kPollNs;
    agent_->do_work(now_);
    ASSERT_TRUE(agent_->subscriber().subscribed());
    medium_.ctl.count = 0;
  }
  // One duty cycle that takes `ds` and is no control round (the clock has
  // not moved since the last): the engine processes every datagram inside
  // the source's callback, where nothing may allocate, and sends nothing.
  void datagrams(std::initializer_list<Bytes> ds) {
    for (const auto& d : ds) medium_.src.queue.push_back(d);
    medium_.src.rx_ns = now_;
    const uint64_t rounds = agent_->control_rounds();
    t_failed_allocations = 0;
    EXPECT_EQ(agent_->do_work(now_), ds.size());
    EXPECT_EQ(t_failed_allocations, 0u) << "the engine allocated while it processed a datagram";
    EXPECT_EQ(agent_->control_rounds(), rounds) << "not a control round";
    EXPECT_EQ(medium_.ctl.count, 0u) << "a control frame was sent from inside the poll callback";
  }
  // The next control round, control_poll_ns later: no allocation in it either.
  void control_round() {
    now_ += kPollNs;
    const uint64_t rounds = agent_->control_rounds();
    t_failed_allocations = 0;
    {
      const Forbidden steady_state;
      agent_->do_work(now_);
    }
    EXPECT_EQ(t_failed_allocations, 0u) << "the control round allocated";
    EXPECT_EQ(agent_->control_rounds(), rounds + 1);
    EXPECT_FALSE(medium_.ctl.lost);
  }
  const feed::SubscriberCounters& counters() const { return agent_->subscriber().counters(); }

  uint64_t now_ = 1'000'000'000;
  Feed feed_;
  CountingHandler h_;
  ScriptedMedium medium_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(SubscriberNoAllocTest, AGapIsAskedForInTheControlRound) {
  start();
  for (int i = 0; i < 3; ++i) feed_.publish({feed_.add(1), feed_.add(2)});
  datagrams({feed_.dg(1), feed_.dg(3)});
  EXPECT_EQ(counters().gaps.get(), 1u);
  control_round();
  const auto r = medium_.ctl.all<RetransmitRequest>();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].second.session, kSession);
  EXPECT_EQ(r[0].second.from_seq, 2u);
  EXPECT_EQ(r[0].second.count, 1u);
}

// Beyond the window: first a claim (one query), then - confirmed - an
// overflow that gives the window up to a snapshot. A filter, so that the
// request names its instruments (from space the engine set aside for them).
TEST_F(SubscriberNoAllocTest, AFarAheadClaimAndAWindowOverflowAreAskedForInTheControlRound) {
  auto c = config();
  c.all_instruments = false;
  c.instruments = {1, 2};
  start(c);
  for (int i = 0; i < 70; ++i) feed_.publish({feed_.add(1), feed_.add(2)});
  datagrams({feed_.dg(1), feed_.dg(3), feed_.dg(66)});  // 64 slots from next (2): 66 is one beyond
  EXPECT_EQ(counters().claims_held.get(), 1u);
  control_round();
  const auto q = medium_.ctl.all<SessionQuery>();
  ASSERT_EQ(q.size(), 1u);
  medium_.ctl.count = 0;
  medium_.replies.push_back(encode_control(q[0].first, SessionStatus{kSession, 70, 1, false, 0}));
  now_ += kPollNs;
  agent_->do_work(now_);  // the answer (parsing it is no part of this test)
  ASSERT_EQ(counters().claims_confirmed.get(), 1u);
  medium_.ctl.count = 0;

  datagrams({feed_.dg(67)});
  EXPECT_EQ(counters().window_overflows.get(), 1u);
  EXPECT_TRUE(agent_->subscriber().in_snapshot());
  control_round();
  const auto s = medium_.ctl.all<SnapshotRequest>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].second.instruments.all);
  EXPECT_EQ(s[0].second.instruments.ids, (std::vector<uint32_t>{1, 2}));
}

TEST_F(SubscriberNoAllocTest, AnInstrumentGapIsAskedForInTheControlRound) {
  start();
  for (int i = 0; i < 2; ++i) feed_.publish({feed_.add(1), feed_.add(2)});
  (void)feed_.next_iseq(2);  // 3: never published
  Message gap = feed_.add(2);
  gap.instrument_seq = feed_.next_iseq(2);  // 4
  feed_.note_applied(gap);
  const Bytes d3 = DatagramBuilder(3, kSession, kChannel, kPubSender).add(gap).build();
  datagrams({feed_.dg(1), feed_.dg(2), d3});
  EXPECT_EQ(counters().instrument_gaps.get(), 1u);
  EXPECT_EQ(counters().instrument_recoveries.get(), 1u);
  control_round();
  const auto s = medium_.ctl.all<SnapshotRequest>();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].second.instruments.ids, std::vector<uint32_t>{2});
}

TEST_F(SubscriberNoAllocTest, ASessionClaimIsAskedAboutInTheControlRound) {
  start();
  feed_.publish({feed_.add(1)});
  Feed other;
  other.session = kSession + 1;
  other.publish({other.add(1)});
  datagrams({feed_.dg(1), other.dg(1)});
  EXPECT_EQ(counters().claims_held.get(), 1u);
  EXPECT_EQ(agent_->subscriber().session(), kSession) << "a claim never acts alone";
  control_round();
  EXPECT_EQ(medium_.ctl.all<SessionQuery>().size(), 1u);
}

// The steady state's other frame: a status report, every status_interval.
TEST_F(SubscriberNoAllocTest, StatusReportsAllocateNothing) {
  auto c = config();
  c.status_interval_ns = kPollNs;
  start(c);
  control_round();
  control_round();
  EXPECT_EQ(medium_.ctl.all<StatusReport>().size(), 2u);
}

// The application's latency goes with each status report, without
// allocating, to a publisher whose SubscribeAck says it reads it; never to
// one that does not (it would refuse the unknown frame), and not before the
// application measured anything.
TEST_F(SubscriberNoAllocTest, LatencyReportsGoOnlyToAPublisherThatReadsThem) {
  auto c = config();
  c.status_interval_ns = kPollNs;
  start(c, SubscribeAck::kAcceptsLatency);
  control_round();
  EXPECT_EQ(medium_.ctl.all<StatusReport>().size(), 1u);
  EXPECT_TRUE(medium_.ctl.all<LatencyReport>().empty()) << "nothing measured yet";
  agent_->subscriber().report_latency(LatencyReport{10, 1500, 9000, 12000});
  control_round();
  const auto lat = medium_.ctl.all<LatencyReport>();
  ASSERT_EQ(lat.size(), 1u);
  EXPECT_EQ(lat[0].second.count, 10u);
  EXPECT_EQ(lat[0].second.p50_ns, 1500u);
  EXPECT_EQ(lat[0].second.p99_ns, 9000u);
  EXPECT_EQ(lat[0].second.max_ns, 12000u);
}

TEST_F(SubscriberNoAllocTest, NoLatencyReportsToAPublisherThatDoesNotReadThem) {
  auto c = config();
  c.status_interval_ns = kPollNs;
  start(c, 0);
  agent_->subscriber().report_latency(LatencyReport{10, 1500, 9000, 12000});
  control_round();
  control_round();
  EXPECT_EQ(medium_.ctl.all<StatusReport>().size(), 2u);
  EXPECT_TRUE(medium_.ctl.all<LatencyReport>().empty());
}

}  // namespace
}  // namespace mdcast::test
