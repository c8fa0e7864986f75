// StreamControlServer and StreamControlClient polls without a system call
// when nothing happened (io_uring readiness), and without losing anything:
// a client after a long idle stretch is served; bursts beyond every per-poll
// quota (accepts, frames, events per epoll_wait) are served to the last frame
// although the kernel announces them only once (a multishot poll hears
// wakeups, epoll's level stays); the fallback (use_io_uring = false) passes
// the same tests with an epoll_wait every poll.
//
// Clients in the test's own thread: the ring's completion is in memory when
// their send() returns, as with every test of this server. The threaded
// stress also runs clients in other threads, polled until done.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

class Idle : public ::testing::TestWithParam<bool> {
 protected:
  [[nodiscard]] static bool uring() { return GetParam(); }
  static StreamServerConfig config() {
    StreamServerConfig c;
    c.use_io_uring = uring();
    return c;
  }
  // Skips the io_uring case where the host refuses io_uring.
  static void require(const StreamControlServer& s) {
    if (uring() && s.stats().io_uring.get() == 0) GTEST_SKIP() << s.readiness_mode();
  }
  // Polls until nothing is left over from what came before.
  static void settle(StreamControlServer& s, FakeHandler& h, Clock& clk) {
    for (int i = 0; i < 8; ++i) s.poll(h, clk.tick());
  }
  // Epoll_waits made by `polls` idle polls.
  static uint64_t waits_over(StreamControlServer& s, FakeHandler& h, Clock& clk, int polls) {
    const uint64_t before = s.stats().epoll_waits.get();
    for (int i = 0; i < polls; ++i) s.poll(h, clk.tick(kNsPerUs * 100));
    return s.stats().epoll_waits.get() - before;
  }
};

TEST_P(Idle, AThousandIdlePollsMakeNoEpollWait) {
  const std::string name = unique_name("idle");
  StreamControlServer server(address_of(name), config());
  require(server);
  FakeHandler h;
  Clock clk;
  EXPECT_EQ(server.readiness_mode().rfind(uring() ? "io_uring" : "epoll_wait per poll", 0), 0u)
      << server.readiness_mode();
  settle(server, h, clk);
  const uint64_t idle_before = server.stats().idle_polls.get();
  EXPECT_EQ(waits_over(server, h, clk, 1000), uring() ? 0u : 1000u);
  EXPECT_EQ(server.stats().idle_polls.get() - idle_before, uring() ? 1000u : 0u);

  // The same once clients came, talked and went quiet (their sockets stay
  // in the epoll set, one still connected).
  Sock a(raw_connect(name)), b(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(a.send_all(burst(20)));
  ASSERT_TRUE(b.send_all(burst(3)));
  for (int i = 0; i < 20 && h.frames < 23; ++i) server.poll(h, clk.tick());
  ASSERT_EQ(h.frames, 23u);
  b = Sock();
  settle(server, h, clk);
  ASSERT_EQ(server.clients(), 1u);
  EXPECT_EQ(waits_over(server, h, clk, 1000), uring() ? 0u : 1000u);
  EXPECT_EQ(server.stats().io_uring.get(), uring() ? 1u : 0u);
}

TEST_P(Idle, AClientAfterALongIdleStretchIsAcceptedAndServed) {
  const std::string name = unique_name("late");
  StreamControlServer server(address_of(name), config());
  require(server);
  FakeHandler h;
  h.reply_bytes = 100;
  Clock clk;
  // 20 s of 100 us polls (past the sweep interval many times over).
  for (int i = 0; i < 200000; ++i) server.poll(h, clk.tick(100 * kNsPerUs));
  Sock s(raw_connect(name));
  ASSERT_TRUE(s.send_all(burst(5)));
  for (int i = 0; i < 4 && h.frames < 5; ++i) server.poll(h, clk.tick());
  EXPECT_EQ(server.clients(), 1u);
  ASSERT_EQ(h.frames, 5u) << "accepted and served within the polls right after";
  wire::FrameAssembler in;
  std::vector<Bytes> replies;
  ASSERT_TRUE(s.drain(in, replies));
  EXPECT_EQ(replies.size(), 5u);
  // Quiet again, then one more frame, heard at once.
  for (int i = 0; i < 10000; ++i) server.poll(h, clk.tick(100 * kNsPerUs));
  ASSERT_TRUE(s.send_all(frame_of(44, 77)));
  server.poll(h, clk.tick());
  ASSERT_EQ(h.frames, 6u);
  EXPECT_EQ(h.executed[1].back(), 77u);
}

// Every connection in the backlog and every byte in the sockets before the
// first poll: nothing wakes the server again while it works through more
// than every quota allows per poll, so only what it remembers drives it.
TEST_P(Idle, BurstsBeyondEveryQuotaAreServedToTheLastFrame) {
  const std::string name = unique_name("quota");
  StreamServerConfig cfg = config();
  cfg.accepts_per_poll = 3;
  cfg.frames_per_poll = 16;
  cfg.frames_per_client_per_poll = 4;
  cfg.max_frame_unadmitted = cfg.max_frame_admitted = 1024;  // 4 KiB reads: bytes stay in the sockets
  StreamControlServer server(address_of(name), cfg);
  require(server);
  FakeHandler h;
  Clock clk;
  constexpr size_t kClients = 90;  // more than one epoll_wait's batch of 64
  constexpr size_t kFrames = 300;  // 13 KiB each: more than kMaxReadsPerServe reads of 4 KiB
  std::vector<Sock> socks;
  for (size_t i = 0; i < kClients; ++i) {
    socks.emplace_back(raw_connect(name));
    ASSERT_GE(socks.back().fd, 0);
  }
  for (auto& s : socks) ASSERT_TRUE(s.send_all(burst(kFrames, 0, 44)));
  size_t polls = 0;
  while (h.frames < kClients * kFrames && polls < 100000) {
    server.poll(h, clk.tick());
    ++polls;
  }
  ASSERT_EQ(server.clients(), kClients);
  ASSERT_EQ(h.frames, kClients * kFrames) << "after " << polls << " polls";
  for (ClientId c = 1; c <= kClients; ++c) {
    const auto& ex = h.executed[c];
    ASSERT_EQ(ex.size(), kFrames) << "client " << c;
    for (size_t i = 0; i < kFrames; ++i) ASSERT_EQ(ex[i], i) << "client " << c;
  }
  EXPECT_EQ(server.buffered_in_bytes(), 0u);
  // All served, nothing remembered: idle again.
  settle(server, h, clk);
  EXPECT_EQ(waits_over(server, h, clk, 100), uring() ? 0u : 100u);
}

// One client, its socket read 4 KiB at a time (the frame limit 1 KiB): the
// budget runs out exactly where a read's frames end, with bytes still in the
// socket. Nothing wakes the server for them again.
TEST_P(Idle, BytesLeftInASocketWhenTheBudgetRanOutAreReadLater) {
  const std::string name = unique_name("leftbudget");
  StreamServerConfig cfg = config();
  cfg.frames_per_poll = cfg.frames_per_client_per_poll = 16;
  cfg.max_frame_unadmitted = cfg.max_frame_admitted = 1024;
  StreamControlServer server(address_of(name), cfg);
  require(server);
  FakeHandler h;
  Clock clk;
  Sock s(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_EQ(server.clients(), 1u);
  constexpr size_t kFrames = 64 * 5;  // 64-byte frames: a 4 KiB read holds 64, four polls' budget
  ASSERT_TRUE(s.send_all(burst(kFrames, 0, 64)));
  for (int i = 0; i < 100 && h.frames < kFrames; ++i) server.poll(h, clk.tick());
  ASSERT_EQ(h.frames, kFrames);
  for (size_t i = 0; i < kFrames; ++i) ASSERT_EQ(h.executed[1][i], i);
}

// One client whose frames are large: one serve reads its socket the most
// times it may (4 x 4 KiB) and leaves the rest there.
TEST_P(Idle, BytesLeftInASocketAfterTheReadsOfOneTurnAreReadLater) {
  const std::string name = unique_name("leftreads");
  StreamServerConfig cfg = config();
  cfg.frames_per_poll = cfg.frames_per_client_per_poll = 64;
  cfg.max_frame_unadmitted = cfg.max_frame_admitted = 1024;
  StreamControlServer server(address_of(name), cfg);
  require(server);
  FakeHandler h;
  Clock clk;
  Sock s(raw_connect(name));
  server.poll(h, clk.tick());
  constexpr size_t kFrames = 100;  // 100 KiB: 16 frames per turn
  ASSERT_TRUE(s.send_all(burst(kFrames, 0, 1024)));
  for (int i = 0; i < 100 && h.frames < kFrames; ++i) server.poll(h, clk.tick());
  ASSERT_EQ(h.frames, kFrames);
}

// Connections waiting in the backlog beyond the accept quota, sending nothing.
TEST_P(Idle, ConnectionsBeyondTheAcceptQuotaAreAllAccepted) {
  const std::string name = unique_name("backlog");
  StreamServerConfig cfg = config();
  cfg.accepts_per_poll = 3;
  StreamControlServer server(address_of(name), cfg);
  require(server);
  FakeHandler h;
  Clock clk;
  std::vector<Sock> socks;
  for (int i = 0; i < 100; ++i) socks.emplace_back(raw_connect(name));
  for (int i = 0; i < 100 && server.clients() < 100; ++i) server.poll(h, clk.tick());
  EXPECT_EQ(server.clients(), 100u);
}

// More clients ready at once than one epoll_wait returns (64).
TEST_P(Idle, MoreReadyClientsThanOneEpollBatchAreAllServed) {
  const std::string name = unique_name("batch");
  StreamControlServer server(address_of(name), config());
  require(server);
  FakeHandler h;
  Clock clk;
  constexpr size_t kClients = 100;  // under the listen backlog (128): connect() would block
  std::vector<Sock> socks;
  for (size_t i = 0; i < kClients; ++i) socks.emplace_back(raw_connect(name));
  for (int i = 0; i < 200 && server.clients() < kClients; ++i) server.poll(h, clk.tick());
  ASSERT_EQ(server.clients(), kClients);
  settle(server, h, clk);
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kClients; ++i) ASSERT_TRUE(socks[i].send_all(frame_of(44, static_cast<uint32_t>(round))));
    const size_t want = (round + 1) * kClients;
    for (int i = 0; i < 50 && h.frames < want; ++i) server.poll(h, clk.tick());
    ASSERT_EQ(h.frames, want) << "round " << round;
  }
  settle(server, h, clk);
  EXPECT_EQ(waits_over(server, h, clk, 100), uring() ? 0u : 100u);
}

// More wakeups between two polls than the ring's completion queue holds
// (128): the multishot poll ends and is armed again, nothing is missed.
TEST_P(Idle, MoreWakeupsThanTheCompletionQueueHoldsMissNothing) {
  const std::string name = unique_name("overflow");
  StreamControlServer server(address_of(name), config());
  require(server);
  FakeHandler h;
  Clock clk;
  constexpr size_t kClients = 300;
  std::vector<Sock> socks;
  while (socks.size() < kClients) {  // in steps the listen backlog takes
    for (int i = 0; i < 100; ++i) socks.emplace_back(raw_connect(name));
    for (int i = 0; i < 20 && server.clients() < socks.size(); ++i) server.poll(h, clk.tick());
  }
  ASSERT_EQ(server.clients(), kClients);
  settle(server, h, clk);
  for (auto& s : socks) ASSERT_TRUE(s.send_all(frame_of(44, 1)));
  for (int i = 0; i < 50 && h.frames < kClients; ++i) server.poll(h, clk.tick());
  ASSERT_EQ(h.frames, kClients);
  if (uring()) {
    EXPECT_GE(server.stats().readiness_rearms.get(), 1u);
  }
  settle(server, h, clk);
  EXPECT_EQ(waits_over(server, h, clk, 100), uring() ? 0u : 100u);
}

// Clients in other threads connect and send bursts while the server polls:
// wakeups come from elsewhere, at any moment of a poll.
TEST_P(Idle, ClientsInOtherThreadsAreServedToTheLastFrame) {
  const std::string name = unique_name("threads");
  StreamServerConfig cfg = config();
  cfg.accepts_per_poll = 2;
  cfg.frames_per_poll = 16;
  cfg.frames_per_client_per_poll = 4;
  StreamControlServer server(address_of(name), cfg);
  require(server);
  FakeHandler h;
  constexpr int kThreads = 4, kPerThread = 8, kBursts = 5, kFrames = 100;
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<Sock> mine;
      for (int i = 0; i < kPerThread; ++i) {
        mine.emplace_back(raw_connect(name));
        if (mine.back().fd < 0) ++failures;
      }
      for (int b = 0; b < kBursts; ++b) {
        for (auto& s : mine)
          if (!s.send_all(burst(kFrames, static_cast<uint32_t>(b * kFrames)))) ++failures;
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + t));  // quiet stretches between bursts
      }
      // Hold the connections until the server has read everything.
      while (!done && failures == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  const size_t total = static_cast<size_t>(kThreads * kPerThread * kBursts * kFrames);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);  // a hang guard, not a timing
  // Real time here: a virtual millisecond per poll would time the clients
  // out (idle_timeout) while their threads sleep between bursts.
  while (h.frames < total && failures == 0 && std::chrono::steady_clock::now() < deadline)
    server.poll(h, monotonic_ns());
  done = true;
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(h.frames, total) << "frames stranded";
  for (ClientId c = 1; c <= static_cast<ClientId>(kThreads * kPerThread); ++c) {
    const auto& ex = h.executed[c];
    ASSERT_EQ(ex.size(), static_cast<size_t>(kBursts * kFrames)) << "client " << c;
    for (size_t i = 0; i < ex.size(); ++i) ASSERT_EQ(ex[i], i) << "client " << c;
  }
}

TEST_P(Idle, TheClientReadsNothingWhenNothingCameAndEverythingThatDid) {
  const std::string name = unique_name("client");
  std::optional<StreamControlServer> server;
  server.emplace(address_of(name), config());
  require(*server);
  FakeHandler h;
  h.reply_bytes = 200;
  Clock clk;
  StreamControlClient client(address_of(name), uring());
  EXPECT_EQ(client.readiness_mode().rfind(uring() ? "io_uring" : "recv per poll", 0), 0u) << client.readiness_mode();
  std::vector<uint32_t> got;
  const auto on = [&](std::span<const std::byte> f) { got.push_back(rid_of(f)); };
  ASSERT_TRUE(client.poll(clk.tick(), on).connected);
  server->poll(h, clk.tick());
  for (int i = 0; i < 8; ++i) client.poll(clk.tick(), on);
  const uint64_t before = client.recvs();
  for (int i = 0; i < 1000; ++i) client.poll(clk.tick(), on);
  EXPECT_EQ(client.recvs() - before, uring() ? 0u : 1000u);
  if (uring()) {
    EXPECT_GE(client.idle_polls(), 1000u);
  }
  // Requests out, replies back: every one read.
  for (uint32_t r = 0; r < 50; ++r) ASSERT_TRUE(client.send(frame_of(44, r)));
  for (int i = 0; i < 20 && got.size() < 50; ++i) {
    server->poll(h, clk.tick());
    client.poll(clk.tick(), on);
  }
  ASSERT_EQ(got.size(), 50u);
  for (uint32_t r = 0; r < 50; ++r) EXPECT_EQ(got[r], r);
  // Replies piling up in the socket and the server's queue between the
  // client's polls (1.8 MiB, under the client's share): all of them read.
  h.reply_bytes = 60u << 10;
  for (uint32_t r = 0; r < 30; ++r) ASSERT_TRUE(client.send(frame_of(44, 100 + r)));
  for (int i = 0; i < 5000 && got.size() < 80; ++i) {
    server->poll(h, clk.tick());
    if (i % 50 == 49) client.poll(clk.tick(), on);
  }
  ASSERT_EQ(got.size(), 80u);
  EXPECT_EQ(server->stats().slow_disconnects.get(), 0u);
  for (uint32_t r = 0; r < 30; ++r) EXPECT_EQ(got[50 + r], 100 + r);
  for (int i = 0; i < 8; ++i) client.poll(clk.tick(), on);
  const uint64_t after = client.recvs();
  for (int i = 0; i < 100; ++i) client.poll(clk.tick(), on);
  EXPECT_EQ(client.recvs() - after, uring() ? 0u : 100u);
  // The publisher goes: heard at the next poll, although idle polls read nothing.
  server.reset();
  EXPECT_TRUE(client.poll(clk.tick(), on).disconnected);
  EXPECT_FALSE(client.connected());
}

std::string mode_name(const ::testing::TestParamInfo<bool>& p) { return p.param ? "IoUring" : "Fallback"; }
INSTANTIATE_TEST_SUITE_P(StreamServer, Idle, ::testing::Values(true, false), mode_name);

}  // namespace
}  // namespace mdcast::media::test
