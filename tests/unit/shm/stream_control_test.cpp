// The stream control transport with a real ControlService: requests get
// answers; a hostile client is cut off without disturbing another; a client
// that never reads its replies is disconnected instead of growing memory.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {
namespace {

feed::PublisherConfig small_pub() {
  feed::PublisherConfig c;
  c.session = 77;
  c.retransmit_bytes = 1u << 20;
  c.books = {64, 4096, 64};
  return c;
}

int raw_connect(const std::string& abstract_name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path + 1, abstract_name.data(), abstract_name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&un), len), 0);
  return fd;
}

struct Collector {
  std::vector<std::vector<std::byte>> frames;
  void operator()(std::span<const std::byte> f) { frames.emplace_back(f.begin(), f.end()); }
};

TEST(StreamControl, SubscribeOverAUnixSocket) {
  const std::string name = fmt::format("mdcast-ut/{}/a", ::getpid());
  feed::PublisherCore core(small_pub());
  feed::ControlService svc({}, core);
  StreamControlServer server("unix:@" + name);
  StreamControlClient client("unix:@" + name);
  Collector got;
  bool connected = false;
  for (int i = 0; i < 200 && got.frames.empty(); ++i) {
    const uint64_t now = monotonic_ns();
    auto ev = client.poll(now, [&](std::span<const std::byte> f) { got(f); });
    if (ev.connected) {
      connected = true;
      wire::Subscribe s;
      s.channel = 1;
      ASSERT_TRUE(client.send(wire::encode_control(5, s)));
    }
    server.poll(svc, now);
    usleep(1000);
  }
  ASSERT_TRUE(connected);
  ASSERT_EQ(got.frames.size(), 1u);
  auto f = wire::parse_control(got.frames[0], nullptr);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->request_id, 5u);
  ASSERT_TRUE(std::holds_alternative<wire::SubscribeAck>(f->body));
  EXPECT_EQ(std::get<wire::SubscribeAck>(f->body).session, 77u);
}

TEST(StreamControl, GarbageStreamIsCutOffOthersUnaffected) {
  const std::string name = fmt::format("mdcast-ut/{}/b", ::getpid());
  feed::PublisherCore core(small_pub());
  feed::ControlService svc({}, core);
  StreamControlServer server("unix:@" + name);
  const int bad = raw_connect(name);
  const int good = raw_connect(name);
  server.poll(svc, monotonic_ns());
  EXPECT_EQ(server.clients(), 2u);
  // A length field no frame can have.
  const uint8_t junk[16] = {0xff, 0xff, 0xff, 0x7f, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(::send(bad, junk, sizeof junk, 0), 16);
  wire::Subscribe s;
  s.channel = 1;
  auto frame = wire::encode_control(9, s);
  ASSERT_EQ(::send(good, frame.data(), frame.size(), 0), static_cast<ssize_t>(frame.size()));
  for (int i = 0; i < 20; ++i) {
    server.poll(svc, monotonic_ns());
    usleep(1000);
  }
  EXPECT_EQ(server.clients(), 1u);
  EXPECT_EQ(server.stats().bad_stream_disconnects.get(), 1u);
  char buf[256];
  const ssize_t n = ::recv(good, buf, sizeof buf, MSG_DONTWAIT);
  EXPECT_EQ(n, 40) << "the good client gets its SubscribeAck";
  ::close(bad);
  ::close(good);
}

TEST(StreamControl, AClientThatNeverReadsIsDisconnectedNotBuffered) {
  const std::string name = fmt::format("mdcast-ut/{}/c", ::getpid());
  feed::PublisherCore core(small_pub());
  // Books worth snapshotting: ~3000 orders, ~70 KiB per snapshot reply.
  for (uint32_t i = 0; i < 3000; ++i) {
    auto m = wire::Message::make_add(i % 50, i + 1, 1000 + (i % 40), 100, i % 2 ? wire::Side::kBuy : wire::Side::kSell);
    ASSERT_EQ(core.stage(m, 1), feed::PublishResult::kOk);
    if (core.next_unsent() + 100 < core.last_committed()) core.mark_sent(core.last_committed(), 0, 1);
  }
  feed::ControlService svc({}, core);
  StreamControlServer server("unix:@" + name, /*max_out_bytes=*/256 * 1024);
  const int lazy = raw_connect(name);
  int small = 4096;
  ::setsockopt(lazy, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  wire::Subscribe s;
  s.channel = 1;
  auto sub = wire::encode_control(1, s);
  ASSERT_GT(::send(lazy, sub.data(), sub.size(), 0), 0);
  server.poll(svc, monotonic_ns());
  ASSERT_EQ(server.clients(), 1u);
  // Snapshot requests produce replies it never reads.
  auto snap = wire::encode_control(2, wire::SnapshotRequest{});
  for (int i = 0; i < 2000 && server.clients() > 0; ++i) {
    if (::send(lazy, snap.data(), snap.size(), MSG_DONTWAIT) < 0) break;
    server.poll(svc, monotonic_ns());
  }
  for (int i = 0; i < 10; ++i) server.poll(svc, monotonic_ns());
  EXPECT_EQ(server.clients(), 0u) << "frames in " << server.stats().frames_in.get() << " out " << server.stats().frames_out.get()
                                  << " bytes out " << server.stats().bytes_out.get();
  EXPECT_EQ(server.stats().slow_disconnects.get(), 1u);
  ::close(lazy);
}

// What a caller checks before it talks: who listens at the other end.
TEST(StreamControl, TheClientKnowsWhoListensOnAUnixSocket) {
  const std::string name = fmt::format("mdcast-ut/{}/peer", ::getpid());
  StreamControlServer unix_server("unix:@" + name);
  StreamControlServer tcp_server("tcp:127.0.0.1:0");
  StreamControlClient over_unix("unix:@" + name);
  StreamControlClient over_tcp(tcp_server.address());
  EXPECT_FALSE(over_unix.peer()) << "not connected yet";
  const uint64_t until = monotonic_ns() + 5 * kNsPerSec;
  while ((!over_unix.connected() || !over_tcp.connected()) && monotonic_ns() < until) {
    const uint64_t now = monotonic_ns();
    (void)over_unix.poll(now, [](std::span<const std::byte>) {});
    (void)over_tcp.poll(now, [](std::span<const std::byte>) {});
    ::usleep(1000);
  }
  ASSERT_TRUE(over_unix.connected());
  ASSERT_TRUE(over_tcp.connected());
  const auto p = over_unix.peer();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid, ::getpid());
  EXPECT_EQ(p->uid, ::geteuid());
  EXPECT_FALSE(over_tcp.peer()) << "TCP says nothing about who listens";
}

TEST(StreamControl, MalformedAddressesAreExplained) {
  EXPECT_THROW(SocketAddress::parse("bogus"), Error);
  EXPECT_THROW(SocketAddress::parse("tcp:nohostport"), Error);
  EXPECT_THROW(SocketAddress::parse("unix:"), Error);
  EXPECT_EQ(SocketAddress::parse("tcp:127.0.0.1:9000").family, AF_INET);
}

}  // namespace
}  // namespace mdcast::media
