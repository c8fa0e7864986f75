// StreamControlServer, what a client may cost in connections and time: idle
// sockets can never lock subscribers out (a small cap on un-admitted
// connections, the oldest evicted), admitted clients have their own cap,
// a longer length prefix than allowed cuts at once, and un-admitted, half-
// sent and silent clients are closed on timeouts driven by the injected now.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

Bytes subscribe(uint32_t rid) { return frame_of(44, rid, wire::CtlType::kSubscribe); }

// Connects and subscribes one client through admission.
Sock admitted_client(const std::string& name, StreamControlServer& server, FakeHandler& h, Clock& clk) {
  Sock s(raw_connect(name));
  EXPECT_GE(s.fd, 0);
  server.poll(h, clk.tick());
  EXPECT_TRUE(s.send_all(subscribe(1)));
  server.poll(h, clk.tick());
  return s;
}

TEST(StreamServerConnections, ThousandIdleSocketsNeverLockSubscribersOut) {
  constexpr size_t kIdle = 1024;
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  const rlim_t need = kIdle + 64 + 256;  // the idle ends, the server's ends, gtest and the rest
  if (rl.rlim_cur < need) {
    if (rl.rlim_max < need)
      GTEST_SKIP() << "needs " << need << " open files, the hard limit is " << rl.rlim_max << " (ulimit -Hn)";
    rl.rlim_cur = need;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &rl), 0);
  }
  const std::string name = unique_name("idle");
  StreamControlServer server(address_of(name));  // defaults: 64 un-admitted, 16 accepts per poll
  FakeHandler h;
  h.admit_all = false;
  h.reply_bytes = 36;
  Clock clk;
  Sock sub = admitted_client(name, server, h, clk);
  ASSERT_TRUE(h.admitted(1));
  wire::FrameAssembler in;
  std::vector<Bytes> got;
  std::vector<Sock> idle;
  uint32_t asked = 0;
  for (size_t i = 0; i < kIdle; ++i) {
    idle.emplace_back(raw_connect(name));
    ASSERT_GE(idle.back().fd, 0) << "connect " << i;
    if (i % 16 == 15) {
      // The subscriber keeps asking while the flood goes on, and is answered.
      ASSERT_TRUE(sub.send_all(frame_of(44, ++asked)));
      server.poll(h, clk.tick());
      ASSERT_LE(server.unadmitted(), 64u);
      ASSERT_TRUE(sub.drain(in, got));
    }
  }
  for (int i = 0; i < 10; ++i) server.poll(h, clk.tick());
  ASSERT_TRUE(sub.drain(in, got));
  // The SubscribeAck, then one answer per request.
  ASSERT_EQ(got.size(), 1u + asked);
  EXPECT_EQ(rid_of(got.back()), asked);
  EXPECT_EQ(server.stats().accepted.get(), kIdle + 1);
  EXPECT_EQ(server.stats().evicted_unadmitted.get(), kIdle - 64);
  EXPECT_EQ(server.unadmitted(), 64u);
  EXPECT_EQ(server.clients(), 65u);
  EXPECT_TRUE(idle.front().closed_by_peer()) << "the oldest were closed";
  EXPECT_FALSE(idle.back().closed_by_peer());

  // A new subscriber gets in, and through admission, at once.
  Sock late(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(late.send_all(subscribe(7)));
  server.poll(h, clk.tick());
  wire::FrameAssembler lin;
  std::vector<Bytes> lgot;
  ASSERT_TRUE(late.drain(lin, lgot));
  ASSERT_EQ(lgot.size(), 1u);
  EXPECT_EQ(rid_of(lgot[0]), 7u);
  EXPECT_TRUE(h.admitted(kIdle + 2));

  // The idle ones that are left had their chance: gone after the timeout;
  // the subscribers stay.
  ASSERT_TRUE(sub.send_all(frame_of(44, ++asked)));
  ASSERT_TRUE(late.send_all(frame_of(44, 8)));
  server.poll(h, clk.tick(5 * kNsPerSec + kNsPerMs));
  EXPECT_EQ(server.stats().timeouts_unadmitted.get(), 63u);
  EXPECT_EQ(server.unadmitted(), 0u);
  EXPECT_EQ(server.clients(), 2u);
}

TEST(StreamServerConnections, EvictionTakesTheOldestSilentConnectionFirst) {
  const std::string name = unique_name("evict");
  StreamServerConfig cfg;
  cfg.max_unadmitted = 4;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  Sock talking(raw_connect(name));  // 1: sends a frame, as one half way through authenticating
  server.poll(h, clk.tick());
  ASSERT_TRUE(talking.send_all(frame_of(44, 1)));
  server.poll(h, clk.tick());
  std::vector<Sock> quiet;
  for (int i = 0; i < 3; ++i) quiet.emplace_back(raw_connect(name));  // 2, 3, 4
  server.poll(h, clk.tick());
  ASSERT_EQ(server.unadmitted(), 4u);
  quiet.emplace_back(raw_connect(name));  // 5 evicts 2, not 1
  server.poll(h, clk.tick());
  EXPECT_EQ(h.disconnects, std::vector<ClientId>{2});
  for (int i = 0; i < 3; ++i) quiet.emplace_back(raw_connect(name));  // 6, 7, 8 evict 3, 4, 5
  server.poll(h, clk.tick());
  EXPECT_EQ(h.disconnects, (std::vector<ClientId>{2, 3, 4, 5}));
  // Once every un-admitted one has spoken, the oldest goes.
  for (size_t i = 4; i < 7; ++i) ASSERT_TRUE(quiet[i].send_all(frame_of(44, 1)));
  server.poll(h, clk.tick());
  quiet.emplace_back(raw_connect(name));  // 9 evicts 1
  server.poll(h, clk.tick());
  EXPECT_EQ(h.disconnects.back(), 1u);
  EXPECT_EQ(server.stats().evicted_unadmitted.get(), 5u);
  EXPECT_EQ(server.unadmitted(), 4u);
}

TEST(StreamServerConnections, AdmittedClientsHaveTheirOwnCap) {
  const std::string name = unique_name("cap");
  StreamServerConfig cfg;
  cfg.max_clients = 2;
  {
    StreamControlServer server(address_of(name), cfg);
    FakeHandler h;  // admits everyone at once
    Clock clk;
    Sock a(raw_connect(name)), b(raw_connect(name)), c(raw_connect(name));
    server.poll(h, clk.tick());
    EXPECT_EQ(server.clients(), 2u);
    EXPECT_EQ(server.stats().refused.get(), 1u);
    EXPECT_TRUE(c.closed_by_peer());
  }
  cfg.max_clients = 1;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  Sock a(raw_connect(name)), b(raw_connect(name));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.unadmitted(), 2u);
  ASSERT_TRUE(a.send_all(subscribe(1)));
  server.poll(h, clk.tick());
  ASSERT_TRUE(b.send_all(subscribe(1)));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.clients(), 1u);
  EXPECT_EQ(server.stats().refused_admission.get(), 1u);
  EXPECT_EQ(h.disconnects, std::vector<ClientId>{2});
}

// A client refused for room is told so (kOverloaded, naming the setting)
// and never hears the acknowledgement the handler gave its Subscribe; one
// connecting while every slot is taken is told the same at once.
TEST(StreamServerConnections, AClientRefusedForRoomHearsWhyAndNoAcknowledgement) {
  const std::string name = unique_name("full");
  StreamServerConfig cfg;
  cfg.max_clients = 1;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  Sock a(raw_connect(name)), b(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(a.send_all(subscribe(1)));
  server.poll(h, clk.tick());
  ASSERT_TRUE(b.send_all(subscribe(7)));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().refused_admission.get(), 1u);
  auto frames_of = [](const Sock& s) {
    wire::FrameAssembler in;
    std::vector<Bytes> got;
    (void)s.drain(in, got);
    return got;
  };
  const auto got = frames_of(b);
  ASSERT_EQ(got.size(), 1u) << "the Error only: the acknowledgement the handler sent is dropped";
  std::string why;
  const auto f = wire::parse_control(got[0], &why);
  ASSERT_TRUE(f) << why;
  EXPECT_EQ(f->request_id, 7u);
  const auto* e = std::get_if<wire::ErrorReply>(&f->body);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, wire::ErrorCode::kOverloaded);
  EXPECT_NE(e->text.find("control.max_clients"), std::string::npos) << e->text;
  EXPECT_TRUE(b.closed_by_peer());
  // The admitted one got its acknowledgement as usual.
  const auto acked = frames_of(a);
  ASSERT_EQ(acked.size(), 1u);
  EXPECT_EQ(static_cast<wire::CtlType>(acked[0][4]), wire::CtlType::kSubscribeAck);
  // Full: a new connection is told at once.
  Sock c(raw_connect(name));
  server.poll(h, clk.tick());
  const auto told = frames_of(c);
  ASSERT_EQ(told.size(), 1u);
  const auto g = wire::parse_control(told[0], &why);
  ASSERT_TRUE(g) << why;
  EXPECT_NE(std::get_if<wire::ErrorReply>(&g->body), nullptr);
  EXPECT_TRUE(c.closed_by_peer());
  EXPECT_EQ(server.stats().refused.get(), 1u);
}

TEST(StreamServerFrames, ALongerPrefixThanAllowedCutsAtOnce) {
  const std::string name = unique_name("oversize");
  StreamServerConfig cfg;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  Sock big(raw_connect(name)), exact(raw_connect(name)), junk(raw_connect(name));
  Sock sub = admitted_client(name, server, h, clk);  // 4
  // Un-admitted: one byte over the limit announced, then the start of a body.
  Bytes over = frame_of(cfg.max_frame_unadmitted + 1, 1);
  over.resize(8u << 10);
  ASSERT_TRUE(big.send_all(over));
  ASSERT_TRUE(exact.send_all(frame_of(cfg.max_frame_unadmitted, 2)));
  const uint8_t short_len[12] = {5, 0, 0, 0, 9, 1};
  ASSERT_TRUE(junk.send_all(std::as_bytes(std::span(short_len))));
  // Admitted: larger frames are legal, up to their own limit.
  ASSERT_TRUE(sub.send_all(frame_of(20u << 10, 3)));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().oversize_disconnects.get(), 1u);
  EXPECT_EQ(server.stats().bad_stream_disconnects.get(), 2u) << "the short length, and the oversize one";
  EXPECT_TRUE(h.executed[1].empty());
  EXPECT_EQ(h.executed[2], std::vector<uint32_t>{2});
  EXPECT_EQ(h.executed[4], (std::vector<uint32_t>{1, 3}));
  EXPECT_TRUE(big.closed_by_peer());
  Bytes admitted_over = frame_of(cfg.max_frame_admitted + 1, 5);
  admitted_over.resize(16);
  ASSERT_TRUE(sub.send_all(admitted_over));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().oversize_disconnects.get(), 2u);
  EXPECT_EQ(server.clients(), 1u);
  EXPECT_LE(server.buffer_capacity_bytes(), 2 * wire::FrameAssembler::kRetainBytes);
}

TEST(StreamServerTimeouts, UnadmittedConnectionsHaveFiveSeconds) {
  const std::string name = unique_name("t-unadm");
  StreamControlServer server(address_of(name));
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  Sock s(raw_connect(name));
  server.poll(h, clk.tick());
  const uint64_t t0 = clk.now;
  ASSERT_TRUE(s.send_all(frame_of(44, 1)));  // talking is not being admitted
  server.poll(h, clk.now = t0 + 4900 * kNsPerMs);
  EXPECT_EQ(server.clients(), 1u);
  server.poll(h, clk.now = t0 + 5 * kNsPerSec);
  EXPECT_EQ(server.clients(), 0u);
  EXPECT_EQ(server.stats().timeouts_unadmitted.get(), 1u);
}

TEST(StreamServerTimeouts, AHalfSentFrameHasTwoSeconds) {
  const std::string name = unique_name("t-partial");
  StreamControlServer server(address_of(name));
  FakeHandler h;
  Clock clk;
  Sock slow(raw_connect(name)), dribble(raw_connect(name)), finishes(raw_connect(name));
  server.poll(h, clk.tick());
  const Bytes f = frame_of(100, 1);
  const auto part = std::span<const std::byte>(f);
  ASSERT_TRUE(slow.send_all(part.first(50)));
  ASSERT_TRUE(dribble.send_all(part.first(10)));
  ASSERT_TRUE(finishes.send_all(part.first(50)));
  server.poll(h, clk.tick());
  const uint64_t t0 = clk.now;
  // A byte every half second is activity, not progress enough.
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(dribble.send_all(part.subspan(9 + static_cast<size_t>(i), 1)));
    server.poll(h, clk.now = t0 + static_cast<uint64_t>(i) * 500 * kNsPerMs);
  }
  ASSERT_TRUE(finishes.send_all(part.subspan(50)));
  server.poll(h, clk.now = t0 + 1900 * kNsPerMs);
  EXPECT_EQ(server.clients(), 3u);
  EXPECT_EQ(h.executed[3], std::vector<uint32_t>{1});
  server.poll(h, clk.now = t0 + 2 * kNsPerSec);
  EXPECT_EQ(server.stats().timeouts_partial_frame.get(), 2u);
  std::sort(h.disconnects.begin(), h.disconnects.end());  // one sweep: in no particular order
  EXPECT_EQ(h.disconnects, (std::vector<ClientId>{1, 2}));
  EXPECT_EQ(server.clients(), 1u);
}

TEST(StreamServerTimeouts, AnAdmittedClientSilentForThirtySecondsIsClosed) {
  const std::string name = unique_name("t-idle");
  StreamControlServer server(address_of(name));
  FakeHandler h;
  Clock clk;
  Sock talks(raw_connect(name)), silent(raw_connect(name));
  server.poll(h, clk.tick());
  const uint64_t t0 = clk.now;
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(talks.send_all(frame_of(44, static_cast<uint32_t>(i))));
    server.poll(h, clk.now = t0 + static_cast<uint64_t>(i) * 10 * kNsPerSec);
  }
  EXPECT_EQ(server.clients(), 1u) << "the silent one went at 30 s";
  EXPECT_EQ(server.stats().timeouts_idle.get(), 1u);
  EXPECT_TRUE(silent.closed_by_peer());
  server.poll(h, clk.now = t0 + 60 * kNsPerSec);
  EXPECT_EQ(server.clients(), 0u);
  EXPECT_EQ(server.stats().timeouts_idle.get(), 2u);
}

// A server claims the descriptors its settings let it hold: Debian's default
// soft limit (1024) would turn clients away below control.max_clients.
TEST(StreamServerConnections, TheSoftOpenFilesLimitIsRaisedToWhatTheSettingsHold) {
  rlimit rl{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
  StreamServerConfig c;
  c.max_clients = 1500;
  const rlim_t need = c.max_clients + c.max_unadmitted;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need + 200)
    GTEST_SKIP() << "needs a hard open-files limit of " << need + 200 << ", it is " << rl.rlim_max;
  rl.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &rl), 0);
  {
    StreamControlServer server(address_of(unique_name("nofile")), c);
    EXPECT_EQ(server.open_files_shortfall(), "");
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
    EXPECT_GE(rl.rlim_cur, need);
    EXPECT_EQ(OpenFilesClaim::claimed(), need);
    // A second server in the process (another channel) adds its own.
    StreamControlServer other(address_of(unique_name("nofile2")), c);
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &rl), 0);
    EXPECT_GE(rl.rlim_cur, 2 * need);
  }
  EXPECT_EQ(OpenFilesClaim::claimed(), 0u);
}

// Where the hard limit is below it, the server still runs (past the limit it
// turns connections away, counted) and says so with the numbers.
TEST(StreamServerConnections, AHardLimitBelowTheSettingsIsExplained) {
  EXPECT_EXIT(
      {
        rlimit rl{};
        if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) std::_Exit(2);
        rl.rlim_cur = rl.rlim_max = 300;
        if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) std::_Exit(3);
        StreamControlServer server(address_of(unique_name("lowhard")));  // 1024 + 64
        const std::string& why = server.open_files_shortfall();
        std::fprintf(stderr, "%s\n", why.c_str());
        const bool named = why.find("open-files limit is 300 (hard 300)") != std::string::npos &&
                           why.find("control.max_clients 1024 + control.max_unadmitted 64") != std::string::npos &&
                           why.find("ulimit -Hn") != std::string::npos;
        std::_Exit(named ? 0 : 4);
      },
      ::testing::ExitedWithCode(0), "open-files limit is 300");
}

TEST(StreamServerConfig, SettingsThatCannotWorkAreExplained) {
  StreamServerConfig c;
  c.reply_budget_bytes = 1u << 20;  // below one client's share
  EXPECT_THROW(StreamControlServer(address_of(unique_name("cfg")), c), Error);
  c = {};
  c.frames_per_poll = 0;
  EXPECT_THROW(c.validate(), Error);
  c = {};
  c.max_frame_admitted = 1u << 30;
  EXPECT_THROW(c.validate(), Error);
  EXPECT_NO_THROW(StreamServerConfig{}.validate());
}

}  // namespace
}  // namespace mdcast::media::test
