// One RC control endpoint for several channels, against a real RDMA device:
// each client's connection request reaches the server of the channel its
// hello names (moved onto that server's event channel, its thread's), and is
// served there; a request for a channel the publisher lacks is rejected with
// a reason the client reports. Servers on threads of their own, as mdcast
// publish runs them.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"
#include "mdcast/wire/control.hpp"
#include "verbs_proc.hpp"

namespace mv = mdcast::media::verbs;

namespace mdcast::test::verbs {
namespace {

using Bytes = std::vector<std::byte>;

// Counts the Subscribes it is sent (each names a channel) and acknowledges them.
struct Recorder final : media::ControlHandler {
  std::atomic<int> subscribes{0};
  std::atomic<int> wrong_channel{0};
  uint16_t channel = 0;
  void on_connect(media::ClientId, uint64_t) override {}
  void on_disconnect(media::ClientId) override {}
  bool on_frame(media::ClientId c, std::span<const std::byte> f, uint64_t, media::ReplySink& out) override {
    const auto p = wire::parse_control(f, nullptr);
    if (p)
      if (const auto* s = std::get_if<wire::Subscribe>(&p->body)) {
        ++subscribes;
        if (s->channel != channel) ++wrong_channel;
        out.send(c, wire::encode_control(p->request_id, wire::SubscribeAck{}));
      }
    return true;
  }
  [[nodiscard]] bool admitted(media::ClientId) const noexcept override { return true; }
  [[nodiscard]] bool has_pending(media::ClientId) const noexcept override { return false; }
  void on_writable(media::ClientId, uint64_t, media::ReplySink&) override {}
};

struct Client {
  mv::VerbsControlClient c;
  bool connected = false, acked = false, subscribed = false;
  uint16_t channel;
  Client(mv::Options o, uint16_t ch) : c((o.channel = ch, o)), channel(ch) {}
  void step() {
    c.poll(monotonic_ns());
    mv::VerbsControlClient::Inbound in;
    while (c.next(in)) {
      if (in.kind == mv::VerbsControlClient::Inbound::Kind::kConnected) connected = true;
      if (in.kind == mv::VerbsControlClient::Inbound::Kind::kFrame) {
        const auto p = wire::parse_control(in.frame, nullptr);
        acked = acked || (p && std::holds_alternative<wire::SubscribeAck>(p->body));
      }
    }
    if (connected && !subscribed) {
      wire::Subscribe s;
      s.channel = channel;
      subscribed = c.send(wire::encode_control(1, s));
    }
  }
};

TEST(VerbsFrontDoor, EachRequestIsServedByTheChannelItsHelloNamesAndAnUnknownOneIsToldWhy) {
  MDCAST_REQUIRE_RDMA();
  mv::Options o;
  o.local_ip = o.control_ip = local_ip();
  o.control_port = 7631;
  o.rdma_read = false;
  o.log = [](std::string_view s) { std::cout << "    [verbs] " << s << '\n'; };
  mv::VerbsFrontDoor door(o);
  constexpr int kChannels = 2;
  Recorder rec[kChannels];
  std::atomic<bool> stop{false}, up[kChannels] = {};
  std::vector<std::thread> threads;
  for (int k = 0; k < kChannels; ++k) {
    rec[k].channel = static_cast<uint16_t>(1 + k);
    auto so = o;
    so.channel = rec[k].channel;
    so.control_inbox = door.add_channel(rec[k].channel);
    threads.emplace_back([&, so, k] {
      mv::VerbsControlServer server(so, mv::VerbsControlServer::Ring{});
      up[k] = true;
      while (!stop) {
        server.poll(rec[k], monotonic_ns());
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  ASSERT_TRUE(poll_until([&] { return up[0] && up[1]; }, [] {}, 5'000));
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 6; ++i) clients.push_back(std::make_unique<Client>(o, static_cast<uint16_t>(1 + i % kChannels)));
  Client stranger(o, 9);
  const bool all = poll_until(
      [&] {
        for (auto& c : clients)
          if (!c->acked) return false;
        return !stranger.c.last_error().empty();
      },
      [&] {
        door.poll(kNsPerMs);
        for (auto& c : clients) c->step();
        stranger.step();
      },
      30'000);
  stop = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(all) << "routed " << door.counters().routed.get() << ", stranger: '" << stranger.c.last_error() << "'";
  EXPECT_EQ(rec[0].subscribes + rec[1].subscribes, 6);
  EXPECT_EQ(rec[0].subscribes, 3);
  EXPECT_EQ(rec[0].wrong_channel + rec[1].wrong_channel, 0) << "a Subscribe reached another channel's server";
  EXPECT_EQ(door.counters().routed.get(), 6u);
  EXPECT_GE(door.counters().unknown_channel.get(), 1u);
  EXPECT_FALSE(stranger.connected);
  EXPECT_NE(stranger.c.last_error().find("unknown-channel"), std::string::npos) << stranger.c.last_error();
  EXPECT_NE(stranger.c.last_error().find("channels 1 to 2"), std::string::npos) << stranger.c.last_error();
}

}  // namespace
}  // namespace mdcast::test::verbs
