// The shared control endpoint of a publisher of several channels: a
// connection reaches the server of the channel its first frame names, with
// nothing read from it; everything else is told why and closed, counted; what
// waits to name its channel is bounded in number and time; the inbox between
// the door and a channel's thread holds 64 and gives back what it held.
#include <gtest/gtest.h>
#include <fcntl.h>

#include <atomic>
#include <thread>

#include "mdcast/core/error.hpp"
#include "mdcast/wire/auth.hpp"
#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

Bytes subscribe_frame(uint16_t channel, uint32_t rid = 7) {
  wire::Subscribe s;
  s.channel = channel;
  return wire::encode_control(rid, s);
}

// The Error a closed connection was told, or nullopt if none.
std::optional<wire::ErrorReply> error_told(const Sock& s) {
  wire::FrameAssembler in;
  std::vector<Bytes> frames;
  (void)s.drain(in, frames);
  for (const auto& f : frames)
    if (auto p = wire::parse_control(f, nullptr))
      if (const auto* e = std::get_if<wire::ErrorReply>(&p->body)) return *e;
  return std::nullopt;
}

// A door on channels 1 and 2 and each channel's server, polled in turn.
struct Fixture {
  std::string name;
  ControlFrontDoor door;
  StreamControlServer one, two;
  FakeHandler h1, h2;
  Clock clk;
  explicit Fixture(const char* tag, FrontDoorConfig fc = {})
      : name(unique_name(tag)),
        door(address_of(name), fc),
        one(door.address(), {}, door.add_channel(1)),
        two(door.address(), {}, door.add_channel(2)) {}
  void poll_all(int rounds = 3) {
    for (int i = 0; i < rounds; ++i) {
      const uint64_t now = clk.tick();
      door.poll(now);
      one.poll(h1, now);
      two.poll(h2, now);
    }
  }
};

TEST(FrontDoorRoute, ReadsTheChannelOfSubscribeAndAuthHelloOnly) {
  using Kind = wire::FirstFrameRoute::Kind;
  const Bytes sub = subscribe_frame(513);
  for (size_t n = 0; n < wire::ctl::kRouteBytes; ++n)
    EXPECT_EQ(wire::route_first_frame({sub.data(), n}).kind, Kind::kNeedMore) << n << " bytes of a good Subscribe";
  // A header alone that cannot be a Subscribe or AuthHello is refused at once.
  Bytes zero_length = sub;
  store_le<uint32_t>(zero_length.data(), 0);
  EXPECT_EQ(wire::route_first_frame({zero_length.data(), 4}).kind, Kind::kBad);
  EXPECT_EQ(wire::route_first_frame({wire::encode_control(1, wire::SessionQuery{}).data(), 5}).kind, Kind::kBad);
  const auto r = wire::route_first_frame(sub);
  EXPECT_EQ(r.kind, Kind::kChannel);
  EXPECT_EQ(r.channel, 513);
  wire::AuthHello hello;
  hello.channel = 4;
  hello.identity = "desk-7";
  const auto a = wire::route_first_frame(wire::encode_auth(1, hello));
  EXPECT_EQ(a.kind, Kind::kChannel);
  EXPECT_EQ(a.channel, 4);
  const auto status = wire::route_first_frame(wire::encode_control(1, wire::StatusReport{}));
  EXPECT_EQ(status.kind, Kind::kBad);
  EXPECT_NE(std::string(status.why).find("Subscribe or AuthHello"), std::string::npos) << status.why;
  EXPECT_EQ(wire::route_first_frame(wire::encode_control(1, wire::RetransmitRequest{})).kind, Kind::kBad);
  Bytes old_version = sub;
  old_version[wire::ctl::kVersion] = std::byte{1};
  EXPECT_EQ(wire::route_first_frame(old_version).kind, Kind::kBad);
  Bytes short_sub = frame_of(16, 1, wire::CtlType::kSubscribe);  // shorter than its fixed fields
  short_sub[wire::ctl::kVersion] = std::byte{wire::kVersion};
  EXPECT_EQ(wire::route_first_frame(short_sub).kind, Kind::kBad);
  Bytes huge = sub;
  store_le<uint32_t>(huge.data(), static_cast<uint32_t>(wire::ctl::kMaxFrame + 1));
  EXPECT_EQ(wire::route_first_frame(huge).kind, Kind::kBad);
}

TEST(FrontDoor, EachConnectionReachesTheServerOfTheChannelItNamesAndStaysThere) {
  Fixture f("route");
  Sock a(raw_connect(f.name)), b(raw_connect(f.name));
  ASSERT_GE(a.fd, 0);
  ASSERT_GE(b.fd, 0);
  ASSERT_TRUE(a.send_all(subscribe_frame(2, 11)));
  ASSERT_TRUE(b.send_all(subscribe_frame(1, 22)));
  f.poll_all();
  EXPECT_EQ(f.door.stats().routed.get(), 2u);
  EXPECT_EQ(f.door.pending(), 0u);
  ASSERT_EQ(f.one.clients(), 1u);
  ASSERT_EQ(f.two.clients(), 1u);
  ASSERT_EQ(f.h1.executed.size(), 1u);
  ASSERT_EQ(f.h2.executed.size(), 1u);
  EXPECT_EQ(f.h1.executed.begin()->second, std::vector<uint32_t>{22}) << "the first frame, whole: nothing was taken";
  EXPECT_EQ(f.h2.executed.begin()->second, std::vector<uint32_t>{11});
  // Later frames go where the first went; replies come back on the socket.
  ASSERT_TRUE(a.send_all(frame_of(44, 12)));
  f.poll_all();
  EXPECT_EQ(f.h2.executed.begin()->second, (std::vector<uint32_t>{11, 12}));
  EXPECT_EQ(f.h1.frames, 1u);
  wire::FrameAssembler in;
  std::vector<Bytes> replies;
  ASSERT_TRUE(a.drain(in, replies));
  ASSERT_FALSE(replies.empty());
  EXPECT_EQ(static_cast<wire::CtlType>(replies[0][4]), wire::CtlType::kSubscribeAck);
  EXPECT_EQ(rid_of(replies[0]), 11u);
}

TEST(FrontDoor, AnAuthHelloIsRoutedLikeASubscribe) {
  Fixture f("hello");
  Sock a(raw_connect(f.name));
  wire::AuthHello hello;
  hello.channel = 2;
  hello.identity = "desk-7";
  ASSERT_TRUE(a.send_all(wire::encode_auth(5, hello)));
  f.poll_all();
  EXPECT_EQ(f.two.clients(), 1u);
  EXPECT_EQ(f.h2.frames, 1u);
  EXPECT_EQ(f.h1.frames, 0u);
}

TEST(FrontDoor, AnUnknownChannelIsToldWhichChannelsThereAreAndClosed) {
  Fixture f("unknown");
  Sock a(raw_connect(f.name));
  ASSERT_TRUE(a.send_all(subscribe_frame(9, 3)));
  f.poll_all();
  const auto e = error_told(a);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, wire::ErrorCode::kUnknownChannel);
  EXPECT_NE(e->text.find("channels 1 to 2"), std::string::npos) << e->text;
  EXPECT_NE(e->text.find("channel 9"), std::string::npos) << e->text;
  EXPECT_TRUE(a.closed_by_peer());
  EXPECT_EQ(f.door.stats().unknown_channel.get(), 1u);
  EXPECT_EQ(f.one.clients() + f.two.clients(), 0u);
  EXPECT_EQ(f.h1.frames + f.h2.frames, 0u);
}

TEST(FrontDoor, AFirstFrameThatNamesNoChannelIsRefusedWithTheReason) {
  Fixture f("badfirst");
  Sock a(raw_connect(f.name)), g(raw_connect(f.name));
  ASSERT_TRUE(a.send_all(wire::encode_control(1, wire::StatusReport{})));
  Bytes junk(64, std::byte{0xab});
  ASSERT_TRUE(g.send_all(junk));
  f.poll_all();
  const auto e = error_told(a);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, wire::ErrorCode::kMalformed);
  EXPECT_NE(e->text.find("Subscribe or AuthHello"), std::string::npos) << e->text;
  EXPECT_TRUE(a.closed_by_peer());
  EXPECT_TRUE(g.closed_by_peer());
  EXPECT_EQ(f.door.stats().bad_first_frame.get(), 2u);
  EXPECT_EQ(f.h1.frames + f.h2.frames, 0u);
}

TEST(FrontDoor, AFirstFrameInPiecesIsRoutedOnceItsChannelIsIn) {
  Fixture f("pieces");
  Sock a(raw_connect(f.name));
  const Bytes sub = subscribe_frame(1, 42);
  ASSERT_TRUE(a.send_all({sub.data(), 5}));
  f.poll_all();
  EXPECT_EQ(f.door.pending(), 1u);
  EXPECT_EQ(f.one.clients(), 0u);
  ASSERT_TRUE(a.send_all({sub.data() + 5, 9}));  // 14 bytes: the channel is in, the frame is not whole
  f.poll_all();
  EXPECT_EQ(f.door.pending(), 0u);
  ASSERT_EQ(f.one.clients(), 1u);
  EXPECT_EQ(f.h1.frames, 0u);
  ASSERT_TRUE(a.send_all({sub.data() + 14, sub.size() - 14}));
  f.poll_all();
  ASSERT_EQ(f.h1.frames, 1u);
  EXPECT_EQ(f.h1.executed.begin()->second, std::vector<uint32_t>{42});
}

TEST(FrontDoor, ASilentConnectionIsClosedAtTheTimeoutAndOneThatHangsUpAtOnce) {
  FrontDoorConfig fc;
  fc.first_frame_timeout_ns = 2 * kNsPerSec;
  Fixture f("silent", fc);
  Sock quiet(raw_connect(f.name)), gone(raw_connect(f.name));
  ASSERT_TRUE(gone.send_all(Bytes(3, std::byte{0})));  // three bytes of a header, then nothing more
  ::shutdown(gone.fd, SHUT_WR);
  f.poll_all();
  EXPECT_EQ(f.door.stats().peer_closed.get(), 1u);
  EXPECT_EQ(f.door.pending(), 1u);
  EXPECT_FALSE(quiet.closed_by_peer());
  f.clk.tick(kNsPerSec);
  f.poll_all();
  EXPECT_EQ(f.door.pending(), 1u) << "not before its time";
  f.clk.tick(kNsPerSec);
  f.poll_all();
  EXPECT_EQ(f.door.pending(), 0u);
  EXPECT_EQ(f.door.stats().timeouts.get(), 1u);
  EXPECT_TRUE(quiet.closed_by_peer());
}

TEST(FrontDoor, ConnectionsThatNameNoChannelAreHeldToMaxPendingAndOthersStillGetIn) {
  FrontDoorConfig fc;
  fc.max_pending = 4;
  Fixture f("bounded", fc);
  std::vector<Sock> idle;
  for (int i = 0; i < 10; ++i) idle.emplace_back(raw_connect(f.name));
  f.poll_all();
  EXPECT_EQ(f.door.pending(), 4u);
  EXPECT_EQ(f.door.stats().evicted.get(), 6u);
  EXPECT_TRUE(idle.front().closed_by_peer()) << "the oldest go first";
  EXPECT_FALSE(idle.back().closed_by_peer());
  Sock real(raw_connect(f.name));
  ASSERT_TRUE(real.send_all(subscribe_frame(2)));
  f.poll_all();
  EXPECT_EQ(f.two.clients(), 1u);
  EXPECT_EQ(f.h2.frames, 1u);
}

TEST(FrontDoor, AChannelWhoseThreadTakesNothingUpTurnsTheNextConnectionAwayWithOverloaded) {
  const std::string name = unique_name("full");
  ControlFrontDoor door(address_of(name));
  auto inbox = door.add_channel(1);  // no server takes from it
  std::vector<Sock> socks;
  Clock clk;
  for (size_t i = 0; i <= ConnectionInbox::kCapacity; ++i) {
    socks.emplace_back(raw_connect(name));
    ASSERT_TRUE(socks.back().send_all(subscribe_frame(1)));
    door.poll(clk.tick());
  }
  EXPECT_EQ(door.stats().routed.get(), ConnectionInbox::kCapacity);
  EXPECT_EQ(door.stats().inbox_full.get(), 1u);
  const auto e = error_told(socks.back());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, wire::ErrorCode::kOverloaded);
  EXPECT_FALSE(inbox->empty());
}

TEST(FrontDoor, WorksOverTcpAndTheReasonForARefusalArrives) {
  ControlFrontDoor door("tcp:127.0.0.1:0");
  StreamControlServer one(door.address(), {}, door.add_channel(1));
  ASSERT_NE(door.address(), "tcp:127.0.0.1:0") << "the port the kernel picked";
  FakeHandler h;
  Clock clk;
  StreamControlClient good(door.address()), bad(door.address());
  std::vector<Bytes> got_good, got_bad;
  bool sent_good = false, sent_bad = false;
  for (int i = 0; i < 2000 && (got_good.empty() || got_bad.empty()); ++i) {
    const uint64_t now = clk.tick();
    const auto eg = good.poll(now, [&](std::span<const std::byte> fr) { got_good.emplace_back(fr.begin(), fr.end()); });
    const auto eb = bad.poll(now, [&](std::span<const std::byte> fr) { got_bad.emplace_back(fr.begin(), fr.end()); });
    if (eg.connected && !sent_good) sent_good = good.send(subscribe_frame(1, 1));
    if (eb.connected && !sent_bad) sent_bad = bad.send(subscribe_frame(3, 2));
    door.poll(now);
    one.poll(h, now);
    if (i % 10 == 9) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(got_good.empty());
  EXPECT_EQ(static_cast<wire::CtlType>(got_good[0][4]), wire::CtlType::kSubscribeAck);
  ASSERT_FALSE(got_bad.empty());
  const auto p = wire::parse_control(got_bad[0], nullptr);
  ASSERT_TRUE(p.has_value());
  ASSERT_TRUE(std::holds_alternative<wire::ErrorReply>(p->body));
  EXPECT_EQ(std::get<wire::ErrorReply>(p->body).code, wire::ErrorCode::kUnknownChannel);
}

// The door on this thread, each channel's server on a thread of its own, as
// mdcast publish runs them.
TEST(FrontDoor, ServersOnOtherThreadsAdoptWhatTheDoorRoutes) {
  const std::string name = unique_name("threads");
  ControlFrontDoor door(address_of(name));
  constexpr int kChannels = 3, kClientsEach = 20;
  std::vector<std::shared_ptr<ConnectionInbox>> inboxes;
  for (int c = 0; c < kChannels; ++c) inboxes.push_back(door.add_channel(static_cast<uint16_t>(10 + c)));
  std::atomic<bool> stop{false};
  std::atomic<int> subscribed[kChannels] = {};
  std::vector<std::thread> threads;
  for (int c = 0; c < kChannels; ++c)
    threads.emplace_back([&, c] {
      StreamControlServer server(door.address(), {}, inboxes[c]);
      FakeHandler h;
      while (!stop.load()) {
        server.poll(h, monotonic_ns());
        subscribed[c].store(static_cast<int>(h.executed.size()));
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
  std::vector<Sock> socks;
  for (int i = 0; i < kChannels * kClientsEach; ++i) {
    socks.emplace_back(raw_connect(name));
    ASSERT_TRUE(socks.back().send_all(subscribe_frame(static_cast<uint16_t>(10 + i % kChannels))));
  }
  const uint64_t give_up = monotonic_ns() + 20 * kNsPerSec;
  auto all_in = [&] {
    for (auto& s : subscribed)
      if (s.load() < kClientsEach) return false;
    return true;
  };
  while (!all_in() && monotonic_ns() < give_up) door.poll(monotonic_ns(), kNsPerMs);
  stop = true;
  for (auto& t : threads) t.join();
  for (int c = 0; c < kChannels; ++c) EXPECT_EQ(subscribed[c].load(), kClientsEach) << "channel " << 10 + c;
  EXPECT_EQ(door.stats().routed.get(), static_cast<uint64_t>(kChannels * kClientsEach));
}

TEST(ConnectionInbox, HandsDescriptorsOverInOrderHolds64AndClosesWhatIsLeft) {
  std::vector<int> fds;
  {
    ConnectionInbox inbox(1);
    EXPECT_TRUE(inbox.empty());
    for (size_t i = 0; i < ConnectionInbox::kCapacity; ++i) {
      UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      ASSERT_TRUE(fd);
      fds.push_back(fd.get());
      ASSERT_TRUE(inbox.push(fd));
      EXPECT_FALSE(fd) << "taken";
    }
    UniqueFd extra(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    EXPECT_FALSE(inbox.push(extra));
    EXPECT_TRUE(extra) << "a full inbox leaves it with the caller";
    UniqueFd first = inbox.pop();
    EXPECT_EQ(first.get(), fds[0]);
    UniqueFd second = inbox.pop();
    EXPECT_EQ(second.get(), fds[1]);
    EXPECT_TRUE(inbox.push(extra));
  }
  // fds[0] and fds[1] were closed by their owners; the rest by the inbox.
  for (size_t i = 2; i < fds.size(); ++i) EXPECT_EQ(::fcntl(fds[i], F_GETFD), -1) << "fd " << fds[i] << " left open";
}

TEST(FrontDoor, AChannelAddedTwiceIsRefused) {
  ControlFrontDoor door(address_of(unique_name("twice")));
  (void)door.add_channel(3);
  EXPECT_THROW((void)door.add_channel(3), Error);
}

}  // namespace
}  // namespace mdcast::media::test
