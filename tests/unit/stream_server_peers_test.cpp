// StreamControlServer, who may connect and how many of one peer: networks
// outside control.allow and other users on a Unix socket are closed at
// accept (before a byte is read), one peer's admitted clients are held to
// its share while another peer still gets in, and at the open-files limit
// the listener's reserve descriptor lets a new client in in place of an
// idle one.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>

#include "mdcast/core/error.hpp"
#include "mdcast/media/peer.hpp"
#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

Bytes subscribe(uint32_t rid) { return frame_of(44, rid, wire::CtlType::kSubscribe); }

// A TCP client of `address` ("tcp:127.0.0.1:port") from source address `from`.
Sock tcp_client(const std::string& address, const char* from) {
  const auto colon = address.rfind(':');
  const int port = std::stoi(address.substr(colon + 1));
  Sock s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &src.sin_addr);
  EXPECT_EQ(::bind(s.fd, reinterpret_cast<sockaddr*>(&src), sizeof src), 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  EXPECT_EQ(::connect(s.fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst), 0);
  return s;
}

std::string error_text(const Sock& s) {
  wire::FrameAssembler in;
  std::vector<Bytes> got;
  (void)s.drain(in, got);
  for (const auto& f : got) {
    std::string why;
    const auto p = wire::parse_control(f, &why);
    if (const auto* e = p ? std::get_if<wire::ErrorReply>(&p->body) : nullptr) return e->text;
  }
  return {};
}

// A limit that leaves room for exactly `n` more descriptors: the kernel
// hands out the lowest free numbers, and a number at or past the limit is
// refused (EMFILE), whatever holes the inherited descriptors leave.
rlim_t limit_for(size_t n) {
  std::vector<int> probe;
  for (size_t i = 0; i < n; ++i) probe.push_back(::dup(0));
  const int highest = *std::max_element(probe.begin(), probe.end());
  for (int fd : probe) ::close(fd);
  return static_cast<rlim_t>(highest) + 1;
}

TEST(ControlPeers, NetworksParseAndMatch) {
  const auto nets = parse_networks("10.1.0.0/16, 127.0.0.1", "control.allow");
  ASSERT_EQ(nets.size(), 2u);
  EXPECT_TRUE(nets[0].contains(0x0a01ff02));
  EXPECT_FALSE(nets[0].contains(0x0a020001));
  EXPECT_TRUE(nets[1].contains(0x7f000001));
  EXPECT_FALSE(nets[1].contains(0x7f000002));
  EXPECT_EQ(format_networks(nets), "10.1.0.0/16,127.0.0.1/32");
  EXPECT_TRUE(Ipv4Network::parse("0.0.0.0/0", "x").contains(0xdeadbeef));
  EXPECT_EQ(Ipv4Network::parse("10.1.2.3/8", "x").text(), "10.0.0.0/8");  // host bits dropped
  for (const char* bad : {"10.1.0.0/33", "10.1/8", "host", "10.0.0.0/", "10.0.0.0/8x"}) {
    try {
      (void)Ipv4Network::parse(bad, "control.allow");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("control.allow"), std::string::npos) << e.what();
    }
  }
}

TEST(ControlPeers, AnAddressOutsideTheAllowedNetworksIsClosedBeforeAByteIsRead) {
  StreamServerConfig cfg;
  cfg.peers.allow = parse_networks("127.0.0.1/32", "control.allow");
  StreamControlServer server("tcp:127.0.0.1:0", cfg);
  FakeHandler h;
  Clock clk;
  Sock outsider = tcp_client(server.address(), "127.0.0.2");
  ASSERT_TRUE(outsider.send_all(subscribe(1)));
  Sock insider = tcp_client(server.address(), "127.0.0.1");
  server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().refused_peers.get(), 1u);
  EXPECT_EQ(server.clients(), 1u);
  EXPECT_EQ(h.frames, 0u) << "nothing of the outsider's was handled";
  EXPECT_TRUE(outsider.closed_by_peer());
  EXPECT_FALSE(insider.closed_by_peer());
}

// One peer (here an address) holds its share of admitted clients; past it,
// its next Subscribe is refused naming the setting, while another peer is
// admitted as usual, and a slot the peer gives back is its own again.
TEST(ControlPeers, OnePeerCannotTakeEverySlot) {
  StreamServerConfig cfg;
  cfg.max_clients = 8;
  cfg.max_clients_per_peer = 2;
  StreamControlServer server("tcp:127.0.0.1:0", cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  std::vector<Sock> greedy;
  for (uint32_t i = 0; i < 3; ++i) {
    greedy.push_back(tcp_client(server.address(), "127.0.0.2"));
    server.poll(h, clk.tick());
    ASSERT_TRUE(greedy.back().send_all(subscribe(10 + i)));
    server.poll(h, clk.tick());
  }
  EXPECT_EQ(server.stats().refused_peer_share.get(), 1u);
  const std::string why = error_text(greedy[2]);
  EXPECT_NE(why.find("control.max_clients_per_peer"), std::string::npos) << why;
  EXPECT_TRUE(greedy[2].closed_by_peer());
  Sock other = tcp_client(server.address(), "127.0.0.1");
  server.poll(h, clk.tick());
  ASSERT_TRUE(other.send_all(subscribe(20)));
  server.poll(h, clk.tick());
  EXPECT_EQ(h.admitted_set.size(), 3u);
  EXPECT_FALSE(other.closed_by_peer());
  // greedy[0] leaves: its peer may admit one more.
  greedy[0] = Sock();
  server.poll(h, clk.tick());
  Sock again = tcp_client(server.address(), "127.0.0.2");
  server.poll(h, clk.tick());
  ASSERT_TRUE(again.send_all(subscribe(30)));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.stats().refused_peer_share.get(), 1u);
  EXPECT_FALSE(again.closed_by_peer());
}

// The publisher's own user is never held to a share (it could stop the
// publisher anyway); every other peer is.
TEST(ControlPeers, TheOwnUserHasNoShare) {
  const std::string name = unique_name("own");
  StreamServerConfig cfg;
  cfg.max_clients_per_peer = 1;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  std::vector<Sock> mine;
  for (uint32_t i = 0; i < 3; ++i) {
    mine.emplace_back(raw_connect(name));
    server.poll(h, clk.tick());
    ASSERT_TRUE(mine.back().send_all(subscribe(i + 1)));
    server.poll(h, clk.tick());
  }
  EXPECT_EQ(h.admitted_set.size(), 3u);
  EXPECT_EQ(server.stats().refused_peer_share.get(), 0u);
}

// Another local user connecting to a Unix control socket that admits only
// its owner is closed before anything it sent is read. Needs root (to be
// another user).
TEST(ControlPeers, AnotherUserIsClosedAtAccept) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  const std::string name = unique_name("user");
  StreamServerConfig cfg;
  cfg.peers.uid = 12345;  // the owner: neither root (always admitted) nor nobody
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  Clock clk;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // As nobody: connect, say something, and report whether the server closed it.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    Sock s(raw_connect(name));
    if (s.fd < 0) ::_exit(3);
    if (!s.send_all(subscribe(1))) ::_exit(4);
    (void)::write(ready[1], "x", 1);
    std::byte b[64];
    const ssize_t n = ::recv(s.fd, b, sizeof b, 0);  // blocks until the server closes it
    ::_exit(n <= 0 ? 0 : 5);
  }
  ::close(ready[1]);
  char x = 0;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  ::close(ready[0]);
  for (int i = 0; i < 1000 && server.stats().refused_peers.get() == 0; ++i) server.poll(h, clk.tick());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the other user's connection was not closed";
  EXPECT_EQ(server.stats().refused_peers.get(), 1u);
  EXPECT_EQ(h.frames, 0u);
  EXPECT_TRUE(h.connected.empty());
  // The owner's own connections still come in (root here).
  Sock mine(raw_connect(name));
  server.poll(h, clk.tick());
  EXPECT_EQ(server.clients(), 1u);
}

// At the open-files limit, idle connections hold every descriptor: the
// reserve takes the new client, the oldest idle one is closed for it, and
// the newcomer is admitted.
TEST(ControlPeers, AtTheDescriptorLimitANewClientReplacesAnIdleOne) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizer runtime needs descriptors of its own at the limit
  // (UBSan's first look at a dynamic type writes through a pipe, and reports
  // an "invalid vptr" when it cannot make one): this runs in the plain debug
  // build (test-all.sh's debug stage runs ControlPeers.*).
  GTEST_SKIP() << "a process at its open-files limit is beyond the sanitizer runtime: runs in the debug build";
#endif
  const std::string name = unique_name("nofile");
  StreamServerConfig cfg;
  cfg.max_unadmitted = 64;
  StreamControlServer server(address_of(name), cfg);
  FakeHandler h;
  h.admit_all = false;
  Clock clk;
  constexpr size_t kIdle = 6;
  std::vector<Sock> idle;
  for (size_t i = 0; i < kIdle; ++i) idle.emplace_back(raw_connect(name));
  Sock good(raw_connect(name));
  ASSERT_TRUE(good.send_all(subscribe(9)));
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  // Room for the idle connections' server ends, not for the good one's.
  rlimit low = old;
  low.rlim_cur = limit_for(kIdle);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int i = 0; i < 4; ++i) server.poll(h, clk.tick());
  ::setrlimit(RLIMIT_NOFILE, &old);
  EXPECT_EQ(server.stats().descriptor_evictions.get(), 1u)
      << "accepted " << server.stats().accepted.get() << ", failures " << server.stats().accept_failures.get()
      << ", refused " << server.stats().refused_descriptors.get() << ", limit " << low.rlim_cur;
  EXPECT_EQ(h.admitted_set.size(), 1u) << "the newcomer was admitted";
  EXPECT_FALSE(good.closed_by_peer());
  EXPECT_TRUE(idle[0].closed_by_peer()) << "the oldest idle connection made room";
}

}  // namespace
}  // namespace mdcast::media::test
