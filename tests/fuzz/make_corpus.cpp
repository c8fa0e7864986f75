// Writes seed corpora for the fuzz targets from real protocol traffic: a
// PublisherCore fed by the synthetic generator, its heartbeats, fragments,
// and the ControlService's replies. Seeds give libFuzzer well-formed starting
// points; mutation does the rest.
//
//   fuzz_make_corpus OUTDIR     writes OUTDIR/<target>/seed-NN
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/wire/auth.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using Bytes = std::vector<std::byte>;

namespace {

std::filesystem::path g_out;

void write(const std::string& target, const Bytes& b) {
  static std::map<std::string, int> n;
  const auto dir = g_out / target;
  std::filesystem::create_directories(dir);
  char name[32];
  std::snprintf(name, sizeof name, "seed-%02d", n[target]++);
  std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()),
                                                   static_cast<std::streamsize>(b.size()));
}

void append(Bytes& to, std::span<const std::byte> b) { to.insert(to.end(), b.begin(), b.end()); }
Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) append(out, p);
  return out;
}
Bytes byte(uint8_t v) { return {std::byte{v}}; }
Bytes u16(uint16_t v) { return {std::byte(static_cast<uint8_t>(v)), std::byte(static_cast<uint8_t>(v >> 8))}; }
Bytes u32(uint32_t v) { return cat({u16(static_cast<uint16_t>(v)), u16(static_cast<uint16_t>(v >> 16))}); }
// One fuzz_subscriber operation.
Bytes op(uint8_t code, const Bytes& payload) { return cat({byte(code), u16(static_cast<uint16_t>(payload.size())), payload}); }

struct Sink : feed::ReplySink {
  std::vector<Bytes> frames;
  void send(feed::ClientId, std::vector<std::byte> f) override { frames.push_back(std::move(f)); }
};

// A publisher with `instruments` instruments that has published `messages`.
struct World {
  feed::PublisherConfig cfg;
  std::unique_ptr<feed::PublisherCore> core;
  std::vector<Bytes> datagrams;  // by sequence - 1
  std::unique_ptr<book::Generator> gen;
  uint64_t now = 1'000'000;
  explicit World(uint32_t messages, size_t max_datagram = 512, bool crc = true) {
    cfg.session = 100;
    cfg.sender_id = 5;
    cfg.max_datagram = max_datagram;
    cfg.max_message = 4096;
    cfg.flush_interval_ns = 1000;
    cfg.retransmit_bytes = 1u << 20;
    cfg.crc = crc;
    cfg.books = {8, 256, 8};
    core = std::make_unique<feed::PublisherCore>(cfg);
    book::GeneratorConfig g;
    g.instruments = 8;
    g.target_orders = 6;
    g.max_orders = 10;
    g.price_band_ticks = 3;
    g.halt_probability = 0.01;
    gen = std::make_unique<book::Generator>(g);
    more(messages);
  }
  // Publishes n more generated messages and commits them.
  void more(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      Message m;
      gen->next(m);
      if (core->stage(m, now += 100) != feed::PublishResult::kOk) std::abort();
      take(now);
    }
    core->commit_open(now);
    take(now);
  }
  void take(uint64_t at) {
    for (uint64_t s = core->next_unsent(); s <= core->last_committed(); ++s) {
      const auto d = core->datagram(s);
      datagrams.emplace_back(d.begin(), d.end());
      core->mark_sent(s, d.size(), at);
    }
  }
  Bytes opaque(uint32_t inst, size_t n) {
    Bytes payload(n);
    for (size_t i = 0; i < n; ++i) payload[i] = std::byte(static_cast<uint8_t>(i));
    Message m = Message::make_opaque(inst, payload);
    if (core->stage(m, 2'000'000) != feed::PublishResult::kOk) std::abort();
    take(2'000'000);
    return {};
  }
  Bytes heartbeat(bool end = false) {
    const auto h = core->build_heartbeat(3'000'000, end);
    return Bytes(h.begin(), h.end());
  }
  std::vector<Bytes> snapshot(uint32_t rid, SnapshotRequest req) {
    feed::ControlService svc(feed::ControlConfig{}, *core);
    Sink s;
    svc.on_frame(1, encode_control(1, Subscribe{cfg.channel, 7, {}}), 1, s);
    s.frames.clear();
    svc.on_frame(1, encode_control(rid, req), 1, s);
    return s.frames;
  }
};

Bytes run_of(const Bytes& datagram) { return Bytes(datagram.begin() + dgram::kHeaderSize, datagram.end()); }

void datagram_seeds(World& w) {
  for (size_t i = 0; i < w.datagrams.size() && i < 6; ++i) write("fuzz_datagram", cat({byte(1), w.datagrams[i]}));
  write("fuzz_datagram", cat({byte(1), w.heartbeat()}));
  write("fuzz_datagram", cat({byte(0), byte(kFlagCrc), byte(3), run_of(w.datagrams[1])}));
  write("fuzz_datagram", cat({byte(1), w.datagrams.back()}));  // a fragment
  // A snapshot run wrapped as a datagram: chunks and definitions.
  const auto snap = w.snapshot(9, SnapshotRequest{});
  write("fuzz_datagram", cat({byte(0), byte(0), byte(1), Bytes(snap[0].begin() + 16, snap[0].begin() + 16 + 300)}));
}

void control_seeds(World& w) {
  Subscribe s;
  s.instruments.all = false;
  s.instruments.ids = {1, 2};
  RetransmitReplyBuilder rr(3, 100, RetransmitStatus::kOk, 1, 1);
  rr.add(w.datagrams[0]);
  rr.add(w.datagrams[1]);
  const std::vector<Bytes> frames = {
      encode_control(1, s),
      encode_control(2, SubscribeAck{100, 5, 1, ctl::kAll}),
      encode_control(3, RetransmitRequest{100, 2, 3}),
      std::move(rr).finish(),
      encode_control(4, SnapshotRequest{}),
      encode_control(5, SnapshotDone{100, SnapshotStatus::kOk, 8, 9}),
      encode_control(6, StatusReport{1, 2, 3, 4}),
      encode_control(0, LatencyReport{5, 1500, 9000, 12000}),
      encode_control(7, ErrorReply{ErrorCode::kNotEntitled, "no"}),
      encode_control(8, Unsubscribe{{false, {3}}}),
      encode_control(9, SessionQuery{}),
      encode_control(10, SessionStatus{100, 9, 1, true, 9}),
  };
  for (const auto& f : frames) write("fuzz_control", cat({byte(7), byte(0), f}));
  Bytes stream;
  for (const auto& f : frames) append(stream, f);
  for (const auto& f : w.snapshot(9, SnapshotRequest{})) append(stream, f);
  write("fuzz_control", cat({byte(1), byte(0), stream}));
}

// fuzz_auth: a byte of options, then frames (u16 length + bytes) for the
// publisher's ControlService with the secrets fuzz_auth.cpp builds in. The
// seeds start handshakes; option bit 0 has fuzz_auth answer its challenge.
void auth_seeds() {
  auto framed = [](const Bytes& f) { return cat({u16(static_cast<uint16_t>(f.size())), f}); };
  AuthNonce cn{};
  cn.fill(std::byte{7});
  const Bytes hello = encode_auth(1, AuthHello{4, "fuzz", cn});
  write("fuzz_auth", cat({byte(0), framed(hello)}));
  // Option bit 0: fuzz_auth answers the challenge with the proof it computes
  // itself (so mutations reach the subscribe that follows).
  write("fuzz_auth", cat({byte(1), framed(hello), framed(encode_control(2, Subscribe{4, 1, {}})),
                          framed(encode_control(3, SnapshotRequest{})), framed(encode_control(4, StatusReport{}))}));
  write("fuzz_auth", cat({byte(0), framed(encode_auth(1, AuthHello{4, "nobody", cn})),
                          framed(encode_auth(2, AuthProof{})), framed(encode_control(3, Subscribe{4, 1, {}}))}));
  write("fuzz_auth", cat({byte(0), framed(encode_auth(1, AuthChallenge{})), framed(encode_auth(2, AuthProof{}))}));
  write("fuzz_auth", cat({byte(2), framed(encode_control(1, Subscribe{4, 1, {}})), framed(hello), framed(hello)}));
}

void subscriber_seeds() {
  // Clean stream: ack, every datagram, a heartbeat, polls.
  {
    World w(200);
    Bytes s = byte(0);
    append(s, op(2, encode_control(1, SubscribeAck{100, 0, 1, ctl::kAll})));
    for (const auto& d : w.datagrams) append(s, op(0, d));
    append(s, op(0, w.heartbeat()));
    append(s, op(3, u32(1000)));
    append(s, op(0, w.heartbeat(true)));
    write("fuzz_subscriber", s);
  }
  // Losses answered by retransmits (op 7), then a snapshot after too-old.
  {
    World w(150);
    Bytes s = byte(0);
    append(s, op(7, byte(0)));  // answers the subscribe
    for (size_t i = 0; i < w.datagrams.size(); ++i)
      append(s, op(static_cast<uint8_t>((i % 2 ? 1 : 0) | (i % 5 == 2 ? 0x80 : 0)), w.datagrams[i]));  // 0x80: lost
    for (int k = 0; k < 6; ++k) {
      append(s, op(3, u32(0)));
      for (uint8_t j = 0; j < 3; ++j) append(s, op(7, byte(static_cast<uint8_t>(j << 4))));  // each outstanding one
    }
    append(s, op(0, w.heartbeat()));
    // Then a gap the publisher no longer holds.
    const size_t before = w.datagrams.size();
    w.more(60);
    for (size_t i = before; i < w.datagrams.size(); ++i)
      append(s, op(static_cast<uint8_t>(i == before ? 0x80 : 0), w.datagrams[i]));
    const auto snap = w.snapshot(9, SnapshotRequest{});
    Bytes answer = cat({byte(6), byte(0)});  // status ok (6 % 3), snapshot at the newest seen; iseq unused
    append(answer, Bytes(snap[0].begin() + 16, snap[0].end()));
    append(s, op(3, u32(5000)));
    append(s, op(7, byte(1)));  // too old: forces the snapshot
    append(s, op(7, answer));
    write("fuzz_subscriber", s);
  }
  // A checksum mismatch recovered by a single-instrument snapshot, while
  // other instruments flow (synthesised empty book at iseq 0 -> replays).
  {
    World w(80);
    Bytes s = byte(0);
    append(s, op(7, byte(0)));
    for (const auto& d : w.datagrams) append(s, op(0, d));
    Bytes hb = w.heartbeat();
    const size_t first = dgram::kHeaderSize + heartbeat::kEntries;
    if (first + heartbeat::kEntrySize <= hb.size())
      hb[first + heartbeat::kEntryChecksum] ^= std::byte{0x20};  // the first entry's checksum disagrees
    append(s, op(4, cat({byte(kFlagUnsequenced), byte(static_cast<uint8_t>(w.datagrams.size())), byte(0), run_of(hb)})));
    const size_t before = w.datagrams.size();
    w.more(60);
    for (size_t i = before; i < w.datagrams.size(); ++i) append(s, op(0, w.datagrams[i]));
    for (uint8_t k = 0; k < 4; ++k) append(s, op(7, cat({byte(static_cast<uint8_t>(k << 4)), byte(0)})));
    append(s, op(3, u32(500)));
    write("fuzz_subscriber", s);
  }
  // Fragments, a filter, a session change, a checksum mismatch.
  {
    World w(40, 256);
    w.opaque(3, 900);
    Bytes s = byte(2);  // instrument filter {1, 3}
    append(s, op(7, byte(0)));
    for (const auto& d : w.datagrams) append(s, op(0, d));
    Bytes hb = w.heartbeat();
    if (hb.size() >= 84) hb[76] ^= std::byte{1};  // first entry's checksum (re-wrapped without CRC below)
    append(s, op(4, cat({byte(kFlagUnsequenced), byte(1), byte(0), run_of(hb)})));
    append(s, op(3, u32(2000)));
    append(s, op(7, cat({byte(0), run_of(w.datagrams[2])})));
    World other(10);
    for (const auto& d : other.datagrams) {
      Bytes x = d;
      x[dgram::kSession] = std::byte{101};
      append(s, op(4, cat({byte(0), byte(static_cast<uint8_t>(x[dgram::kSequence])), byte(1), run_of(x)})));
    }
    write("fuzz_subscriber", s);
  }
  // Built datagrams only (op 4), out of order, with control noise.
  {
    World w(60, 512, false);
    Bytes s = byte(16);
    append(s, op(5, cat({byte(static_cast<uint8_t>(CtlType::kSubscribeAck)), byte(0), u32(100), u32(0), u32(0),
                         u32(0), u32(0), u32(ctl::kAll)})));
    for (size_t i = w.datagrams.size(); i-- > 0;) {
      const auto& d = w.datagrams[i];
      append(s, op(4, cat({byte(0), byte(static_cast<uint8_t>(i + 1)), byte(0), run_of(d)})));
    }
    append(s, op(6, byte(0)));
    append(s, op(6, byte(1)));
    append(s, op(3, u32(100000)));
    write("fuzz_subscriber", s);
  }
}

void snapshot_apply_seeds(World& w) {
  for (const auto& f : w.snapshot(9, SnapshotRequest{})) {
    if (f.size() <= 16 || f[4] != std::byte{static_cast<uint8_t>(CtlType::kSnapshotData)}) continue;
    write("fuzz_snapshot_apply", cat({byte(0), Bytes(f.begin() + 16, f.end())}));
  }
  Bytes live = byte(0);
  for (const auto& d : w.datagrams) append(live, run_of(d));
  write("fuzz_snapshot_apply", live);
  write("fuzz_snapshot_apply", cat({byte(3), Bytes(live.begin(), live.begin() + std::min<size_t>(live.size(), 2000))}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  g_out = argv[1];
  World w(300);
  w.opaque(2, 1200);
  datagram_seeds(w);
  control_seeds(w);
  auth_seeds();
  subscriber_seeds();
  World small(120);
  snapshot_apply_seeds(small);
  return 0;
}
