// The verbs control server's bounds (ServerLimits) against a real RDMA
// device: a burst of requests is handled a budget per poll, in order, with
// the client's receive slots held meanwhile (it waits on RNR, nothing is
// lost); a streamed reply continues through on_writable; an oversize prefix
// before admission is cut with a too-large error; an un-admitted client is
// closed after its timeout, taken from the `now` given to poll; an address
// outside control.allow is rejected before a QP is made, and one address is
// held to its share of admitted clients.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <map>
#include <set>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/media/peer.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/wire/control.hpp"
#include "verbs_proc.hpp"

namespace mv = mdcast::media::verbs;

namespace mdcast::test::verbs {
namespace {

using Bytes = std::vector<std::byte>;

Bytes frame_of(size_t size, uint32_t rid, wire::CtlType type = wire::CtlType::kStatusReport) {
  Bytes f(size, std::byte{0});
  store_le<uint32_t>(f.data(), static_cast<uint32_t>(size));
  f[4] = std::byte{static_cast<uint8_t>(type)};
  f[5] = std::byte{1};
  store_le<uint32_t>(f.data() + 8, rid);
  return f;
}
uint32_t rid_of(std::span<const std::byte> f) { return load_le<uint32_t>(f.data() + 8); }

// Admits on Subscribe (or everyone); streams `chunks` 64 KiB frames on a
// SnapshotRequest while queued_bytes stays under 512 KiB.
struct Handler final : media::ControlHandler {
  bool admit_all = true;
  std::set<media::ClientId> admitted_set;
  std::map<media::ClientId, std::vector<uint32_t>> executed;
  size_t frames = 0, chunks = 0, writable_calls = 0;
  std::map<media::ClientId, size_t> left, sent;
  void on_connect(media::ClientId, uint64_t) override {}
  void on_disconnect(media::ClientId c) override { left.erase(c); }
  bool on_frame(media::ClientId c, std::span<const std::byte> f, uint64_t, media::ReplySink& out) override {
    ++frames;
    executed[c].push_back(rid_of(f));
    const auto type = static_cast<wire::CtlType>(f[4]);
    if (type == wire::CtlType::kSubscribe) {
      admitted_set.insert(c);
      out.send(c, frame_of(36, rid_of(f), wire::CtlType::kSubscribeAck));
    } else if (type == wire::CtlType::kSnapshotRequest) {
      left[c] = chunks;
      produce(c, out);
    }
    return true;
  }
  [[nodiscard]] bool admitted(media::ClientId c) const noexcept override { return admit_all || admitted_set.count(c); }
  [[nodiscard]] bool has_pending(media::ClientId c) const noexcept override {
    const auto it = left.find(c);
    return it != left.end() && it->second > 0;
  }
  void on_writable(media::ClientId c, uint64_t, media::ReplySink& out) override {
    ++writable_calls;
    produce(c, out);
  }
  void produce(media::ClientId c, media::ReplySink& out) {
    while (left[c] > 0 && out.queued_bytes(c) < (512u << 10)) {
      out.send(c, frame_of(64u << 10, static_cast<uint32_t>(sent[c]++), wire::CtlType::kSnapshotData));
      --left[c];
    }
  }
};

struct World {
  mv::Options o;
  Handler h;
  std::unique_ptr<mv::VerbsControlServer> server;
  uint64_t skew = 0;  // added to the clock given to the server: timeouts without waiting

  World(uint16_t port, const mv::ServerLimits& limits = {}) {
    o.local_ip = o.control_ip = local_ip();
    o.control_port = port;
    o.rdma_read = false;
    o.log = [](std::string_view s) { std::cout << "    [verbs] " << s << '\n'; };
    server = std::make_unique<mv::VerbsControlServer>(o, mv::VerbsControlServer::Ring{}, limits);
  }
  size_t poll() { return server->poll(h, monotonic_ns() + skew); }
};

struct Client {
  mv::VerbsControlClient c;
  bool connected = false, disconnected = false;
  std::vector<Bytes> frames;
  explicit Client(const mv::Options& o) : c(o) {}
  void drain() {
    c.poll(monotonic_ns());
    mv::VerbsControlClient::Inbound in;
    while (c.next(in)) {
      if (in.kind == mv::VerbsControlClient::Inbound::Kind::kConnected) connected = true;
      if (in.kind == mv::VerbsControlClient::Inbound::Kind::kDisconnected) disconnected = true;
      if (in.kind == mv::VerbsControlClient::Inbound::Kind::kFrame) frames.push_back(std::move(in.frame));
    }
  }
};

TEST(VerbsControlBounds, ABurstIsHandledABudgetPerPollInOrderNothingLost) {
  MDCAST_REQUIRE_RDMA();
  World w(7621);
  auto co = w.o;
  co.max_outbound_backlog = 4u << 20;  // the whole burst queued at once
  Client cl(co);
  ASSERT_TRUE(poll_until([&] { return cl.connected; }, [&] { w.poll(); cl.drain(); }, 20'000));
  constexpr uint32_t kFrames = 30000;  // 1.3 MiB: 20 SENDs, more than the server keeps posted (8)
  for (uint32_t i = 0; i < kFrames; ++i) ASSERT_TRUE(cl.c.send(frame_of(44, i)));
  size_t most = 0;
  ASSERT_TRUE(poll_until([&] { return w.h.frames == kFrames; },
                         [&] {
                           const size_t before = w.h.frames;
                           w.poll();
                           most = std::max(most, w.h.frames - before);
                           cl.drain();
                         },
                         60'000))
      << w.h.frames << " of " << kFrames;
  EXPECT_LE(most, 8u) << "one client's budget per poll";
  const auto& ex = w.h.executed.begin()->second;
  for (uint32_t i = 0; i < kFrames; ++i) ASSERT_EQ(ex[i], i);
  EXPECT_GT(w.server->counters().budget_deferred.get(), 0u);
  EXPECT_FALSE(cl.disconnected);
}

TEST(VerbsControlBounds, AStreamedReplyContinuesThroughOnWritable) {
  MDCAST_REQUIRE_RDMA();
  World w(7622);
  w.h.chunks = 48;  // 3 MiB
  Client cl(w.o);
  ASSERT_TRUE(poll_until([&] { return cl.connected; }, [&] { w.poll(); cl.drain(); }, 20'000));
  ASSERT_TRUE(cl.c.send(frame_of(44, 1, wire::CtlType::kSnapshotRequest)));
  ASSERT_TRUE(poll_until([&] { return cl.frames.size() == 48; }, [&] { w.poll(); cl.drain(); }, 30'000))
      << cl.frames.size();
  for (size_t i = 0; i < cl.frames.size(); ++i) ASSERT_EQ(rid_of(cl.frames[i]), i);
  EXPECT_GT(w.h.writable_calls, 0u);
  EXPECT_EQ(w.server->counters().writable_calls.get(), w.h.writable_calls);
  EXPECT_EQ(w.server->queued_bytes(1), 0u);
}

TEST(VerbsControlBounds, OversizeBeforeAdmissionAndTheUnadmittedTimeout) {
  MDCAST_REQUIRE_RDMA();
  World w(7623);
  w.h.admit_all = false;
  Client big(w.o), idle(w.o), sub(w.o);
  ASSERT_TRUE(poll_until([&] { return big.connected && idle.connected && sub.connected; },
                         [&] { w.poll(); big.drain(); idle.drain(); sub.drain(); }, 20'000));
  Bytes over = frame_of((16u << 10) + 1, 1);
  over.resize(64);
  ASSERT_TRUE(big.c.send(over));
  ASSERT_TRUE(sub.c.send(frame_of(44, 2, wire::CtlType::kSubscribe)));
  ASSERT_TRUE(poll_until([&] { return big.disconnected && !sub.frames.empty(); },
                         [&] { w.poll(); big.drain(); sub.drain(); }, 20'000));
  ASSERT_FALSE(big.frames.empty());
  EXPECT_EQ(static_cast<wire::CtlType>(big.frames[0][wire::ctl::kType]), wire::CtlType::kError);
  EXPECT_EQ(w.server->counters().cut_oversize.get(), 1u);
  // Five seconds on the server's clock: the idle one goes, the admitted one stays.
  w.skew = 5 * kNsPerSec + kNsPerMs;
  ASSERT_TRUE(poll_until([&] { return idle.disconnected; }, [&] { w.poll(); idle.drain(); sub.drain(); }, 20'000));
  EXPECT_EQ(w.server->counters().timeouts_unadmitted.get(), 1u);
  EXPECT_FALSE(sub.disconnected);
  EXPECT_EQ(w.server->clients(), 1u);
}

TEST(VerbsControlBounds, AnAddressOutsideTheAllowListIsRejectedAndOneAddressHasItsShare) {
  MDCAST_REQUIRE_RDMA();
  {
    mv::ServerLimits limits;
    limits.allow = media::parse_networks("198.18.0.0/15", "control.allow");  // not where the client is
    World w(7624, limits);
    Client cl(w.o);
    ASSERT_TRUE(poll_until([&] { return w.server->counters().refused_peers.get() > 0; },
                           [&] { w.poll(); cl.drain(); }, 20'000));
    EXPECT_FALSE(cl.connected);
    EXPECT_EQ(w.server->clients(), 0u);
  }
  mv::ServerLimits limits;
  limits.max_clients_per_peer = 2;
  World w(7625, limits);
  w.h.admit_all = false;
  Client a(w.o), b(w.o), c(w.o);
  ASSERT_TRUE(poll_until([&] { return a.connected && b.connected && c.connected; },
                         [&] { w.poll(); a.drain(); b.drain(); c.drain(); }, 20'000));
  for (auto* cl : {&a, &b, &c}) {
    ASSERT_TRUE(cl->c.send(frame_of(44, 1, wire::CtlType::kSubscribe)));
    ASSERT_TRUE(poll_until([&] { return !cl->frames.empty() || cl->disconnected; },
                           [&] { w.poll(); a.drain(); b.drain(); c.drain(); }, 20'000));
  }
  ASSERT_TRUE(poll_until([&] { return c.disconnected; }, [&] { w.poll(); a.drain(); b.drain(); c.drain(); }, 20'000))
      << "the third from one address was not cut at admission";
  EXPECT_EQ(w.server->counters().cut_refused_share.get(), 1u);
  EXPECT_FALSE(a.disconnected);
  EXPECT_FALSE(b.disconnected);
}

}  // namespace
}  // namespace mdcast::test::verbs
