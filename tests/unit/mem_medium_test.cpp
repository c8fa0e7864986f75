// The in-memory medium on its own: bounded queues that overflow when the
// reader is slow, receive times from the injected clock, the control hub's
// connection events, and its halves as an agent sees them.
#include "mdcast/media/mem/mem_medium.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mdcast/core/error.hpp"

namespace mdcast::media::mem {
namespace {

using Bytes = std::vector<std::byte>;

Bytes bytes(uint8_t tag, size_t n = 64) { return Bytes(n, std::byte{tag}); }

std::vector<Bytes> take(Endpoint& e, size_t budget, std::vector<uint64_t>* rx = nullptr) {
  std::vector<Bytes> out;
  e.poll(
      [&](std::span<const std::byte> d, uint64_t t) noexcept {
        out.emplace_back(d.begin(), d.end());
        if (rx) rx->push_back(t);
      },
      budget);
  return out;
}

TEST(MemEndpoint, QueuesInOrderWithinTheBudgetStampedByTheInjectedClock) {
  uint64_t now = 5000;
  Endpoint e({8, 256, &now});
  for (uint8_t i = 1; i <= 5; ++i) e.push(bytes(i));
  EXPECT_EQ(e.depth(), 5u);
  std::vector<uint64_t> rx;
  auto got = take(e, 3, &rx);
  ASSERT_EQ(got.size(), 3u);
  for (uint8_t i = 0; i < 3; ++i) EXPECT_EQ(got[i], bytes(i + 1));
  EXPECT_EQ(rx, (std::vector<uint64_t>{5000, 5000, 5000}));
  now = 7000;
  rx.clear();
  got = take(e, 100, &rx);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], bytes(5));
  EXPECT_EQ(rx[0], 7000u);
  EXPECT_TRUE(take(e, 100).empty());
  EXPECT_FALSE(e.block(1000)) << "nothing to sleep on";
}

TEST(MemEndpoint, AFullQueueDropsAndCountsWhatASlowReaderMissed) {
  Endpoint e({4, 256, nullptr});
  for (uint8_t i = 1; i <= 10; ++i) e.push(bytes(i));
  const auto& c = e.counters();
  EXPECT_EQ(c.offered.get(), 10u);
  EXPECT_EQ(c.queued.get(), 4u);
  EXPECT_EQ(c.overflowed.get(), 6u);
  EXPECT_EQ(e.lost_datagrams(), 6u);
  const auto got = take(e, 100);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[3], bytes(4)) << "the oldest stay, the newest are lost";
  // The queue wraps around.
  for (uint8_t i = 20; i < 26; ++i) {
    e.push(bytes(i));
    ASSERT_EQ(take(e, 1).at(0), bytes(i));
  }
}

TEST(MemEndpoint, OversizedDatagramsAreDroppedAndClearDiscards) {
  Endpoint e({4, 128, nullptr});
  e.push(bytes(1, 129));
  e.push(bytes(2, 128));
  EXPECT_EQ(e.counters().oversized.get(), 1u);
  EXPECT_EQ(e.depth(), 1u);
  e.clear();
  EXPECT_EQ(e.depth(), 0u);
  EXPECT_EQ(e.counters().discarded.get(), 1u);
  EXPECT_TRUE(take(e, 10).empty());
}

TEST(MemBus, CopiesToEveryAttachedEndpoint) {
  Bus bus;
  Endpoint& a = bus.attach();
  Endpoint& b = bus.attach({2, 256, nullptr});
  const Bytes d = bytes(9);
  EXPECT_EQ(bus.send(d, 1), SendResult::kSent);
  EXPECT_EQ(bus.send_unsequenced(d), SendResult::kSent);
  EXPECT_EQ(bus.send(d, 2), SendResult::kSent) << "a full endpoint never pushes back";
  EXPECT_EQ(a.depth(), 3u);
  EXPECT_EQ(b.depth(), 2u);
  EXPECT_EQ(bus.counters().datagrams.get(), 2u);
  EXPECT_EQ(bus.counters().heartbeats.get(), 1u);
  bus.detach(b);
  EXPECT_EQ(bus.endpoints(), 1u);
}

struct Service : ControlHandler {
  std::vector<std::string> log;
  bool refuse = false;
  void on_connect(ClientId c, uint64_t) override { log.push_back("connect " + std::to_string(c)); }
  void on_disconnect(ClientId c) override { log.push_back("disconnect " + std::to_string(c)); }
  bool on_frame(ClientId c, std::span<const std::byte> f, uint64_t, ReplySink& out) override {
    log.push_back("frame " + std::to_string(c) + " " + std::to_string(f.size()));
    if (refuse) return false;
    out.send(c, Bytes(f.begin(), f.end()));  // an echo
    return true;
  }
};

struct Events : ControlEvents {
  std::vector<std::string> log;
  void on_control_connected(uint64_t) noexcept override { log.emplace_back("connected"); }
  void on_control_disconnected() noexcept override { log.emplace_back("disconnected"); }
  void on_control_frame(std::span<const std::byte> f, uint64_t) noexcept override {
    log.push_back("frame " + std::to_string(f.size()));
  }
  void on_retransmitted(uint32_t, uint64_t, std::span<const std::span<const std::byte>>, uint64_t) noexcept override {}
};

TEST(MemControl, ServiceHearsOfEachConnectionOnceAndRepliesComeBack) {
  PublisherMedium pub;
  Service svc;
  Events ev;
  {
    SubscriberMedium sub(pub);
    EXPECT_EQ(pub.clients(), 1u);
    EXPECT_EQ(sub.poll_control(ev, 1), 1u);
    EXPECT_EQ(ev.log, std::vector<std::string>{"connected"});
    EXPECT_TRUE(sub.control().send(bytes(1, 10)));
    EXPECT_TRUE(sub.control().send(bytes(1, 20)));
    EXPECT_EQ(pub.poll_control(svc, 2), 3u);
    EXPECT_EQ(pub.poll_control(svc, 3), 0u) << "told once";
    EXPECT_EQ(svc.log, (std::vector<std::string>{"connect 1", "frame 1 10", "frame 1 20"}));
    EXPECT_EQ(sub.poll_control(ev, 4), 2u);
    EXPECT_EQ(ev.log, (std::vector<std::string>{"connected", "frame 10", "frame 20"}));
  }
  EXPECT_EQ(pub.clients(), 0u) << "a subscriber medium leaves with its link";
  pub.poll_control(svc, 5);
  pub.poll_control(svc, 6);
  EXPECT_EQ(svc.log.back(), "disconnect 1");
  EXPECT_EQ(svc.log.size(), 4u);
  EXPECT_EQ(pub.bus().endpoints(), 0u);
}

TEST(MemControl, ACutOffClientSeesTheDisconnect) {
  PublisherMedium pub;
  SubscriberMedium sub(pub);
  Service svc;
  svc.refuse = true;
  Events ev;
  sub.poll_control(ev, 1);
  sub.control().send(bytes(1, 10));
  pub.poll_control(svc, 2);
  EXPECT_EQ(svc.log, (std::vector<std::string>{"connect 1", "frame 1 10", "disconnect 1"}));
  EXPECT_FALSE(sub.control().send(bytes(1, 10))) << "nothing goes over a dead link";
  sub.poll_control(ev, 3);
  EXPECT_EQ(ev.log, (std::vector<std::string>{"connected", "disconnected"}));
  EXPECT_EQ(pub.clients(), 0u);
}

TEST(MemControl, ARestartedPublisherIsAReconnect) {
  PublisherMedium pub;
  SubscriberMedium sub(pub);
  Service svc;
  Events ev;
  sub.poll_control(ev, 1);
  pub.poll_control(svc, 1);
  pub.hub().reset_service();
  Service fresh;
  pub.poll_control(fresh, 2);
  EXPECT_EQ(fresh.log, std::vector<std::string>{"connect 1"});
  sub.poll_control(ev, 2);
  EXPECT_EQ(ev.log, (std::vector<std::string>{"connected", "disconnected", "connected"}));
}

TEST(MemControl, DroppedRequestsAreCounted) {
  PublisherMedium pub;
  SubscriberMedium sub(pub, {{}, 1.0});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(sub.control().send(bytes(1, 10))) << "lost in transit, not refused";
  Service svc;
  pub.poll_control(svc, 1);
  EXPECT_EQ(svc.log, std::vector<std::string>{"connect 1"});
  EXPECT_EQ(pub.hub().counters().requests_dropped.get(), 5u);
}

TEST(MemMedium, ConfigureAndStart) {
  PublisherMedium pub({1472, 7});
  media::PublisherFit pc;
  pc.max_datagram = 0;
  EXPECT_EQ(pub.configure(pc).max_datagram, 1472u);
  pc.max_datagram = 1473;
  EXPECT_THROW((void)pub.configure(pc), Error);
  SubscriberMedium sub(pub, {{16, 2048, nullptr}, 0});
  media::SubscriberFit sc;
  sc.max_datagram = 0;
  EXPECT_EQ(sub.configure(sc).max_datagram, 2048u);
  const Bytes d = bytes(3);
  pub.sink().send(d, 1);
  sub.start();
  EXPECT_EQ(sub.endpoint().depth(), 0u) << "the reader starts at the live edge";
  EXPECT_EQ(pub.counter_groups().size(), 2u);
  EXPECT_EQ(sub.counter_groups().at(0).prefix, "mem");
  EXPECT_FALSE(pub.describe().empty());
  EXPECT_FALSE(sub.describe().empty());
}

}  // namespace
}  // namespace mdcast::media::mem
