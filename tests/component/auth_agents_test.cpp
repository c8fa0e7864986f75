// The authenticated control plane through the agents and a real medium (the
// in-memory one): a PublisherAgent with secrets, one subscriber that knows
// its identity's secret and one that holds another. The first gets every
// message exactly once; the second is refused without ever sending a proof,
// and costs the others nothing. Real time on one thread, as agent_test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::test {
namespace {

using PubAgent = feed::PublisherAgent<media::mem::PublisherMedium>;

constexpr uint32_t kInstruments = 16;
constexpr uint64_t kMessages = 3000;
constexpr uint64_t kDeadlineNs = 60 * kNsPerSec;

std::string hex(uint8_t seed) {
  std::string s;
  for (int i = 0; i < 32; ++i) s += fmt::format("{:02x}", static_cast<uint8_t>(seed * 31 + i * 7 + 3));
  return s;
}

struct Counting {
  uint64_t delivered = 0;
  void on_message(const wire::Message&, const feed::Delivery&) noexcept { ++delivered; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

struct Sub {
  using Agent = feed::SubscriberAgent<media::mem::SubscriberMedium, Counting>;
  Sub(media::mem::PublisherMedium& pub, const std::string& identity, uint8_t seed) : medium(pub) {
    feed::SubscriberConfig c;
    c.books = {kInstruments, 1u << 14, 256};
    c.window_bytes = 4u << 20;
    c.request_timeout_ns = 20 * kNsPerMs;
    c.secret = std::make_shared<const feed::ClientSecret>(identity, *feed::SecretKey::from_hex(hex(seed)));
    agent = std::make_unique<Agent>(medium, c, h, nullptr, feed::SubscriberAgentOptions{0, IdleMode::kSpin, 64});
    agent->start();
  }
  media::mem::SubscriberMedium medium;
  Counting h;
  std::unique_ptr<Agent> agent;
};

TEST(AuthAgentsOverMem, TheRightSecretGetsEverythingTheWrongOneIsRefused) {
  feed::PublisherConfig pc;
  pc.max_datagram = 1472;
  pc.flush_interval_ns = 5 * kNsPerUs;
  pc.heartbeat_interval_ns = kNsPerMs;
  pc.retransmit_bytes = 8u << 20;
  pc.books = {kInstruments, 1u << 14, 256};
  feed::ControlConfig cc;
  cc.secrets = std::make_shared<const feed::PublisherSecrets>(
      feed::PublisherSecrets::parse("desk-a " + hex(1) + " all\n", "component.secrets"));
  media::mem::PublisherMedium pub_medium;
  PubAgent pub(pub_medium, pc, cc, {}, feed::PublisherAgentOptions{0});
  Sub good(pub_medium, "desk-a", 1);
  Sub wrong(pub_medium, "desk-a", 2);

  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  // Subscribe before publishing, so the right subscriber needs no recovery.
  while (pub.subscribed_clients() < 1 && now < deadline) {
    pub.do_work(now = monotonic_ns());
    good.agent->do_work(now);
    wrong.agent->do_work(now);
  }
  ASSERT_EQ(pub.subscribed_clients(), 1u);
  book::GeneratorConfig g;
  g.instruments = kInstruments;
  book::Generator gen(g);
  for (uint64_t i = 0; i < kMessages;) {
    wire::Message m;
    gen.next(m);
    while (pub.publish(m, now = monotonic_ns()) == feed::PublishResult::kBackPressured) pub.do_work(now);
    ++i;
    // A datagram per message, whatever the machine's speed: the wrong
    // subscriber's counts below need more of them than it holds awaiting a
    // key (SubscriberCore::kAwaitingKey, 512), and the flush timer alone packs
    // more per datagram on a fast machine.
    pub.flush(now);
    pub.do_work(now);
    good.agent->do_work(now);
    wrong.agent->do_work(now);
  }
  while (!pub.end_session(now)) pub.do_work(now = monotonic_ns());
  while (!good.agent->finished() && now < deadline) {
    pub.do_work(now = monotonic_ns());
    good.agent->do_work(now);
    wrong.agent->do_work(now);
  }
  ASSERT_TRUE(good.agent->finished());
  EXPECT_EQ(good.h.delivered, kMessages);
  const auto& gs = good.agent->subscriber();
  EXPECT_TRUE(gs.subscribed());
  EXPECT_TRUE(gs.publisher_proven());
  EXPECT_EQ(gs.counters().auth_failures.get(), 0u);
  EXPECT_EQ(gs.counters().gaps.get(), 0u);
  EXPECT_EQ(gs.counters().bad_tags.get(), 0u);
  EXPECT_EQ(gs.counters().untagged.get(), 0u);
  EXPECT_TRUE(pub.core().tagged()) << "a feed with secrets tags its data";

  const auto& ws = wrong.agent->subscriber();
  EXPECT_FALSE(ws.subscribed());
  EXPECT_TRUE(ws.control_peer_failed()) << "its peer could not prove itself: a medium that picked it leaves it";
  EXPECT_NE(ws.peer_unproven_since(), 0u) << "a runtime ends it as refused after subscriber.wait";
  EXPECT_FALSE(ws.publisher_proven());
  EXPECT_NE(ws.last_error().find("publisher could not prove it knows the secret for identity 'desk-a'"),
            std::string::npos)
      << ws.last_error();
  EXPECT_EQ(pub.subscribed_clients(), 1u);
  const auto& pcn = pub.control().counters();
  EXPECT_EQ(pcn.auth_ok.get(), 1u);
  EXPECT_EQ(pcn.auth_failed.get(), 0u) << "the wrong subscriber never sent a proof to be refused";
  // It still hears the data plane (the bus, like multicast, reaches every
  // member), but without the data key it acts on none of it.
  EXPECT_EQ(wrong.h.delivered, 0u);
  EXPECT_GT(ws.counters().unverifiable.get(), 0u);
}

// A forger on the data plane that knows the session and the sender id (one
// sniffed datagram tells both) races the publisher for every next sequence,
// untagged and with made-up tags. With data authentication nothing it sends
// is read past the tag: every real message is delivered once, in order, with
// no claim, no gap and no snapshot, and every forged datagram is counted.
TEST(AuthAgentsOverMem, ForgedDatagramsOnATaggedFeedAreCountedAndCostNothing) {
  feed::PublisherConfig pc;
  pc.max_datagram = 1472;
  pc.flush_interval_ns = 5 * kNsPerUs;
  pc.heartbeat_interval_ns = kNsPerMs;
  pc.retransmit_bytes = 8u << 20;
  pc.books = {kInstruments, 1u << 14, 256};
  feed::ControlConfig cc;
  cc.secrets = std::make_shared<const feed::PublisherSecrets>(
      feed::PublisherSecrets::parse("desk-a " + hex(1) + " all\n", "component.secrets"));
  media::mem::PublisherMedium pub_medium;
  PubAgent pub(pub_medium, pc, cc, {}, feed::PublisherAgentOptions{0});
  Sub good(pub_medium, "desk-a", 1);

  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + kDeadlineNs;
  while (pub.subscribed_clients() < 1 && now < deadline) {
    pub.do_work(now = monotonic_ns());
    good.agent->do_work(now);
  }
  ASSERT_EQ(pub.subscribed_clients(), 1u);

  book::GeneratorConfig g;
  g.instruments = kInstruments;
  book::Generator gen(g);
  book::Generator forger_gen(g);  // its own: the publisher's input stays whole
  std::array<std::byte, 1472> forged{};
  uint64_t untagged = 0, wrong_tag = 0;
  // Ahead of the publisher by 1..4 sequences, the same session and sender.
  auto forge = [&](bool tagged, uint64_t ahead) {
    wire::Message m;
    forger_gen.next(m);
    const size_t body = wire::encoded_size(m);
    wire::encode(m, forged.data() + wire::dgram::kHeaderSize);
    wire::DatagramHeader h;
    h.flags = tagged ? wire::kFlagTag : 0;
    h.channel = pc.channel;
    h.message_count = 1;
    h.session = pub.core().session();
    h.sender = static_cast<uint16_t>(pc.sender_id);
    h.sequence = pub.core().last_committed() + ahead;
    h.send_time_ns = now;
    h.length = static_cast<uint16_t>(wire::dgram::kHeaderSize + body + (tagged ? wire::dgram::kTagSize : 0));
    wire::write_header(forged.data(), h);
    if (tagged) {
      wire::DataKey guess{};
      guess[0] = static_cast<std::byte>(ahead);
      wire::seal_tag({forged.data(), h.length}, guess);
    }
    pub_medium.bus().send({forged.data(), h.length}, now);
    ++(tagged ? wrong_tag : untagged);
  };
  for (uint64_t i = 0; i < kMessages;) {
    wire::Message m;
    gen.next(m);
    while (pub.publish(m, now = monotonic_ns()) == feed::PublishResult::kBackPressured) pub.do_work(now);
    ++i;
    forge(i % 2 == 0, 1 + i % 4);
    pub.do_work(now);
    good.agent->do_work(now);
  }
  while (!pub.end_session(now)) pub.do_work(now = monotonic_ns());
  while (!good.agent->finished() && now < deadline) {
    pub.do_work(now = monotonic_ns());
    good.agent->do_work(now);
  }
  ASSERT_TRUE(good.agent->finished());
  EXPECT_EQ(good.h.delivered, kMessages);
  const auto& c = good.agent->subscriber().counters();
  EXPECT_EQ(c.untagged.get(), untagged);
  EXPECT_EQ(c.bad_tags.get(), wrong_tag);
  EXPECT_EQ(c.gaps.get(), 0u);
  EXPECT_EQ(c.claims_held.get(), 0u);
  EXPECT_EQ(c.forged_runs.get(), 0u);
  EXPECT_EQ(c.snapshots_requested.get(), 0u);
  EXPECT_EQ(c.session_changes.get(), 0u);
}

}  // namespace
}  // namespace mdcast::test
