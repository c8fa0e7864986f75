// `mdcast bench --medium verbs`: a raw UD multicast baseline and mdcast runs
// over the verbs medium (UD multicast data, RC control, RDMA READ
// retransmission), each process forked and pinned.
//
// The raw baseline is the least a UD multicast feed can do on this device: a
// send-only member posts 64-byte datagrams (ibv_post_send with immediate
// data, from one registered buffer, inline where the device allows), a full
// member polls its CQ and re-posts receive buffers; no header, no sequencing
// checks, no recovery. For latency each datagram is one 64-byte message; for
// throughput each is as large as the MTU allows and holds 64-byte records,
// as mdcast packs its messages, so both count the same bytes on the wire. It runs on the medium's own QP setup (VerbsSink /
// VerbsReceiver: the same join, QKey, address handle and CQ handling as
// mdcast's data path), so the ratio says what the protocol and the engines
// cost on top of the verbs themselves. UD has no flow control: an unpaced
// writer outruns the reader, and the datagrams the receive queue could not
// take are counted as lost.
//
// No verbs resource is ever opened in the parent: children fork from a
// process without RDMA state (ibv_fork_init is not needed).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {
namespace {

namespace verbs = media::verbs;

// ------------------------------------------------------------- raw baseline --

// One raw message: 64 bytes, eight words; a datagram holds one (latency) or
// as many as the MTU takes (throughput: only the first carries the words).
constexpr size_t kRawBytes = 64;
constexpr size_t kRawWords = kRawBytes / 8;
constexpr uint64_t kRawMagic = 0x7261772d75642d31ull;  // word 0: tells ours from anything else on the group
// The writer fills slots of the registered ring in turn; a slot comes round
// again only after this many later posts, long after its send completed (the
// send queue, 512 deep, is far shorter), so a zero-copy post never reads a
// rewritten slot.
constexpr size_t kRawSlots = 4096;
constexpr size_t kRawSlotBytes = 4096;  // the largest UD payload (MTU 4096)

int raw_writer(RawBoard& b, const verbs::Options& o, const RawRun& run) {
  auto fail_with = [&](std::string_view why) {
    const int rc = b.writer.fail(why);
    b.abort = 1;
    return rc;
  };
  std::unique_ptr<verbs::VerbsSink> sink;
  try {
    sink = std::make_unique<verbs::VerbsSink>(o);
  } catch (const Error& e) {
    return fail_with(fmt::format("raw writer: {}", e.what()));
  }
  const std::span<std::byte> ring = sink->ring_memory();
  if (ring.size() < kRawSlots * kRawSlotBytes) return fail_with("raw writer: the registered ring is too small");
  // Latency: one message per datagram; throughput: MTU-sized datagrams.
  const size_t dgram = run.rate > 0 ? kRawBytes : std::min(kRawSlotBytes, sink->max_datagram()) / kRawBytes * kRawBytes;
  if (!raw_ready_and_wait(b)) return 1;
  const uint64_t t0 = b.t0.load();
  const uint64_t end = t0 + run.window.warmup_ns + run.window.duration_ns;
  while (monotonic_ns() < t0) {
  }
  uint64_t sent = 0;
  auto post = [&](uint64_t stamp, uint64_t word3) -> bool {
    std::byte* slot = ring.data() + (sent % kRawSlots) * kRawSlotBytes;
    const uint64_t w[kRawWords] = {kRawMagic, stamp, sent, word3, 0, 0, 0, 0};
    std::memcpy(slot, w, sizeof w);
    while (sink->send({slot, dgram}, sent) != media::SendResult::kSent) {
      if (sink->failed() || b.abort.load(std::memory_order_relaxed) || g_stop.requested()) return false;
      sink->reap();
    }
    ++sent;
    return true;
  };
  const double per_ns = run.rate / 1e9;
  bool posting = true;  // a failed post ends the run, not just the burst
  while (posting) {
    const uint64_t now = monotonic_ns();
    if (now >= end || b.abort.load(std::memory_order_relaxed) || g_stop.requested()) break;
    if (run.rate > 0) {
      // Paced: one datagram when due, stamped with the clock read just now.
      if (sent >= static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1) continue;
      posting = post(now, 0);
    } else {
      // Flat out; the clock only every 64 datagrams.
      for (int i = 0; i < 64 && posting; ++i) posting = post(now, 0);
    }
  }
  if (sink->failed()) return fail_with(fmt::format("raw writer: send path failed: {}", sink->failure()));
  // UD may lose the end marker too: say it a few times, 2 ms apart.
  const uint64_t total = sent;
  for (int i = 0; i < 20 && !b.abort.load() && !g_stop.requested(); ++i) {
    const uint64_t w[kRawWords] = {kRawMagic, 0, total, kRawEnd, 0, 0, 0, 0};
    std::byte* slot = ring.data() + (sent % kRawSlots) * kRawSlotBytes;
    std::memcpy(slot, w, sizeof w);
    while (sink->send({slot, kRawBytes}, sent) != media::SendResult::kSent && !sink->failed()) sink->reap();
    ++sent;
    sleep_ns(2 * kNsPerMs);
    sink->reap();
  }
  return 0;
}

int raw_reader(RawBoard& b, const verbs::Options& o, const RawRun& run) {
  ProcBoard& me = b.reader;
  std::unique_ptr<verbs::VerbsReceiver> rx;
  try {
    rx = std::make_unique<verbs::VerbsReceiver>(o);
  } catch (const Error& e) {
    return me.fail(e.what());
  }
  if (!raw_ready_and_wait(b)) return me.fail("aborted before the start");
  RawTally tally(b.t0.load(), run);
  const uint64_t deadline = b.deadline.load();
  uint64_t sent_total = 0, datagrams = 0, records = 1;
  uint32_t empty = 0;
  bool ended = false;
  while (!ended) {
    const size_t n = rx->poll([&](std::span<const std::byte> d, std::optional<uint32_t>) {
      uint64_t w[kRawWords];
      if (d.size() < kRawBytes || d.size() % kRawBytes) return;
      std::memcpy(w, d.data(), sizeof w);
      if (w[0] != kRawMagic) return;
      if (w[3] == kRawEnd) {
        ended = true;
        sent_total = w[2];  // datagrams
        return;
      }
      ++datagrams;
      records = d.size() / kRawBytes;
      tally.add(records);
      if (tally.paced()) tally.sample(w[1], monotonic_ns());
      else if ((datagrams & 15) == 0) tally.sample_flat(monotonic_ns());
    });
    if (n) continue;
    if ((++empty & 1023) == 0) {
      b.progress.store(tally.received(), std::memory_order_relaxed);
      if (rx->failed()) return me.fail(fmt::format("receive path failed: {}", rx->failure()));
      if (monotonic_ns() > deadline || b.abort.load() || g_stop.requested())
        return me.fail(fmt::format("timed out after {} messages (no end marker)", tally.received()));
    }
  }
  tally.finish(me, sent_total > datagrams ? (sent_total - datagrams) * records : 0);
  return 0;
}

// Bytes RoCE v2 over IPv4 adds to each UD datagram on the wire: Ethernet 14
// + IPv4 20 + UDP 8 + BTH 12 + DETH 8 + ImmDt 4 + ICRC 4 + FCS 4 (preamble
// and gap not counted). InfiniBand: LRH 8 + GRH 40 + BTH 12 + DETH 8 + ImmDt
// 4 + ICRC 4 + VCRC 2.
constexpr size_t kRoceV2Overhead = 74;
constexpr size_t kIbOverhead = 78;

class VerbsBench final : public MediumBench {
 public:
  VerbsBench(const Settings& s, const Placement& where) : s_(s), where_(where) {
    s_.verbs.log_setup = false;
    if (!verbs::rdma_device_present())
      fail("medium verbs: this host has no RDMA device (/sys/class/infiniband is empty); `make bench-verbs` runs "
           "this bench inside a Soft-RoCE VM");
    // Resolve addresses here (sysfs only: no device is opened in the parent),
    // so a host without a usable device fails now, with what to set.
    base_ = verbs::resolve_options(VerbsEntry::options(s_), true);
    s_.verbs.local_ip = base_.local_ip;
    s_.verbs.device = base_.device;
    // Soft-RoCE (the kernel's rdma_rxe) devices are named rxe<N> by
    // convention; the driver link says so for any name.
    if (s_.verbs.control_ip.empty()) s_.verbs.control_ip = base_.local_ip;
    // A device with a RoCE GID mapping an IPv4 address is Ethernet; an
    // address no such GID maps is IPoIB (InfiniBand).
    ethernet_ = false;
    for (const auto& a : verbs::local_addresses())
      if (a.ip == s_.verbs.local_ip || (!s_.verbs.device.empty() && a.device == s_.verbs.device)) {
        ethernet_ = true;
        if (s_.verbs.device.empty()) s_.verbs.device = a.device;
      }
    emulated_ = s_.verbs.device.rfind("rxe", 0) == 0 || driver_of(s_.verbs.device) == "rdma_rxe";
  }

  std::string name() const override { return "verbs"; }
  std::string describe() const override {
    return fmt::format("UD multicast {} on {} port {} from {}, RC control port {}{}, RDMA READ retransmits {}",
                       s_.verbs.group, s_.verbs.device, s_.verbs.port, s_.verbs.local_ip, s_.verbs.control_port,
                       emulated_ ? " (Soft-RoCE: software emulation, functional figures only)" : "",
                       // As VerbsEntry::options decides it: secrets turn READ off.
                       !s_.verbs.rdma_read ? "off" : s_.pub.secrets.empty() ? "on" : "off (secrets)");
  }
  size_t medium_overhead_per_datagram() const override { return ethernet_ ? kRoceV2Overhead : kIbOverhead; }
  std::string raw_name() const override { return "raw UD multicast"; }
  std::string raw_throughput_note() const override {
    return "(MTU-sized datagrams of 64-byte records, unpaced: UD drops what the reader cannot take)";
  }
  bool emulated() const override { return emulated_; }

  PlanDefaults defaults() const override {
    if (!emulated_) return {};
    // Soft-RoCE under emulation carries tens of thousands of datagrams a
    // second (perftest ib_send_bw -c UD: ~30 k/s in our qemu VM), not millions.
    PlanDefaults d;
    d.rates = "1k,5k";
    d.fanout = "1,2,4";
    d.quick_fanout = "1,2";
    d.fanout_rate = 50e3;
    d.quick_fanout_rate = 20e3;
    return d;
  }

  RawResult raw(const RawRun& run, Progress& p) override {
    verbs::Options o = base_;
    o.group_ip = s_.verbs.group;
    o.rate = std::max(o.rate, run.rate > 0 ? run.rate : 1e6);
    o.retransmit_bytes = kRawSlots * kRawSlotBytes + (64u << 10);
    Shared<RawBoard> b;
    std::vector<ChildProcess> kids;
    // The reader joins first: a datagram sent before the join is lost to it.
    kids.push_back(ChildProcess::spawn("raw reader", where_.cpu_for(1), [&] { return raw_reader(*b, o, run); }));
    const uint64_t by = monotonic_ns() + 10 * kNsPerSec;
    while (b->ready.load() < 1 && !kids[0].poll() && monotonic_ns() < by && !g_stop.requested()) sleep_ns(kNsPerMs);
    kids.insert(kids.begin(), ChildProcess::spawn("raw writer", where_.cpu_for(0), [&] { return raw_writer(*b, o, run); }));
    return run_raw_pair(*b, kids, run, p);
  }

  RunResult run(const RunSpec& run_spec, Progress& p) override {
    RunSpec spec = run_spec;
    // Registered memory is pinned and resident from the start: no lap of the
    // retransmit ring to touch its pages, only some traffic through the path.
    spec.prime_datagrams = 2048;
    spec.prime_retransmit_ring = false;
    Settings s = run_settings(s_, ++runs_);
    // A fresh RC port per run: the previous publisher's listener is gone, but
    // a subscriber must never reach a stale one.
    s.verbs.control_port = static_cast<uint16_t>(s_.verbs.control_port + runs_ % 512);
    // The receive ring holds ~100 ms at the datagram rate of this run.
    s.verbs.rate = std::max(s.verbs.rate, spec.rate > 0 ? spec.rate : 1e6);
    return run_feed_processes<VerbsEntry>(s, spec, where_, medium_overhead_per_datagram(), p, 60 * kNsPerSec);
  }

 private:
  static std::string driver_of(const std::string& dev) {
    char buf[256];
    const std::string link = "/sys/class/infiniband/" + dev + "/device/driver";
    const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return {};
    buf[n] = 0;
    const char* slash = std::strrchr(buf, '/');
    return slash ? slash + 1 : buf;
  }

  Settings s_;
  Placement where_;
  verbs::Options base_;
  bool emulated_ = false;
  bool ethernet_ = true;
  uint32_t runs_ = 0;
};

}  // namespace

std::unique_ptr<MediumBench> medium_bench(VerbsEntry, const Settings& s, const Placement& where) {
  return std::make_unique<VerbsBench>(s, where);
}

}  // namespace mdcast::app::bench
