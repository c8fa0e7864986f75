// The UDP medium on loopback: what the sink sends (one sendmmsg, GSO runs)
// arrives whole and in order through the source (recvmmsg, GRO cut back),
// on one rail or two; announcements tell a subscriber where the control
// plane is and a forged one does not move it.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/udp/udp_announce.hpp"
#include "mdcast/media/udp/udp_medium.hpp"
#include "mdcast/wire/signature.hpp"

using namespace mdcast;
using mdcast::media::ClientId;
using mdcast::media::ControlEvents;
using mdcast::media::ControlHandler;
using mdcast::media::Outgoing;
using mdcast::media::ReplySink;
using namespace mdcast::media::udp;

namespace {

// Groups and a port of this process's own, so parallel tests never hear each other.
Options options_for(int test) {
  Options o;
  const int pid = static_cast<int>(::getpid());
  o.rail_a = {fmt::format("239.77.{}.{}:{}", 100 + test, 1 + pid % 250, 20000 + pid % 20000), "lo"};
  o.control_port = 0;
  o.log = [](std::string_view) {};
  return o;
}
void add_rail_b(Options& o, int test) {
  const int pid = static_cast<int>(::getpid());
  o.rail_b = {fmt::format("239.78.{}.{}:{}", 100 + test, 1 + pid % 250, 20000 + pid % 20000), ""};
}

struct NullHandler final : ControlHandler {
  void on_connect(ClientId, uint64_t) override {}
  void on_disconnect(ClientId) override {}
  bool on_frame(ClientId, std::span<const std::byte>, uint64_t, ReplySink&) override { return true; }
};
struct NullEvents final : ControlEvents {
  int connected = 0;
  void on_control_connected(uint64_t) noexcept override { ++connected; }
  void on_control_disconnected() noexcept override {}
  void on_control_frame(std::span<const std::byte>, uint64_t) noexcept override {}
  void on_retransmitted(uint32_t, uint64_t, std::span<const std::span<const std::byte>>, uint64_t) noexcept override {}
};

std::vector<std::byte> datagram(size_t size, uint64_t n) {
  std::vector<std::byte> d(size);
  for (size_t i = 0; i < size; ++i) d[i] = std::byte(static_cast<uint8_t>(n * 31 + i));
  d[0] = std::byte{'M'};  // anything but an announcement
  return d;
}

// Polls until `want` datagrams arrived or a second passed.
std::vector<std::vector<std::byte>> receive(SubscriberMedium& s, size_t want) {
  std::vector<std::vector<std::byte>> got;
  const uint64_t until = monotonic_ns() + kNsPerSec;
  while (got.size() < want && monotonic_ns() < until)
    s.source().poll([&](std::span<const std::byte> d, uint64_t) { got.emplace_back(d.begin(), d.end()); }, 32);
  return got;
}

void send_run(PublisherMedium& p, const std::vector<std::vector<std::byte>>& ds) {
  std::vector<Outgoing> batch;
  for (size_t i = 0; i < ds.size(); ++i) batch.push_back({ds[i], i + 1});
  size_t sent = 0;
  const uint64_t until = monotonic_ns() + kNsPerSec;
  while (sent < batch.size() && monotonic_ns() < until)
    sent += p.sink().send_batch(std::span(batch).subspan(sent));
  ASSERT_EQ(sent, batch.size());
}

void round_trip(Options o, const char* what) {
  PublisherMedium pub(o, 42);
  SubscriberMedium sub(o);
  // Equal-sized datagrams and a shorter last one: one GSO run where the kernel has it.
  std::vector<std::vector<std::byte>> ds;
  for (uint64_t i = 0; i < 20; ++i) ds.push_back(datagram(1000, i));
  ds.push_back(datagram(300, 20));
  ds.push_back(datagram(1472, 21));
  send_run(pub, ds);
  const auto got = receive(sub, ds.size());
  ASSERT_EQ(got.size(), ds.size()) << what;
  for (size_t i = 0; i < ds.size(); ++i) EXPECT_EQ(got[i], ds[i]) << what << ": datagram " << i;
  EXPECT_EQ(pub.counters().datagrams.get(), ds.size());
  if (o.gso && kernel_has_gso()) {
    EXPECT_GE(pub.counters().gso_sends.get(), 1u) << "the run of 1000-byte datagrams went as one GSO send";
    EXPECT_LE(pub.counters().syscalls.get(), 2u) << "one sendmmsg for the batch";
  } else {
    EXPECT_EQ(pub.counters().gso_sends.get(), 0u);
  }
  EXPECT_EQ(sub.counters().rail_a_datagrams.get(), ds.size());
  EXPECT_EQ(sub.counters().kernel_drops.get(), 0u);
  EXPECT_EQ(sub.counters().truncated.get(), 0u);
  if (o.gro && kernel_has_gro()) {
    EXPECT_GE(sub.counters().gro_batches.get(), 1u) << "the GSO run came as one receive";
  }
}

}  // namespace

TEST(UdpMedium, ABatchArrivesWholeAndInOrderWithGsoAndGro) { round_trip(options_for(1), "GSO/GRO"); }

TEST(UdpMedium, ABatchArrivesWholeAndInOrderWithoutThem) {
  Options o = options_for(2);
  o.gso = false;
  o.gro = false;
  round_trip(o, "plain");
}

TEST(UdpMedium, TheDatagramSizeComesFromTheMtu) {
  Options o = options_for(3);
  PublisherMedium pub(o, 1);
  media::PublisherFit natural;
  natural.max_datagram = 0;  // the medium's size
  natural.session = 1;
  EXPECT_EQ(pub.configure(natural).max_datagram, 1472u);
  media::PublisherFit big = natural;
  big.max_datagram = 2000;
  try {
    (void)pub.configure(big);
    FAIL() << "a datagram larger than the MTU carries was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("raise udp.mtu"), std::string::npos) << e.what();
  }
  o.mtu = 9000;
  PublisherMedium jumbo(o, 1);
  EXPECT_EQ(jumbo.configure(natural).max_datagram, wire::kMaxDatagram) << "the engine's largest datagram, at most";
}

TEST(UdpMedium, TheSessionIsTheOneItAnnounces) {
  PublisherMedium pub(options_for(9), 0x5e55);
  media::PublisherFit fit;
  fit.session = 0x5e56;
  try {
    (void)pub.configure(fit);
    FAIL() << "an engine of another session than the medium announces was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("announces session 0000000000005e55, the engine publishes session "
                                         "0000000000005e56"),
              std::string::npos)
        << e.what();
  }
}

TEST(UdpMedium, ASubscriberHearsOnlyItsGroup) {
  Options a = options_for(4);
  Options b = options_for(5);
  b.rail_a.group = fmt::format("239.77.105.{}:{}", 1 + ::getpid() % 250, GroupAddress::parse(a.rail_a.group).port);
  PublisherMedium pub_b(b, 1);  // same port, another group
  SubscriberMedium sub_a(a);
  const auto d = datagram(200, 1);
  const Outgoing one{d, 1};
  ASSERT_EQ(pub_b.sink().send_batch({&one, 1}), 1u);
  EXPECT_TRUE(receive(sub_a, 1).empty()) << "a datagram of another group on the same port was heard";
}

TEST(UdpMedium, TwoRailsDeliverEveryDatagramOnEach) {
  Options o = options_for(6);
  add_rail_b(o, 6);
  PublisherMedium pub(o, 1);
  SubscriberMedium sub(o);
  std::vector<std::vector<std::byte>> ds;
  for (uint64_t i = 0; i < 8; ++i) ds.push_back(datagram(500, i));
  send_run(pub, ds);
  const auto got = receive(sub, 2 * ds.size());
  EXPECT_EQ(got.size(), 2 * ds.size());
  EXPECT_EQ(sub.counters().rail_a_datagrams.get(), ds.size());
  EXPECT_EQ(sub.counters().rail_b_datagrams.get(), ds.size());
  EXPECT_EQ(sub.configure({}).reorder_wait_ns, 2 * kNsPerMs) << "a gap on one rail waits for the other's copy";
}

// udp.also_to: every datagram to each further destination as well, here a
// unicast leg to a subscriber bound at 127.0.0.1 (no group joined).
TEST(UdpMedium, AlsoToSendsEveryDatagramToAUnicastLegToo) {
  Options o = options_for(10);
  const int pid = static_cast<int>(::getpid());
  const std::string leg = fmt::format("127.0.0.1:{}", 20000 + (pid + 7) % 20000);
  o.also_to = {leg};
  Options u = options_for(10);
  u.rail_a.group = leg;
  SubscriberMedium unicast(u);
  SubscriberMedium group(o);
  PublisherMedium pub(o, 1);
  EXPECT_NE(pub.describe().find("also to " + leg), std::string::npos) << pub.describe();
  EXPECT_NE(unicast.describe().find("UDP unicast " + leg), std::string::npos) << unicast.describe();
  std::vector<std::vector<std::byte>> ds;
  for (uint64_t i = 0; i < 8; ++i) ds.push_back(datagram(300, i));
  send_run(pub, ds);
  EXPECT_EQ(receive(unicast, ds.size()), ds);
  EXPECT_EQ(receive(group, ds.size()), ds);
  EXPECT_EQ(pub.counters().datagrams.get(), 2 * ds.size()) << "each destination counts its own";

  o.also_to.assign(kMaxAlsoTo + 1, leg);
  try {
    PublisherMedium too_many(o, 1);
    FAIL() << "more destinations than the sink holds were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("udp.also_to"), std::string::npos) << e.what();
  }
}

TEST(UdpMedium, RailBIsNotRailA) {
  Options o = options_for(7);
  o.rail_b = o.rail_a;
  EXPECT_THROW(PublisherMedium(o, 1), Error);
}

TEST(UdpMedium, TheCutDropsRailAOnly) {
  Options o = options_for(8);
  add_rail_b(o, 8);
  o.cut_a_after_ns = 0;
  o.cut_a_for_ns = 3600 * kNsPerSec;
  PublisherMedium pub(o, 1);
  SubscriberMedium sub(o);
  sub.start();
  std::vector<std::vector<std::byte>> ds;
  for (uint64_t i = 0; i < 5; ++i) ds.push_back(datagram(400, i));
  send_run(pub, ds);
  const auto got = receive(sub, ds.size());
  ASSERT_EQ(got.size(), ds.size()) << "rail B carried them";
  for (size_t i = 0; i < ds.size(); ++i) EXPECT_EQ(got[i], ds[i]);
  // Rail A's copies are read (and dropped) on a later poll.
  (void)receive(sub, 1);
  EXPECT_EQ(sub.counters().rail_a_cut.get(), ds.size());
}

TEST(UdpMedium, ASubscriberFindsTheControlPlaneWhereThePublisherAnnouncesIt) {
  Options o = options_for(9);
  PublisherMedium pub(o, 77);
  SubscriberMedium sub(o);
  EXPECT_EQ(sub.control_address(), "");
  NullHandler h;
  NullEvents e;
  const uint64_t until = monotonic_ns() + 2 * kNsPerSec;
  while (e.connected == 0 && monotonic_ns() < until) {
    pub.poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  EXPECT_EQ(sub.control_address(), pub.control_address());
  EXPECT_EQ(e.connected, 1) << "connected to the announced address";
  EXPECT_NE(pub.control_address().find("tcp:127.0.0.1:"), std::string::npos);
  EXPECT_NE(pub.control_address(), "tcp:127.0.0.1:0") << "port 0: a free port, and that is what is announced";
}

namespace {
// Sends one datagram to rail A's group from a socket of its own (anyone on the group).
void send_to_group(const Options& o, const std::vector<std::byte>& d) {
  const GroupAddress g = GroupAddress::parse(o.rail_a.group);
  const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = g.group_be;
  to.sin_port = htons(g.port);
  in_addr lo{};
  lo.s_addr = htonl(INADDR_LOOPBACK);
  ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof lo);
  ASSERT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
            static_cast<ssize_t>(d.size()));
  ::close(fd);
}
uint64_t counter(const SubscriberMedium& s, std::string_view name) {
  for (const auto& g : s.counter_groups())
    for (size_t i = 0; i < g.info.size(); ++i)
      if (g.info[i].name == name) return g.values[i].get();
  ADD_FAILURE() << "no counter " << name;
  return 0;
}
std::array<std::byte, wire::kSignSeedSize> seed_of(uint8_t v) {
  std::array<std::byte, wire::kSignSeedSize> s{};
  s.fill(std::byte{v});
  return s;
}
}  // namespace

TEST(UdpMedium, AForgedAnnouncementDoesNotMoveAConnectedSubscriber) {
  Options o = options_for(10);
  PublisherMedium pub(o, 77);
  SubscriberMedium sub(o);
  NullHandler h;
  NullEvents e;
  uint64_t until = monotonic_ns() + 2 * kNsPerSec;
  while (e.connected == 0 && monotonic_ns() < until) {
    pub.poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  ASSERT_EQ(e.connected, 1);
  // Anyone on the group: another address, then garbage with the announcement's magic.
  auto forged = encode_announcement({o.channel, 77, "tcp:127.0.0.1:1"});
  auto garbage = forged;
  garbage[2] = std::byte{99};
  for (const auto* d : {&forged, &garbage}) {
    const uint64_t heard = sub.counters().announcements.get();
    send_to_group(o, *d);
    until = monotonic_ns() + kNsPerSec;
    while (sub.counters().announcements.get() == heard && monotonic_ns() < until) (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  EXPECT_EQ(sub.control_address(), pub.control_address());
  EXPECT_EQ(counter(sub, "announce_conflicts"), 1u);
  EXPECT_EQ(counter(sub, "announce_malformed"), 1u);
}


TEST(UdpMedium, WithThePublishersKeyOnlyItsSignedAnnouncementsAreFollowed) {
  Options o = options_for(11);
  auto key = std::make_shared<const wire::SigningKey>(seed_of(5));
  const wire::SigningKey impostor(seed_of(6));
  Options so = o;
  so.announce_public_key = key->public_key();
  std::vector<std::string> said;
  so.log = [&](std::string_view m) { said.emplace_back(m); };
  SubscriberMedium sub(so);
  NullEvents e;
  // Before the publisher: an unsigned announcement, then one signed with another key.
  const std::vector<std::vector<std::byte>> forged = {encode_announcement({o.channel, 77, "tcp:127.0.0.1:1"}),
                                                      encode_announcement({o.channel, 77, "tcp:127.0.0.1:2"}, &impostor)};
  for (const auto& d : forged) {
    const uint64_t heard = sub.counters().announcements.get();
    send_to_group(o, d);
    const uint64_t until = monotonic_ns() + 2 * kNsPerSec;
    while (sub.counters().announcements.get() == heard && monotonic_ns() < until) (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  EXPECT_EQ(sub.control_address(), "") << "neither forged address was taken";
  EXPECT_EQ(counter(sub, "announce_unsigned"), 1u);
  EXPECT_EQ(counter(sub, "announce_bad_signature"), 1u);
  EXPECT_EQ(counter(sub, "announce_followed"), 0u);
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("names control tcp:127.0.0.1:1 unsigned: ignored"), std::string::npos) << said[0];
  EXPECT_NE(said[1].find("tcp:127.0.0.1:2 with a signature the publisher's key did not make"), std::string::npos)
      << said[1];

  o.announce_key = key;
  PublisherMedium pub(o, 77);
  NullHandler h;
  const uint64_t until = monotonic_ns() + 5 * kNsPerSec;
  while (e.connected == 0 && monotonic_ns() < until) {
    pub.poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  EXPECT_EQ(sub.control_address(), pub.control_address()) << "the signed announcement was followed";
  EXPECT_EQ(e.connected, 1);
}

// A pair's members share the key; a subscriber on one whose connection closes
// moves to the other at once: every address it knows is a real publisher's.
TEST(UdpMedium, WithThePublishersKeyAClosedConnectionMovesToTheOtherMemberAtOnce) {
  Options o = options_for(12);
  o.announce_key = std::make_shared<const wire::SigningKey>(seed_of(7));
  Options so = o;
  so.announce_key = nullptr;
  so.announce_public_key = o.announce_key->public_key();
  std::vector<std::string> said;
  so.log = [&](std::string_view m) { said.emplace_back(m); };
  SubscriberMedium sub(so);
  NullEvents e;
  NullHandler h;
  auto a = std::make_unique<PublisherMedium>(o, 77);
  PublisherMedium b(o, 77);
  const std::string a_address = a->control_address();
  uint64_t until = monotonic_ns() + 5 * kNsPerSec;
  while (e.connected == 0 && monotonic_ns() < until) {  // A alone announces: the subscriber takes it
    a->poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  ASSERT_EQ(sub.control_address(), a_address);
  until = monotonic_ns() + 5 * kNsPerSec;
  while (counter(sub, "announce_conflicts") == 0 && monotonic_ns() < until) {  // B is heard and remembered
    a->poll_control(h, monotonic_ns());
    b.poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  ASSERT_EQ(sub.control_address(), a_address) << "a connected subscriber is not moved by the other member";
  a.reset();  // member A dies: its connections close
  until = monotonic_ns() + 5 * kNsPerSec;
  while (sub.control_address() == a_address && monotonic_ns() < until) {
    b.poll_control(h, monotonic_ns());
    (void)receive(sub, 1);
    sub.poll_control(e, monotonic_ns());
  }
  EXPECT_EQ(sub.control_address(), b.control_address());
  EXPECT_EQ(counter(sub, "announce_left"), 1u);
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said.back().find("control " + a_address + " left: its connection failed ("), std::string::npos)
      << "left for the closed connection, not after 2 s of failures: " << said.back();
}
