// StreamControlServer, what a client may cost in work and reply memory: a
// burst of frames is handled a budget per poll, in order, clients in turn;
// a cut client has no frame executed after the cut; replies past a client's
// share or the global budget cut the right client and give the memory back;
// a streamed reply continues through on_writable as the queue drains.
#include <gtest/gtest.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

StreamServerConfig budget_config() {
  StreamServerConfig c;
  c.frames_per_poll = 64;
  c.frames_per_client_per_poll = 8;
  return c;
}

TEST(StreamServerBudget, A64KiBBurstIsHandledAtMostNPerPollInOrder) {
  const std::string name = unique_name("burst");
  StreamControlServer server(address_of(name), budget_config());
  FakeHandler h;
  Clock clk;
  Sock s(raw_connect(name));
  ASSERT_GE(s.fd, 0);
  server.poll(h, clk.tick());
  ASSERT_EQ(server.clients(), 1u);
  const size_t count = (64u << 10) / 44;  // one 64 KiB write of 44-byte frames
  ASSERT_TRUE(s.send_all(burst(count)));
  size_t polls = 0;
  while (h.frames < count && polls < 10 * count) {
    const size_t before = h.frames;
    server.poll(h, clk.tick());
    ++polls;
    ASSERT_LE(h.frames - before, 8u) << "poll " << polls << " handled more than one client's budget";
  }
  ASSERT_EQ(h.frames, count) << "every frame is handled, none lost while deferred";
  EXPECT_GE(polls, count / 8);
  const auto& ex = h.executed.begin()->second;
  for (size_t i = 0; i < ex.size(); ++i) ASSERT_EQ(ex[i], i) << "frames in the order sent";
  EXPECT_GT(server.stats().budget_deferred.get(), 0u);
  EXPECT_EQ(server.stats().frames_in.get(), count);
  // Nothing more: the ready list is empty and polls are idle.
  EXPECT_EQ(server.poll(h, clk.tick()), 0u);
}

TEST(StreamServerBudget, ManyBurstingClientsShareTheGlobalBudgetAndAQuietOneIsServedSoon) {
  const std::string name = unique_name("fair");
  StreamControlServer server(address_of(name), budget_config());
  FakeHandler h;
  Clock clk;
  std::vector<Sock> loud;
  for (int i = 0; i < 12; ++i) loud.emplace_back(raw_connect(name));
  Sock quiet(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_EQ(server.clients(), 13u);
  const size_t count = (64u << 10) / 44;
  for (auto& s : loud) ASSERT_TRUE(s.send_all(burst(count)));
  // Every loud client now holds frames in the server (read or still in its socket).
  for (int i = 0; i < 3; ++i) {
    const size_t before = h.frames;
    server.poll(h, clk.tick());
    ASSERT_LE(h.frames - before, 64u);
  }
  ASSERT_TRUE(quiet.send_all(frame_of(44, 4242)));
  const ClientId quiet_id = 13;
  size_t polls = 0;
  while (h.executed[quiet_id].empty() && polls < 100) {
    const size_t before = h.frames;
    server.poll(h, clk.tick());
    ++polls;
    ASSERT_LE(h.frames - before, 64u) << "the global budget holds with 12 clients bursting";
  }
  ASSERT_EQ(h.executed[quiet_id], std::vector<uint32_t>{4242});
  // Round robin: 12 loud clients x 8 frames is 96, at most two polls' budget
  // ahead of it, plus the poll that reads its socket.
  EXPECT_LE(polls, 4u);
  while (h.frames < 12 * count + 1 && polls < 100000) {
    server.poll(h, clk.tick());
    ++polls;
  }
  EXPECT_EQ(h.frames, 12 * count + 1);
  for (ClientId c = 1; c <= 12; ++c) EXPECT_EQ(h.executed[c].size(), count) << "client " << c;
}

TEST(StreamServerBudget, FramesOfAClientCutForItsRepliesAreNeverExecuted) {
  const std::string name = unique_name("cutframes");
  StreamServerConfig cfg = budget_config();
  cfg.client_reply_bytes = 2u << 20;
  cfg.frames_per_client_per_poll = 64;  // the whole burst in one poll, if the server let it
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.reply_bytes = 1u << 20;  // each request answered with 1 MiB it never reads
  Clock clk;
  Sock lazy(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(lazy.send_all(burst(50)));
  for (int i = 0; i < 20; ++i) server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().slow_disconnects.get(), 1u);
  EXPECT_EQ(server.clients(), 0u);
  // 2 MiB share, 1 MiB replies: the third reply (less what the socket took)
  // passes it. Nothing after the frame whose reply cut it.
  const auto& ex = h.executed[1];
  EXPECT_GE(ex.size(), 2u);
  EXPECT_LE(ex.size(), 3u);
  EXPECT_TRUE(h.seen_dead.empty());
  EXPECT_EQ(server.total_queued_bytes(), 0u);
  EXPECT_TRUE(lazy.closed_by_peer());
}

TEST(StreamServerBudget, FramesAfterTheHandlerGaveUpAreNeverExecuted) {
  const std::string name = unique_name("refuse");
  StreamControlServer server(address_of(name), budget_config());
  FakeHandler h;
  h.refuse_after = 5;
  Clock clk;
  Sock bad(raw_connect(name));
  Sock good(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(bad.send_all(burst(100)));
  ASSERT_TRUE(good.send_all(burst(3)));
  for (int i = 0; i < 30; ++i) server.poll(h, clk.tick());
  EXPECT_EQ(h.executed[1].size(), 5u) << "the frame the handler refused is the last one";
  EXPECT_EQ(h.executed[2].size(), 3u) << "the other client is served";
  EXPECT_EQ(server.stats().handler_disconnects.get(), 1u);
  EXPECT_EQ(server.clients(), 1u);
}

TEST(StreamServerMemory, AClientPastItsShareIsCutOthersKeepTheirReplies) {
  const std::string name = unique_name("share");
  StreamServerConfig cfg;
  cfg.client_reply_bytes = 1u << 20;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.reply_bytes = 300u << 10;
  Clock clk;
  Sock lazy(raw_connect(name));
  Sock reader(raw_connect(name));
  server.poll(h, clk.tick());
  wire::FrameAssembler rin;
  std::vector<Bytes> got;
  for (uint32_t i = 0; i < 20 && server.stats().slow_disconnects.get() == 0; ++i) {
    ASSERT_TRUE(lazy.send_all(frame_of(44, i)));
    ASSERT_TRUE(reader.send_all(frame_of(44, i)));
    server.poll(h, clk.tick());
    ASSERT_TRUE(reader.drain(rin, got));
  }
  EXPECT_EQ(server.stats().slow_disconnects.get(), 1u);
  EXPECT_EQ(server.stats().memory_cutoffs.get(), 0u);
  EXPECT_EQ(h.disconnects, std::vector<ClientId>{1});
  EXPECT_EQ(server.queued_bytes(1), 0u);
  // The reader keeps being served.
  ASSERT_TRUE(reader.send_all(frame_of(44, 99)));
  for (int i = 0; i < 50 && (got.empty() || rid_of(got.back()) != 99); ++i) {
    server.poll(h, clk.tick());
    ASSERT_TRUE(reader.drain(rin, got));
  }
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(rid_of(got.back()), 99u);
  EXPECT_EQ(server.clients(), 1u);
}

TEST(StreamServerMemory, TheGlobalBudgetCutsTheClientHoldingTheMost) {
  const std::string name = unique_name("global");
  StreamServerConfig cfg;
  cfg.reply_budget_bytes = 8u << 20;
  cfg.client_reply_bytes = 4u << 20;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  // Each under its share, together (less what the sockets take, ~0.4 MiB
  // each at most) over the budget.
  h.reply_for = {{1, 3900u << 10}, {2, 3300u << 10}, {3, 2700u << 10}};
  Clock clk;
  std::vector<Sock> lazy;
  for (int i = 0; i < 3; ++i) lazy.emplace_back(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_EQ(server.clients(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(lazy[i].send_all(frame_of(44, static_cast<uint32_t>(i))));
    for (int k = 0; k < 3; ++k) server.poll(h, clk.tick());
  }
  EXPECT_EQ(server.stats().memory_cutoffs.get(), 1u);
  EXPECT_EQ(server.stats().slow_disconnects.get(), 0u);
  EXPECT_EQ(h.disconnects, std::vector<ClientId>{1}) << "the one holding the most";
  EXPECT_LE(server.total_queued_bytes(), cfg.reply_budget_bytes);
  EXPECT_GT(server.queued_bytes(2), 0u);
  EXPECT_GT(server.queued_bytes(3), 0u);
  // Memory held is whole frames; queued_bytes is what the client has yet to take of them.
  EXPECT_GE(server.total_queued_bytes(), server.queued_bytes(2) + server.queued_bytes(3));
}

#if defined(__GLIBC__)
// Bytes the allocator has handed out: heap chunks and mmapped ones (large
// replies are mmapped until glibc's threshold has grown past them).
size_t allocated() {
  const auto m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}
#endif

TEST(StreamServerMemory, MemoryIsGivenBackWhenClientsLeave) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "mallinfo2 sees nothing under a sanitizer (it replaces malloc)";
#endif
  const std::string name = unique_name("release");
  StreamControlServer server(address_of(name));
  FakeHandler h;
  h.reply_bytes = 3584u << 10;
  Clock clk;
#if defined(__GLIBC__)
  ::malloc_trim(0);
  const size_t in_use0 = allocated();
#endif
  {
    std::vector<Sock> lazy;
    for (int i = 0; i < 4; ++i) lazy.emplace_back(raw_connect(name));
    server.poll(h, clk.tick());
    for (auto& s : lazy) ASSERT_TRUE(s.send_all(frame_of(44, 1)));
    for (int i = 0; i < 5; ++i) server.poll(h, clk.tick());
    ASSERT_EQ(server.clients(), 4u);
    EXPECT_GT(server.total_queued_bytes(), 10u << 20);
#if defined(__GLIBC__)
    EXPECT_GT(allocated(), in_use0 + (10u << 20));
#endif
  }  // the four close their ends
  for (int i = 0; i < 10 && server.clients() > 0; ++i) server.poll(h, clk.tick());
  EXPECT_EQ(server.clients(), 0u);
  EXPECT_EQ(server.total_queued_bytes(), 0u);
  EXPECT_EQ(server.buffer_capacity_bytes(), 0u);
  EXPECT_EQ(server.stats().peer_disconnects.get(), 4u);
#if defined(__GLIBC__)
  EXPECT_LT(allocated(), in_use0 + (1u << 20)) << "the reply queues are freed, not kept as capacity";
#endif
}

TEST(StreamServerMemory, AFrameAssemblerDoesNotKeepALargeBuffer) {
  wire::FrameAssembler a;
  const Bytes big = frame_of(4u << 20, 1);
  a.append(big);
  std::span<const std::byte> f;
  ASSERT_EQ(a.next(f), wire::FrameAssembler::Status::kFrame);
  EXPECT_EQ(f.size(), big.size());
  EXPECT_EQ(a.next(f), wire::FrameAssembler::Status::kNeedMore);
  EXPECT_LE(a.capacity(), wire::FrameAssembler::kRetainBytes) << "a drained buffer gives a large one back";
  // A large frame followed by part of a small one: compaction shrinks.
  const Bytes small = frame_of(100, 2);
  a.append(big);
  a.append(std::span<const std::byte>(small).first(50));
  ASSERT_EQ(a.next(f), wire::FrameAssembler::Status::kFrame);
  EXPECT_EQ(a.next(f), wire::FrameAssembler::Status::kNeedMore);
  EXPECT_LE(a.capacity(), wire::FrameAssembler::kRetainBytes);
  a.append(std::span<const std::byte>(small).subspan(50));
  ASSERT_EQ(a.next(f), wire::FrameAssembler::Status::kFrame);
  EXPECT_EQ(rid_of(f), 2u);
  // A prefix over the limit is refused on its 4 bytes, before any body.
  wire::FrameAssembler b(1000);
  b.append(std::span<const std::byte>(frame_of(1001, 3)).first(4));
  EXPECT_EQ(b.peek(), wire::FrameAssembler::Status::kBadFrame);
  EXPECT_EQ(b.declared_length(), 1001u);
  b.set_max_frame(2000);
  EXPECT_EQ(b.peek(), wire::FrameAssembler::Status::kNeedMore);
}

TEST(StreamServerWritable, AStreamedReplyContinuesAsTheQueueDrains) {
  const std::string name = unique_name("writable");
  StreamServerConfig cfg;
  cfg.client_reply_bytes = 1u << 20;  // on_writable below 512 KiB
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.stream_chunks = 64;  // 4 MiB in all, four times the share
  h.stream_share = 512u << 10;
  Clock clk;
  Sock s(raw_connect(name));
  server.poll(h, clk.tick());
  ASSERT_TRUE(s.send_all(frame_of(44, 1, wire::CtlType::kSnapshotRequest)));
  wire::FrameAssembler in;
  std::vector<Bytes> got;
  for (int i = 0; i < 10000 && got.size() < 64; ++i) {
    server.poll(h, clk.tick());
    ASSERT_TRUE(s.drain(in, got, 128u << 10));  // a slow reader: 128 KiB per poll
  }
  ASSERT_EQ(got.size(), 64u);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(rid_of(got[i]), i);
  EXPECT_GT(h.writable_calls, 0u);
  EXPECT_EQ(server.stats().writable_calls.get(), h.writable_calls);
  EXPECT_EQ(server.stats().slow_disconnects.get(), 0u);
  EXPECT_EQ(server.clients(), 1u);
  EXPECT_FALSE(h.has_pending(1));
}

TEST(StreamServerWritable, AHandlerThatProducesLittlePerCallIsCalledAgainBoundedPerPoll) {
  const std::string name = unique_name("writable1");
  StreamServerConfig cfg;
  cfg.writable_calls_per_poll = 2;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.stream_chunks = 20;
  h.stream_chunk_bytes = 1000;
  h.chunks_per_call = 1;  // the queue stays empty: no EPOLLOUT would ever come
  Clock clk;
  std::vector<Sock> socks;
  for (int i = 0; i < 3; ++i) socks.emplace_back(raw_connect(name));
  server.poll(h, clk.tick());
  for (auto& s : socks) ASSERT_TRUE(s.send_all(frame_of(44, 1, wire::CtlType::kSnapshotRequest)));
  server.poll(h, clk.tick());  // the requests: one chunk each
  ASSERT_LE(h.writable_calls, 2u);  // and, in the same poll, the first continuations
  size_t polls = 0;
  while ((h.has_pending(1) || h.has_pending(2) || h.has_pending(3)) && polls < 1000) {
    const size_t before = h.writable_calls;
    server.poll(h, clk.tick());
    ++polls;
    ASSERT_LE(h.writable_calls - before, 2u);
  }
  EXPECT_EQ(h.writable_calls, 3u * 19u);
  for (auto& s : socks) {
    wire::FrameAssembler in;
    std::vector<Bytes> got;
    ASSERT_TRUE(s.drain(in, got));
    EXPECT_EQ(got.size(), 20u);
  }
}

}  // namespace
}  // namespace mdcast::media::test
