// Verbs medium against a real RDMA device (one device: Soft-RoCE on a dummy
// netdev in the VM). In-process tests of the pieces, and the multi-process
// feed. Without a device every test skips and says why.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>

#include <functional>
#include <optional>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "mdcast/wire/datagram.hpp"
#include "verbs_feed_scenario.hpp"
#include "verbs_proc.hpp"
#include "verbs_test_util.hpp"

namespace mv = mdcast::media::verbs;

namespace mdcast::test::verbs {
namespace {

mv::Options base_options(const std::string& group, uint16_t port) {
  mv::Options o;
  o.local_ip = local_ip();
  o.group_ip = group;
  o.control_port = port;
  o.retransmit_bytes = 4u << 20;
  o.rate = 5'000;
  o.log = [](std::string_view s) { std::cout << "    [verbs] " << s << '\n'; };
  return o;
}

TEST(VerbsDevice, ReportsMtuAndMulticastLimits) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.1", 7600);
  mv::VerbsSink sink(o);
  const auto& d = sink.device();
  std::cout << "  " << d.describe() << ", max_datagram " << sink.max_datagram() << ", max_inline "
            << sink.max_inline() << ", send-only join " << sink.send_only() << '\n';
  EXPECT_GT(d.max_mcast_grp, 0);
  EXPECT_GT(d.max_mcast_qp_attach, 0);
  EXPECT_EQ(sink.max_datagram(), std::min<size_t>(d.mtu_bytes, wire::kMaxDatagram));
  EXPECT_TRUE(sink.send_only()) << "Soft-RoCE supports send-only joins";
  EXPECT_FALSE(mv::local_addresses().empty());
}

// The send-only publisher hears nothing of its own while a member hears
// everything; a full-member publisher does hear itself - proving the
// loopback counter counts what it claims to.
TEST(VerbsLoopback, SendOnlyPublisherHearsNothingFullMemberHearsItself) {
  MDCAST_REQUIRE_RDMA();
  constexpr int kN = 20;
  for (const auto mode : {mv::JoinMode::kSendOnly, mv::JoinMode::kFull}) {
    const bool send_only = mode == mv::JoinMode::kSendOnly;
    SCOPED_TRACE(send_only ? "send-only publisher" : "full-member publisher");
    auto o = base_options(send_only ? "239.77.1.2" : "239.77.1.3", 7600);
    mv::VerbsReceiver rx(o);
    o.join = mode;
    mv::VerbsSink sink(o);
    size_t got = 0;
    for (int i = 1; i <= kN; ++i) {
      const auto d = header_datagram(static_cast<uint64_t>(i));
      ASSERT_EQ(sink.send(d, static_cast<uint64_t>(i)), feed::SendResult::kSent);
    }
    auto step = [&] {
      got += rx.poll([](std::span<const std::byte>, std::optional<uint32_t>) {});
      sink.reap();
    };
    EXPECT_TRUE(poll_until([&] { return got >= kN && (send_only || sink.counters().loopback_received.get() >= kN); },
                           step, 10'000));
    // Let stragglers arrive before judging "nothing".
    poll_until([] { return false; }, step, 300);
    EXPECT_EQ(got, size_t{kN});
    EXPECT_EQ(rx.counters().imm_mismatch.get(), 0u);
    EXPECT_EQ(sink.counters().loopback_received.get(), send_only ? 0u : uint64_t{kN});
    std::cout << fmt::format("  {} publisher: member received {}, publisher's own QP received {}\n",
                             send_only ? "send-only" : "full-member", got, sink.counters().loopback_received.get());
  }
}

// Raw data path: the wrong QKey is dropped by the device; the right one gets all.
TEST(VerbsQKey, ReceiverWithWrongQKeyGetsNothing) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.4", 7600);
  mv::VerbsReceiver right(o);
  auto wrong_o = o;
  wrong_o.qkey = o.qkey + 1;
  mv::VerbsReceiver wrong(wrong_o);
  mv::VerbsSink sink(o);
  constexpr int kN = 50;
  for (int i = 1; i <= kN; ++i) {
    const auto d = header_datagram(static_cast<uint64_t>(i));
    while (sink.send(d, static_cast<uint64_t>(i)) != feed::SendResult::kSent) sink.reap();
  }
  size_t r = 0, w = 0;
  auto step = [&] {
    r += right.poll([](auto, auto) {});
    w += wrong.poll([](auto, auto) {});
    sink.reap();
  };
  EXPECT_TRUE(poll_until([&] { return r >= kN; }, step, 10'000));
  poll_until([] { return false; }, step, 300);
  EXPECT_EQ(r, size_t{kN});
  EXPECT_EQ(w, 0u);
  EXPECT_EQ(wrong.counters().completions.get(), 0u);
  EXPECT_EQ(wrong.counters().datagrams.get(), 0u);
  std::cout << fmt::format("  qkey 0x{:x}: {} datagrams; qkey 0x{:x}: {} datagrams, {} completions\n", o.qkey, r,
                           wrong_o.qkey, w, wrong.counters().completions.get());
}

// An in-process publisher: medium, agent (engine + control service), generator.
struct PubWorld {
  Scenario sc;
  mv::PublisherMedium medium;
  feed::PublisherAgent<mv::PublisherMedium> agent;
  feed::Publisher<mv::VerbsSink>& pub = agent.publisher();
  feed::ControlService& svc = agent.control();
  book::Generator gen;
  uint64_t published = 0;

  PubWorld(const mv::Options& o, const Scenario& s, const feed::ControlConfig& ctl = {})
      : sc(s), medium(o), agent(medium, publisher_config(s, medium.max_datagram()), ctl), gen(generator_config(s)) {}

  void poll() {
    const uint64_t now = monotonic_ns();
    pub.poll(now);
    agent.poll_control(now);
  }
  // Publishes n more messages, running `others` (subscribers) in between.
  void publish(uint64_t n, const std::function<void()>& others) {
    wire::Message m;
    for (uint64_t i = 0; i < n; ++i) {
      gen.next(m);
      while (agent.publish(m, monotonic_ns()) == feed::PublishResult::kBackPressured) {
        poll();
        others();
      }
      if (++published % 32 == 0) {
        poll();
        others();
      }
    }
    agent.flush(monotonic_ns());
  }
  uint32_t subscribed() const { return static_cast<uint32_t>(agent.subscribed_clients()); }
};

struct SubWorld {
  mv::SubscriberMedium medium;
  Recorder rec;
  feed::SubscriberAgent<mv::SubscriberMedium, Recorder> agent;
  feed::Subscriber<Recorder>& sub = agent.subscriber();
  SubWorld(const mv::Options& o, const Scenario& sc)
      : medium(o), rec(book_config(sc).max_instruments), agent(medium, subscriber_config(sc, 0), rec) {}
  void poll() {
    const uint64_t now = monotonic_ns();
    agent.do_work(now);
    agent.poll_control(now);
  }
};

// Engine level: a subscriber on the wrong QKey receives no datagram at all;
// its counters say so, and the medium reports the silence in words. (It still
// recovers what the publisher announced at subscribe time, by RDMA READ.)
TEST(VerbsQKey, WrongQKeySubscriberGetsNothingAndSaysSo) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.5", 7605);
  Scenario sc{11, 4000, 20};
  PubWorld pw(o, sc);
  auto so = o;
  so.control_ip = o.local_ip;
  SubWorld good(so, sc);
  ASSERT_TRUE(poll_until([&] { return pw.subscribed() == 1; }, [&] { pw.poll(); good.poll(); }, 20'000));
  pw.publish(2000, [&] { good.poll(); });
  auto bo = so;
  bo.qkey = so.qkey + 1;
  SubWorld bad(bo, sc);
  auto both = [&] {
    pw.poll();
    good.poll();
    bad.poll();
  };
  ASSERT_TRUE(poll_until([&] { return pw.subscribed() == 2; }, both, 20'000));
  pw.publish(2000, [&] { good.poll(); bad.poll(); });
  uint64_t last_end = 0;
  const bool done = poll_until(
      [&] {
        return good.sub.session_ended() && good.sub.caught_up() && bad.medium.data_silent() && bad.sub.caught_up();
      },
      [&] {
        both();
        if (monotonic_ns() - last_end > 50 * kNsPerMs) {
          (void)pw.pub.end_session(monotonic_ns());
          last_end = monotonic_ns();
        }
      },
      60'000);
  EXPECT_TRUE(done);
  EXPECT_EQ(verify(replay(sc), good.rec, good.sub.books()), "");
  const auto& rx = bad.medium.receiver().counters();
  EXPECT_EQ(rx.completions.get(), 0u);
  EXPECT_EQ(rx.datagrams.get(), 0u);
  EXPECT_EQ(bad.sub.counters().datagrams_received.get(), 0u);
  EXPECT_TRUE(bad.medium.data_silent());
  EXPECT_GT(bad.medium.control().counters().read_validated.get(), 0u);
  std::cout << fmt::format(
      "  good (qkey 0x{:x}): {} datagrams, {} messages; wrong (qkey 0x{:x}): {} completions, {} datagrams, engine "
      "datagrams_received {}, data_silent {}, recovered by READ {} (publisher at {})\n",
      so.qkey, good.medium.receiver().counters().datagrams.get(), good.rec.delivered, bo.qkey,
      rx.completions.get(), rx.datagrams.get(), bad.sub.counters().datagrams_received.get(),
      bad.medium.data_silent(), bad.medium.control().counters().read_validated.get(),
      pw.pub.core().last_committed());
}

// Collects what a control client hands to the engine.
struct Seen {
  bool connected = false, disconnected = false;
  std::vector<wire::ControlFrame> frames;
  std::vector<std::vector<std::byte>> raw;  // parsed views point into these
  size_t count(wire::CtlType t) const {
    size_t n = 0;
    for (const auto& r : raw)
      if (static_cast<wire::CtlType>(r[wire::ctl::kType]) == t) ++n;
    return n;
  }
};
void drain(mv::VerbsControlClient& c, Seen& s) {
  c.poll(monotonic_ns());
  mv::VerbsControlClient::Inbound in;
  while (c.next(in)) {
    if (in.kind == mv::VerbsControlClient::Inbound::Kind::kConnected) s.connected = true;
    if (in.kind == mv::VerbsControlClient::Inbound::Kind::kDisconnected) s.disconnected = true;
    if (in.kind == mv::VerbsControlClient::Inbound::Kind::kFrame) s.raw.push_back(std::move(in.frame));
  }
}

std::vector<std::byte> subscribe_frame(uint32_t rid) {
  wire::Subscribe s;
  s.channel = 1;
  return wire::encode_control(rid, s);
}

// Connects without the mdcast hello: the server must reject it. Polls `step`
// (the publisher) while it waits, everything in one thread.
rdma_cm_event_type connect_without_hello(const std::string& ip, uint16_t port, const std::function<void()>& step) {
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_cm_id* id = nullptr;
  rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP);
  (void)fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &dst.sin_addr);
  rdma_cm_event_type last = RDMA_CM_EVENT_ADDR_ERROR;
  auto next = [&]() -> rdma_cm_event_type {
    rdma_cm_event* ev = nullptr;
    const uint64_t deadline = monotonic_ns() + 10 * kNsPerSec;
    while (rdma_get_cm_event(ch, &ev) != 0) {
      if (monotonic_ns() > deadline) return RDMA_CM_EVENT_CONNECT_ERROR;
      step();
    }
    const auto t = ev->event;
    rdma_ack_cm_event(ev);
    return t;
  };
  if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) == 0 &&
      (last = next()) == RDMA_CM_EVENT_ADDR_RESOLVED && rdma_resolve_route(id, 2000) == 0 &&
      (last = next()) == RDMA_CM_EVENT_ROUTE_RESOLVED) {
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.cap = {1, 1, 1, 1, 0};
    if (rdma_create_qp(id, nullptr, &qa) == 0) {
      rdma_conn_param p{};
      p.retry_count = 1;
      if (rdma_connect(id, &p) == 0) last = next();
      rdma_destroy_qp(id);
    }
  }
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return last;
}

TEST(VerbsControl, HostileClientsAreCutOffOthersUnaffected) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.6", 7606);
  Scenario sc{12, 3000, 20};
  PubWorld pw(o, sc);
  pw.publish(3000, [] {});
  auto co = o;
  co.control_ip = o.local_ip;
  co.rdma_read = false;  // these clients talk RC only
  mv::VerbsControlClient good(co), garbage(co), pest(co);
  Seen g, x, p;
  auto step = [&] {
    pw.poll();
    drain(good, g);
    // Once cut, the hostile ones are left alone: polled, they would reconnect
    // (clients do, so subscribers survive a publisher restart).
    if (!x.disconnected) drain(garbage, x);
    if (!p.disconnected) drain(pest, p);
  };
  ASSERT_TRUE(poll_until([&] { return g.connected && x.connected && p.connected; }, step, 20'000));

  // A frame whose length field is below the header size: the stream cannot
  // be resynchronised. And a pest sending well-formed nonsense until the
  // service gives up on it (max_errors_per_client).
  std::vector<std::byte> junk(16, std::byte{0});
  junk[0] = std::byte{3};
  ASSERT_TRUE(garbage.send(junk));
  for (uint32_t i = 0; i < 40; ++i)
    ASSERT_TRUE(pest.send(wire::encode_control(100 + i, wire::RetransmitRequest{4242, 1, 5})));
  ASSERT_TRUE(good.send(subscribe_frame(1)));
  ASSERT_TRUE(poll_until([&] { return x.disconnected && p.disconnected && g.count(wire::CtlType::kSubscribeAck) == 1; },
                         step, 20'000));
  EXPECT_GE(x.count(wire::CtlType::kError), 1u) << "the garbage client is told why before it is cut";
  EXPECT_GE(p.count(wire::CtlType::kError), 32u);
  EXPECT_EQ(pw.medium.server().counters().cut_malformed.get(), 2u);

  // A connection without the mdcast hello is refused outright.
  EXPECT_EQ(connect_without_hello(o.local_ip, o.control_port, [&] { step(); }), RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(pw.medium.server().counters().rejected.get(), 1u);

  // The well-behaved client is unaffected: it is served.
  ASSERT_TRUE(good.send(wire::encode_control(2, wire::RetransmitRequest{pw.pub.core().session(), 1, 10})));
  ASSERT_TRUE(poll_until([&] { return g.count(wire::CtlType::kRetransmitReply) == 1; }, step, 20'000));
  for (const auto& r : g.raw) {
    auto f = wire::parse_control(r, nullptr);
    ASSERT_TRUE(f);
    if (auto* rep = std::get_if<wire::RetransmitReply>(&f->body)) {
      EXPECT_EQ(rep->status, wire::RetransmitStatus::kOk);
      EXPECT_EQ(rep->datagrams.size(), 10u);
    }
  }
  EXPECT_FALSE(g.disconnected);
  EXPECT_EQ(pw.svc.clients(), 1u);
  const auto& sc_ = pw.medium.server().counters();
  std::cout << fmt::format("  server: {} connect requests, {} rejected, {} cut (malformed), {} frames in; good "
                           "client got {} frames; garbage got {} error(s), pest {} error(s)\n",
                           sc_.connect_requests.get(), sc_.rejected.get(), sc_.cut_malformed.get(),
                           sc_.frames_in.get(), g.raw.size(), x.count(wire::CtlType::kError),
                           p.count(wire::CtlType::kError));
}

TEST(VerbsControl, SlowClientIsCutOffPublisherNeverWaits) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.7", 7607);
  o.max_client_backlog = 2u << 20;
  Scenario sc{13, 8000, 20};
  PubWorld pw(o, sc);
  pw.publish(8000, [] {});
  auto co = o;
  co.control_ip = o.local_ip;
  co.rdma_read = false;
  auto slow_o = co;
  slow_o.send_slots = 80;  // its 64 requests all leave without it ever polling again
  mv::VerbsControlClient slow(slow_o), fast(co);
  Seen s, f;
  ASSERT_TRUE(poll_until([&] { return s.connected && f.connected; },
                         [&] { pw.poll(); drain(slow, s); drain(fast, f); }, 20'000));
  ASSERT_TRUE(slow.send(subscribe_frame(1)));
  ASSERT_TRUE(fast.send(subscribe_frame(1)));
  ASSERT_TRUE(poll_until([&] { return s.count(wire::CtlType::kSubscribeAck) && f.count(wire::CtlType::kSubscribeAck); },
                         [&] { pw.poll(); drain(slow, s); drain(fast, f); }, 20'000));
  // The slow client asks for far more than it will ever read (64 replies of
  // up to max_reply_bytes) and stops reading altogether. The publisher must
  // cut it, not wait for it.
  const uint64_t session = pw.pub.core().session();
  for (uint32_t i = 0; i < 64; ++i)
    ASSERT_TRUE(slow.send(wire::encode_control(10 + i, wire::RetransmitRequest{session, 1, 2000})));
  ASSERT_TRUE(fast.send(wire::encode_control(2, wire::RetransmitRequest{session, 1, 20})));
  ASSERT_EQ(slow.outbound_backlog(), 0u) << "every request left at once (one send slot each)";
  const uint64_t t0 = monotonic_ns();
  ASSERT_TRUE(poll_until([&] { return pw.medium.server().counters().cut_slow.get() == 1; },
                         [&] { pw.poll(); drain(fast, f); }, 30'000));
  const double cut_after_ms = static_cast<double>(monotonic_ns() - t0) / 1e6;
  // The publisher kept publishing meanwhile, and the fast client is served.
  pw.publish(500, [&] { drain(fast, f); });
  ASSERT_TRUE(fast.send(wire::encode_control(3, wire::RetransmitRequest{session, 30, 5})));
  ASSERT_TRUE(poll_until([&] { return f.count(wire::CtlType::kRetransmitReply) == 2; },
                         [&] { pw.poll(); drain(fast, f); }, 20'000));
  EXPECT_FALSE(f.disconnected);
  EXPECT_EQ(pw.svc.clients(), 1u);
  std::cout << fmt::format("  slow client cut after {:.0f} ms (backlog limit {} bytes); fast client served {} "
                           "replies; publisher at sequence {}\n",
                           cut_after_ms, o.max_client_backlog, f.count(wire::CtlType::kRetransmitReply),
                           pw.pub.core().last_committed());
}

// Anyone on the fabric can send to the group (the QKey is in every packet):
// a rogue sender forges another session's heartbeats, ends of session,
// far-ahead sequences and 2^40 tails beside the real feed, over the real
// medium. The subscriber delivers the whole feed exactly, never resets, never
// ends early, and counts the forgeries it refuted.
TEST(VerbsForgery, RogueSenderOnTheGroupNeverActsAlone) {
  MDCAST_REQUIRE_RDMA();
  auto o = base_options("239.77.1.6", 7612);
  Scenario sc{13, 6000, 20};
  PubWorld pw(o, sc);
  auto so = o;
  so.control_ip = o.local_ip;
  SubWorld good(so, sc);
  mv::VerbsSink rogue(o);
  auto fcfg = publisher_config(sc, pw.medium.max_datagram());
  fcfg.session = pw.agent.core().session();
  fcfg.retransmit_bytes = 1u << 20;
  feed::PublisherCore forger(fcfg);  // knows the session: it is in every datagram
  uint64_t forged = 0;
  auto forge = [&] {
    const auto& core = pw.agent.core();
    if (core.last_committed() == 0) return;
    const auto real = core.datagram(core.last_committed());
    std::vector<std::byte> d(real.begin(), real.end());
    const uint64_t kind = forged % 4;
    wire::DatagramHeader h = wire::read_header(d.data());
    if (kind == 0) {
      h.session = core.session() ^ 1;
    } else if (kind == 2) {
      h.sequence = (uint64_t{1} << 40) + forged;
    } else {
      const auto hb = forger.build_heartbeat(monotonic_ns(), kind == 1);
      d.assign(hb.begin(), hb.end());
      h = wire::read_header(d.data());
      h.sequence = kind == 1 ? core.last_committed() : uint64_t{1} << 40;
      store_le<uint64_t>(d.data() + wire::dgram::kHeaderSize + wire::heartbeat::kLastSeq, h.sequence);
    }
    wire::write_header(d.data(), h);
    if (h.flags & wire::kFlagCrc) wire::seal_crc(d);
    for (int tries = 0; rogue.send_unsequenced(d) != feed::SendResult::kSent && tries < 1000; ++tries) rogue.reap();
    ++forged;
  };
  ASSERT_TRUE(poll_until([&] { return pw.subscribed() == 1; }, [&] { pw.poll(); good.poll(); }, 20'000));
  uint64_t round = 0;
  pw.publish(sc.messages, [&] {
    good.poll();
    if (++round % 4 == 0) forge();
  });
  uint64_t last_end = 0;
  const bool done = poll_until([&] { return good.sub.delivered_to_end(); },
                               [&] {
                                 pw.poll();
                                 good.poll();
                                 rogue.reap();
                                 if (monotonic_ns() - last_end > 50 * kNsPerMs) {
                                   forge();
                                   (void)pw.pub.end_session(monotonic_ns());
                                   last_end = monotonic_ns();
                                 }
                               },
                               60'000);
  EXPECT_TRUE(done);
  EXPECT_EQ(verify(replay(sc), good.rec, good.sub.books()), "");
  const auto& c = good.sub.counters();
  EXPECT_GT(c.forged_datagrams.get(), 0u);
  EXPECT_EQ(c.session_changes.get(), 0u);
  EXPECT_LE(c.snapshots_requested.get(), 1u) << "forged checksums cost at most one snapshot per interval";
  std::cout << fmt::format("  rogue sent {} forged datagrams; subscriber: {} messages, claims held {}, forged {}, "
                           "confirmed {}, session queries {}, snapshots {}, session changes {}\n",
                           forged, good.rec.delivered, c.claims_held.get(), c.forged_datagrams.get(),
                           c.claims_confirmed.get(), c.session_queries.get(), c.snapshots_requested.get(),
                           c.session_changes.get());
}

// 1 publisher + 3 subscribers, separate processes, one device.
TEST(VerbsFeed, OnePublisherThreeSubscriberProcesses) {
  MDCAST_REQUIRE_RDMA();
  const std::string ip = local_ip();
  ASSERT_FALSE(ip.empty());
  run_feed({"one_device", ip, ip, "239.77.1.10", 7610});
}

}  // namespace
}  // namespace mdcast::test::verbs
