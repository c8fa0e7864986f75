// The shm medium's control plane: a subscriber talks only to the ring's
// writer. Whoever else serves the control address the header names (another
// process, a TCP port) is refused before a single byte leaves, counted, and
// reported; the engine never hears of the connection.
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media::shm {
namespace {

std::string unique_name(const char* what) { return fmt::format("ut-med-{}-{}", what, ::getpid()); }

Options opts(const std::string& name) {
  Options o;
  o.name = name;
  o.dir = "/dev/shm";
  o.slots = 64;
  o.huge_pages = false;
  o.wait_ns = kNsPerSec;
  return o;
}

RingOptions ring_opts(const std::string& name) {
  RingOptions r;
  r.name = name;
  r.dir = "/dev/shm";
  r.slots = 64;
  r.huge_pages = false;
  return r;
}

std::vector<std::byte> a_frame() {
  wire::Subscribe s;
  s.channel = 1;
  return wire::encode_control(5, s);
}

// The engine's side, as the medium reports to it. It tries to talk as soon
// and as often as it can.
struct Engine final : ControlEvents {
  SubscriberMedium* medium = nullptr;
  int connected = 0, disconnected = 0, frames = 0;
  bool sent_on_connect = false;
  void on_control_connected(uint64_t) noexcept override {
    ++connected;
    sent_on_connect = medium->control().send(a_frame());
  }
  void on_control_disconnected() noexcept override { ++disconnected; }
  void on_control_frame(std::span<const std::byte>, uint64_t) noexcept override { ++frames; }
  void on_retransmitted(uint32_t, uint64_t, std::span<const std::span<const std::byte>>, uint64_t) noexcept override {}
};

// A publisher's control side that answers every frame with itself.
struct Echo final : ControlHandler {
  int connects = 0, frames = 0;
  void on_connect(ClientId, uint64_t) override { ++connects; }
  void on_disconnect(ClientId) override {}
  bool on_frame(ClientId c, std::span<const std::byte> f, uint64_t, ReplySink& out) override {
    ++frames;
    out.send(c, std::vector<std::byte>(f.begin(), f.end()));
    return true;
  }
};

TEST(ShmMedium, TheControlAddressIsUnguessableAndPublishedInTheRing) {
  Options o = opts(unique_name("addr"));
  const std::string a = new_control_address(o), b = new_control_address(o);
  EXPECT_NE(a, b);
  // unix:@mdcast/<name>.<16 hex digits> (no std::regex: GCC 12 warns inside it under -O2 + ASan)
  const std::string prefix = "unix:@mdcast/" + o.name + ".";
  ASSERT_EQ(a.size(), prefix.size() + 16) << a;
  EXPECT_EQ(a.substr(0, prefix.size()), prefix) << a;
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef", prefix.size()), std::string::npos) << a;
  o.control = "unix:@explicit";
  EXPECT_EQ(new_control_address(o), "unix:@explicit");
  o.control.clear();
  PublisherMedium pub(o, 9);
  EXPECT_EQ(pub.server().address().rfind("unix:@mdcast/" + o.name + ".", 0), 0u);
  RingReader r(pub.ring().path());
  EXPECT_EQ(std::string(r.header().control), pub.server().address());
}

TEST(ShmMedium, ASubscriberTalksToItsRingsWriter) {
  const Options o = opts(unique_name("good"));
  PublisherMedium pub(o, 9);
  SubscriberMedium sub(o);
  Engine engine;
  engine.medium = &sub;
  Echo echo;
  const uint64_t deadline = monotonic_ns() + 5 * kNsPerSec;
  while (engine.frames == 0 && monotonic_ns() < deadline) {
    const uint64_t now = monotonic_ns();
    sub.poll_control(engine, now);
    pub.poll_control(echo, now);
    ::usleep(1000);
  }
  EXPECT_EQ(engine.connected, 1);
  EXPECT_TRUE(engine.sent_on_connect);
  EXPECT_EQ(echo.frames, 1);
  EXPECT_EQ(engine.frames, 1);
  EXPECT_EQ(sub.counters().peer_refused.get(), 0u);
  EXPECT_TRUE(sub.peer_error().empty());
}

// A squatter serving the address a ring names (here: a child process, not
// the ring's writer) hears nothing from the subscriber.
TEST(ShmMedium, AControlPeerThatIsNotTheWriterHearsNothing) {
  const std::string name = unique_name("squat");
  const std::string addr = fmt::format("unix:@mdcast-ut/{}/squat", ::getpid());
  RingWriter ring(ring_opts(name), 1, 1, addr);  // the writer: this process
  int ready[2], stop[2], result[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(stop), 0);
  ASSERT_EQ(::pipe(result), 0);
  const pid_t squatter = ::fork();
  if (squatter == 0) {
    ::close(stop[1]);  // or the parent closing its end would never be seen
    ::close(ready[0]);
    ::close(result[0]);
    uint64_t counts[3] = {};
    try {
      StreamControlServer server(addr);
      Echo h;
      (void)!::write(ready[1], "r", 1);
      for (;;) {
        server.poll(h, monotonic_ns());
        pollfd p{stop[0], POLLIN, 0};
        if (::poll(&p, 1, 1) > 0) break;  // the parent closed its end
      }
      counts[0] = server.stats().accepted.get();
      counts[1] = server.stats().frames_in.get();
      counts[2] = server.stats().bytes_in.get();
    } catch (...) {
      _exit(1);
    }
    (void)!::write(result[1], counts, sizeof counts);
    _exit(0);
  }
  ::close(ready[1]);
  ::close(stop[0]);
  ::close(result[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the squatter did not bind";

  std::vector<std::string> logged;
  Options o = opts(name);
  o.log = [&](std::string_view s) { logged.emplace_back(s); };
  SubscriberMedium sub(o);
  Engine engine;
  engine.medium = &sub;
  int refused_sends = 0;
  const uint64_t until = monotonic_ns() + 5 * kNsPerSec;
  while (sub.counters().peer_refused.get() < 2 && monotonic_ns() < until) {
    sub.poll_control(engine, monotonic_ns());
    refused_sends += !sub.control().send(a_frame());
    ::usleep(2000);
  }
  ::close(stop[1]);
  uint64_t counts[3] = {};
  ASSERT_EQ(::read(result[0], counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
  int st = 0;
  ::waitpid(squatter, &st, 0);

  EXPECT_GE(sub.counters().peer_refused.get(), 2u) << "retried after its hold-off, refused again";
  EXPECT_EQ(engine.connected, 0) << "the engine was told of a connection to the squatter";
  EXPECT_GT(refused_sends, 0);
  EXPECT_GE(counts[0], 1u) << "the subscriber never reached the squatter: nothing was tested";
  EXPECT_EQ(counts[1], 0u) << "frames reached the squatter";
  EXPECT_EQ(counts[2], 0u) << "bytes reached the squatter";
  ASSERT_EQ(logged.size(), 1u) << "said once, however often it is refused";
  EXPECT_NE(logged[0].find(fmt::format("served by pid {}", squatter)), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find(fmt::format("written by pid {}", ::getpid())), std::string::npos) << logged[0];
  EXPECT_EQ(sub.peer_error(), logged[0]);
  ::close(ready[0]);
  ::close(result[0]);
}

// Over TCP no one can say who listens: refused, even when it is the writer.
TEST(ShmMedium, AControlAddressThatCannotBeCheckedIsNotUsed) {
  const std::string name = unique_name("tcp");
  StreamControlServer server("tcp:127.0.0.1:0");
  RingWriter ring(ring_opts(name), 1, 1, server.address());
  Options o = opts(name);
  std::vector<std::string> logged;
  o.log = [&](std::string_view s) { logged.emplace_back(s); };
  SubscriberMedium sub(o);
  Engine engine;
  engine.medium = &sub;
  Echo echo;
  const uint64_t until = monotonic_ns() + 5 * kNsPerSec;
  while (sub.counters().peer_refused.get() == 0 && monotonic_ns() < until) {
    const uint64_t now = monotonic_ns();
    sub.poll_control(engine, now);
    server.poll(echo, now);
    ::usleep(1000);
  }
  for (int i = 0; i < 20; ++i) server.poll(echo, monotonic_ns());
  EXPECT_EQ(sub.counters().peer_refused.get(), 1u);
  EXPECT_EQ(engine.connected, 0);
  EXPECT_EQ(server.stats().bytes_in.get(), 0u);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("is not a Unix socket"), std::string::npos) << logged[0];
}

}  // namespace
}  // namespace mdcast::media::shm

namespace mdcast::media::shm {
namespace {

// A publisher pair's two rings, read as two rails: each datagram comes
// with its ring's rail, and when the member the control connection goes to
// is gone, the connection moves to the other member at once.
TEST(ShmMedium, APairsTwoRingsAreTwoRailsAndControlMovesToTheMemberLeft) {
  Options a = opts(unique_name("pair-a"));
  Options b = opts(unique_name("pair-b"));
  auto member_a = std::make_unique<PublisherMedium>(a, 9);
  PublisherMedium member_b(b, 9);
  Options so = a;
  so.rail_b = b.name;
  SubscriberMedium sub(so);
  sub.start();
  const std::byte one[4] = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  member_a->sink().send(one, 1);
  member_b.sink().send(one, 1);
  member_b.sink().send(one, 2);
  std::vector<RailId> rails;
  sub.source().poll([&](std::span<const std::byte> d, uint64_t, RailId r) {
    EXPECT_EQ(d.size(), sizeof one);
    rails.push_back(r);
  }, 16);
  EXPECT_EQ(std::count(rails.begin(), rails.end(), RailId::kA), 1);
  EXPECT_EQ(std::count(rails.begin(), rails.end(), RailId::kB), 2);

  Engine engine;
  engine.medium = &sub;
  Echo echo_a, echo_b;
  auto run_until = [&](auto&& done) {
    const uint64_t deadline = monotonic_ns() + 5 * kNsPerSec;
    while (!done() && monotonic_ns() < deadline) {
      const uint64_t now = monotonic_ns();
      sub.poll_control(engine, now);
      if (member_a) member_a->poll_control(echo_a, now);
      member_b.poll_control(echo_b, now);
      ::usleep(1000);
    }
  };
  run_until([&] { return engine.frames == 1; });
  EXPECT_EQ(echo_a.frames, 1) << "rail A's member first";
  EXPECT_EQ(echo_b.frames, 0);
  EXPECT_EQ(sub.reader().path(), member_a->ring().path());

  member_a.reset();  // member A dies: its ring and its socket are gone
  run_until([&] { return engine.frames == 2; });
  EXPECT_EQ(engine.connected, 2);
  EXPECT_EQ(engine.disconnected, 1);
  EXPECT_EQ(echo_b.frames, 1) << "the request went to the member left";
  EXPECT_EQ(sub.counters().control_moved.get(), 1u);
  EXPECT_EQ(sub.counters().peer_refused.get(), 0u);
}

// Either member will do at the start: a subscriber whose rail A has no
// live writer reads rail B and talks to its writer.
TEST(ShmMedium, APairSubscriberStartsWithWhicheverMemberLives) {
  Options a = opts(unique_name("only-a"));
  Options b = opts(unique_name("only-b"));
  PublisherMedium member_b(b, 9);
  Options so = a;
  so.rail_b = b.name;
  SubscriberMedium sub(so);
  EXPECT_NE(sub.describe().find("once its member starts"), std::string::npos) << sub.describe();
  Engine engine;
  engine.medium = &sub;
  Echo echo;
  const uint64_t deadline = monotonic_ns() + 5 * kNsPerSec;
  while (engine.frames == 0 && monotonic_ns() < deadline) {
    const uint64_t now = monotonic_ns();
    sub.poll_control(engine, now);
    member_b.poll_control(echo, now);
    ::usleep(1000);
  }
  EXPECT_EQ(echo.frames, 1);
  EXPECT_EQ(sub.reader().path(), member_b.ring().path());
  // No member at all within the wait: an error that names both rings.
  Options none = opts(unique_name("none-a"));
  none.rail_b = unique_name("none-b");
  none.wait_ns = 50 * kNsPerMs;
  try {
    SubscriberMedium nobody(none);
    ADD_FAILURE() << "a subscriber of two absent rings started";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(none.rail_b), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mdcast::media::shm
