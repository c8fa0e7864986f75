// `mdcast bench --medium udp`: a raw UDP multicast baseline and mdcast runs
// over the udp medium, each process forked and pinned.
//
// The raw baseline is the least a UDP multicast feed can do through the
// kernel's socket API: the writer sends with sendmmsg on a socket connected
// to the group (IP_MULTICAST_IF the interface, multicast loop on, TTL 1), the
// reader has joined the group on that interface and busy-polls
// recvmmsg(MSG_DONTWAIT). No GSO or GRO, no header, no sequencing beyond
// counting, no recovery. For latency each datagram is one 64-byte message
// stamped when it is sent; messages that fall due together go out in one
// sendmmsg, one datagram each. For throughput each datagram is as large as
// the medium makes them on this interface (udp.mtu; 1472 bytes on lo, the
// UDP payload of a 1500-byte MTU), whole 64-byte records, as mdcast packs its
// messages, so both count the same bytes. UDP has no flow control: an
// unpaced writer outruns the reader, and what the reader's socket buffer
// could not take is lost, counted from the datagrams' numbers against the
// total the writer announces at the end.
//
// Every run has a group and port of its own (239.77.250.x for the raw runs,
// 239.77.251.x for mdcast's, from the bench's pid and the run's number) and
// the raw datagrams carry a nonce, so benches and tests running side by side
// neither meet on a group nor count each other's traffic.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "medium.hpp"
#include "processes.hpp"
#include "raw_baseline.hpp"
#include "measure/child_process.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/udp/udp_socket.hpp"
#include "mdcast/wire/protocol.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {
namespace {

// ------------------------------------------------------------- addresses --

std::string ip_str(in_addr a) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

// Where one run meets: 239.77.<net>.<1 + pid % 250>, port 20000 + 16 *
// (pid % 2000) + run % 16. Two benches alive together have different pids,
// so they meet on one group and port only if their pids agree mod 2000 (the
// raw runs' nonce and mdcast's sessions then keep their traffic apart).
struct Endpoint {
  in_addr group{};
  uint16_t port = 0;
  [[nodiscard]] std::string str() const { return fmt::format("{}:{}", ip_str(group), port); }
  [[nodiscard]] sockaddr_in sockaddr() const {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr = group;
    sa.sin_port = htons(port);
    return sa;
  }
};

Endpoint run_endpoint(unsigned net, uint32_t run) {
  const auto pid = static_cast<uint32_t>(::getpid());
  Endpoint e;
  e.group.s_addr = htonl((239u << 24) | (77u << 16) | (net << 8) | (1 + pid % 250));
  e.port = static_cast<uint16_t>(20000 + 16 * (pid % 2000) + run % 16);
  return e;
}

// ------------------------------------------------------------- sockets --

void set_int(int fd, int level, int name, int v, const char* what) {
  if (::setsockopt(fd, level, name, &v, sizeof v) != 0) fail_errno("setsockopt({}, {})", what, v);
}

// Asks for half of `bytes` (the kernel doubles what it is given, for its
// bookkeeping) within net.core.[rw]mem_max, as the medium does.
void size_buffer(int fd, bool receive, int bytes) {
  set_int(fd, SOL_SOCKET, receive ? SO_RCVBUF : SO_SNDBUF, bytes / 2, receive ? "SO_RCVBUF" : "SO_SNDBUF");
}

struct Path {
  media::udp::Interface iface;  // resolved as the medium resolves it
  in_addr ip{};
  Endpoint at;
  size_t datagram = 0;          // throughput runs: the medium's datagram size, whole records
  uint64_t nonce = 0;
};

// The socket buffers of the raw baseline and of mdcast's runs alike: 8 MiB
// where net.core.[rw]mem_max allows (4 MiB on Debian, doubled), ~3 k
// datagrams of 1472 B at the kernel's ~2.5 KiB charge each: 10 ms of the
// fastest unpaced stream on lo, enough for a reader descheduled for a tick.
constexpr int kSocketBuffer = 8 << 20;

UniqueFd open_sender(const Path& p) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) fail_errno("socket(AF_INET, SOCK_DGRAM)");
  if (::setsockopt(fd.get(), IPPROTO_IP, IP_MULTICAST_IF, &p.ip, sizeof p.ip) != 0)
    fail_errno("setsockopt(IP_MULTICAST_IF, {} = {})", p.iface.name, ip_str(p.ip));
  set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
  set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, 1, "IP_MULTICAST_TTL");
  size_buffer(fd.get(), false, kSocketBuffer);
  const sockaddr_in sa = p.at.sockaddr();
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
    fail_errno("connect to {}", p.at.str());
  return fd;
}

UniqueFd open_receiver(const Path& p) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) fail_errno("socket(AF_INET, SOCK_DGRAM)");
  // Bound to the group itself: only its datagrams, and any number of readers.
  set_int(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  const sockaddr_in sa = p.at.sockaddr();
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) fail_errno("bind to {}", p.at.str());
  ip_mreqn mreq{};
  mreq.imr_multiaddr = p.at.group;
  mreq.imr_address = p.ip;
  mreq.imr_ifindex = p.iface.index;
  if (::setsockopt(fd.get(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof mreq) != 0)
    fail_errno("join {} on {} ({})", ip_str(p.at.group), p.iface.name, ip_str(p.ip));
  size_buffer(fd.get(), true, kSocketBuffer);
  return fd;
}

// ------------------------------------------------------------- raw baseline --

constexpr size_t kRawBytes = 64;
constexpr size_t kRawWords = kRawBytes / 8;
constexpr uint64_t kRawMagic = 0x7261772d7564702dull;  // word 0: tells ours from anything else on the group
constexpr size_t kMaxDatagram = wire::kMaxDatagram;  // the medium's largest, whatever the MTU
constexpr unsigned kBatch = 32;  // datagrams per sendmmsg / recvmmsg

// A datagram's first record: magic, send stamp, datagram number, kind, nonce.
enum Word : size_t { kMagic = 0, kStamp = 1, kNumber = 2, kKind = 3, kNonce = 4 };

// kBatch datagram buffers with their iovecs and headers, set up once: the
// loops only rewrite words and lengths.
struct Batch {
  alignas(64) std::byte buf[kBatch][kMaxDatagram];
  iovec iov[kBatch];
  mmsghdr msg[kBatch];

  explicit Batch(size_t len) noexcept {
    std::memset(buf, 0, sizeof buf);
    for (unsigned i = 0; i < kBatch; ++i) {
      // The records after the first carry bytes like mdcast's opaque payloads.
      for (size_t k = kRawBytes; k < kMaxDatagram; ++k) buf[i][k] = static_cast<std::byte>(k);
      iov[i] = {buf[i], len};
      msg[i] = {};
      msg[i].msg_hdr.msg_iov = &iov[i];
      msg[i].msg_hdr.msg_iovlen = 1;
    }
  }
  void put(unsigned i, const uint64_t (&w)[kRawWords]) noexcept { std::memcpy(buf[i], w, sizeof w); }
};

// Sends msg[0..n) whole; false (errno set) on a failure that retrying will not cure.
bool send_all(int fd, mmsghdr* msg, unsigned n, const std::atomic<uint32_t>& abort) noexcept {
  unsigned done = 0;
  while (done < n) {
    const int k = ::sendmmsg(fd, msg + done, n - done, 0);
    if (k > 0) {
      done += static_cast<unsigned>(k);
      continue;
    }
    if (k < 0 && errno != EINTR && errno != EAGAIN && errno != ENOBUFS) return false;
    if (abort.load(std::memory_order_relaxed) || g_stop.requested()) return false;
  }
  return true;
}

int raw_writer(RawBoard& b, const Path& path, const RawRun& run) {
  auto fail_with = [&](std::string_view why) {
    const int rc = b.writer.fail(why);
    b.abort = 1;
    return rc;
  };
  UniqueFd fd;
  try {
    fd = open_sender(path);
  } catch (const Error& e) {
    return fail_with(fmt::format("raw writer: {}", e.what()));
  }
  const bool paced = run.rate > 0;
  auto batch = std::make_unique<Batch>(paced ? kRawBytes : path.datagram);
  if (!raw_ready_and_wait(b)) return 1;
  const uint64_t t0 = b.t0.load();
  const uint64_t end = t0 + run.window.warmup_ns + run.window.duration_ns;
  while (monotonic_ns() < t0) {
  }
  const double per_ns = run.rate / 1e9;
  uint64_t sent = 0;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= end || b.abort.load(std::memory_order_relaxed) || g_stop.requested()) break;
    unsigned n = kBatch;
    if (paced) {
      // What is due now, one datagram each, stamped with the clock read just now.
      const uint64_t due = static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1;
      if (sent >= due) continue;
      n = static_cast<unsigned>(std::min<uint64_t>(due - sent, kBatch));
    }
    for (unsigned i = 0; i < n; ++i) batch->put(i, {kRawMagic, now, sent + i, 0, path.nonce, 0, 0, 0});
    if (!send_all(fd.get(), batch->msg, n, b.abort)) {
      if (b.abort.load() || g_stop.requested()) return 1;
      return fail_with(fmt::format("raw writer: sendmmsg to {} on {}: {} (errno {})", path.at.str(), path.iface.name,
                                   std::strerror(errno), errno));
    }
    sent += n;
  }
  // UDP may lose the end marker too: say it a few times, 2 ms apart.
  batch->iov[0].iov_len = kRawBytes;
  for (int i = 0; i < 20 && !b.abort.load() && !g_stop.requested(); ++i) {
    batch->put(0, {kRawMagic, 0, sent, kRawEnd, path.nonce, 0, 0, 0});
    if (!send_all(fd.get(), batch->msg, 1, b.abort)) break;
    sleep_ns(2 * kNsPerMs);
  }
  return 0;
}

int raw_reader(RawBoard& b, const Path& path, const RawRun& run) {
  ProcBoard& me = b.reader;
  UniqueFd fd;
  try {
    fd = open_receiver(path);
  } catch (const Error& e) {
    return me.fail(fmt::format("raw reader: {}", e.what()));
  }
  auto batch = std::make_unique<Batch>(kMaxDatagram);
  if (!raw_ready_and_wait(b)) return me.fail("aborted before the start");
  RawTally tally(b.t0.load(), run);
  const uint64_t deadline = b.deadline.load();
  uint64_t sent_total = 0, datagrams = 0, records = 1;
  uint32_t empty = 0;
  bool ended = false;
  while (!ended) {
    const int n = ::recvmmsg(fd.get(), batch->msg, kBatch, MSG_DONTWAIT, nullptr);
    if (n > 0) {
      // Every datagram of the batch had arrived by now.
      const uint64_t now = monotonic_ns();
      for (int i = 0; i < n && !ended; ++i) {
        const size_t len = batch->msg[i].msg_len;
        if (len < kRawBytes || len % kRawBytes) continue;
        uint64_t w[kRawWords];
        std::memcpy(w, batch->buf[i], sizeof w);
        if (w[kMagic] != kRawMagic || w[kNonce] != path.nonce) continue;
        if (w[kKind] == kRawEnd) {
          ended = true;
          sent_total = w[kNumber];
          break;
        }
        ++datagrams;
        records = len / kRawBytes;
        tally.add(records);
        if (tally.paced()) tally.sample(w[kStamp], now);
      }
      if (!tally.paced()) tally.sample_flat(now);
      b.progress.store(tally.received(), std::memory_order_relaxed);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return me.fail(fmt::format("recvmmsg on {}: {} (errno {})", path.at.str(), std::strerror(errno), errno));
    if ((++empty & 1023) == 0) {
      if (monotonic_ns() > deadline || b.abort.load() || g_stop.requested())
        return me.fail(fmt::format("timed out after {} messages (no end marker)", tally.received()));
    }
  }
  tally.finish(me, sent_total > datagrams ? (sent_total - datagrams) * records : 0);
  return 0;
}

// Bytes an Ethernet wire adds to each UDP datagram: Ethernet 14 + IPv4 20 +
// UDP 8 + FCS 4 (preamble and gap not counted). lo carries only IPv4 + UDP.
constexpr size_t kUdpWireOverhead = 46;

class UdpBench final : public MediumBench {
 public:
  UdpBench(const Settings& s, const Placement& where)
      : s_(s), where_(where), iface_(media::udp::find_interface(s_.udp.interface)) {
    ip_.s_addr = iface_.address_be;
    // What the medium puts in a datagram at this MTU, in whole records.
    datagram_ = std::min(iface_.payload(s_.udp.mtu), kMaxDatagram) / kRawBytes * kRawBytes;
    if (datagram_ < kRawBytes) fail("udp.mtu {}: a datagram must hold at least one 64-byte message", s_.udp.mtu);
  }

  std::string name() const override { return "udp"; }
  std::string describe() const override {
    return fmt::format("UDP multicast on {} ({}), {}-byte datagrams, GSO {}, GRO {}, a group and port per run "
                       "(raw 239.77.250.x, mdcast 239.77.251.x)",
                       iface_.name, ip_str(ip_), iface_.payload(s_.udp.mtu), s_.udp.gso ? "on" : "off",
                       s_.udp.gro ? "on" : "off");
  }
  size_t medium_overhead_per_datagram() const override { return kUdpWireOverhead; }
  std::string raw_name() const override { return "raw UDP multicast"; }
  std::string raw_throughput_note() const override {
    return fmt::format("(sendmmsg of {}-byte datagrams of {} 64-byte records, recvmmsg busy-poll, unpaced: UDP has "
                       "no flow control, the kernel drops what the reader's socket buffer cannot take)",
                       datagram_, datagram_ / kRawBytes);
  }

  PlanDefaults defaults() const override {
    PlanDefaults d;
    d.rates = "100k,1M";
    d.fanout = "1,2,4";
    d.quick_fanout = "1,2";
    // 2 M/s to each of 1, 2 and 4 subscribers: the targets (2 M/s
    // to one, 1 M/s each to four) with room; this 2-core machine class
    // holds it with nothing lost (4 M/s: the publisher tops out near 3 M/s
    // with four subscribers, the loopback delivering to every socket on its CPU).
    d.fanout_rate = 2e6;
    d.quick_fanout_rate = 200e3;
    return d;
  }

  RawResult raw(const RawRun& run, Progress& p) override {
    Path path{iface_, ip_, run_endpoint(250, ++raw_runs_), datagram_, 0};
    path.nonce = (static_cast<uint64_t>(::getpid()) << 32) | raw_runs_;
    Shared<RawBoard> b;
    std::vector<ChildProcess> kids;
    // Both join or connect before they say ready; the writer sends only after go.
    kids.push_back(ChildProcess::spawn("raw writer", where_.cpu_for(0), [&] { return raw_writer(*b, path, run); }));
    kids.push_back(ChildProcess::spawn("raw reader", where_.cpu_for(1), [&] { return raw_reader(*b, path, run); }));
    return run_raw_pair(*b, kids, run, p);
  }

  RunResult run(const RunSpec& run_spec, Progress& p) override {
    RunSpec spec = run_spec;
    // Socket buffers and the kernel's paths are warm after a little traffic;
    // the engine's retransmit ring gets its lap (prime_retransmit_ring).
    spec.prime_datagrams = 2048;
    Settings s = run_settings(s_, ++runs_);
    s.udp.group = run_endpoint(251, runs_).str();
    // A free port, announced on the group: never a parallel bench's, nor the
    // last run's in TIME_WAIT.
    s.udp.control_port = 0;
    s.udp.rate = std::max(s.udp.rate, medium_rate());
    return run_feed_processes<UdpEntry>(s, spec, where_, medium_overhead_per_datagram(), p);
  }

 private:
  // The medium sizes its socket buffers for 100 ms of udp.rate datagrams at
  // ~1 KiB beyond each one's payload: the rate that gives it kSocketBuffer,
  // the raw baseline's.
  double medium_rate() const {
    return static_cast<double>(kSocketBuffer) / (0.1 * static_cast<double>(datagram_ + 1024));
  }

  Settings s_;
  Placement where_;
  media::udp::Interface iface_;
  in_addr ip_{};
  size_t datagram_ = 0;
  uint32_t raw_runs_ = 0, runs_ = 0;
};

}  // namespace

std::unique_ptr<MediumBench> medium_bench(UdpEntry, const Settings& s, const Placement& where) {
  return std::make_unique<UdpBench>(s, where);
}

}  // namespace mdcast::app::bench
