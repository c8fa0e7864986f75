// fuzz_subscriber: a Subscriber fed an arbitrary interleaving of datagrams,
// control frames, clock advances and reconnects carved from the input. It
// must never crash or hang, and must keep its promises:
//   - a message is delivered only for a wanted instrument, and per
//     instrument in exact sequence: iseq == previous + 1, where "previous"
//     is the last delivered iseq or the iseq of the last snapshot/reset;
//   - every delivered message is a well-formed message (re-encodes and
//     validates) - nothing delivered from corrupted buffers;
//   - next_sequence() never goes back within a session, and never passes
//     highest_sequence() + 1;
//   - the local books stay internally consistent (checksums, levels, index).
//
// Input: byte 0 picks the configuration; then operations, each
//   u8 op, u16 length, `length` payload bytes
// op % 8 (on datagram ops 0, 1, 4, bit 0x80 means "lost on the wire": kept
// only for retransmit answers):
//   0, 1  raw datagram on rail A / B
//   2     raw control frame
//   3     poll after advancing the clock by payload u32 ns
//   4     datagram built around a message run: payload = u8 flags, u8 seq,
//         u8 session pick, messages (header fields made consistent, CRC sealed)
//   5     control frame built around a body: payload = u8 type, u8 rid, body
//   6     control connected (payload[0] odd) or disconnected
//   7     answer one of the subscriber's latest requests (payload[0]: which,
//         and the status): a retransmit with the datagrams seen so far (bit
//         0x40: handed over as a fetching medium would, on_retransmitted), a
//         snapshot with payload[2..] as its message run (or empty books at
//         iseq payload[1]), a subscribe with an ack
#include <array>
#include <functional>
#include <map>
#include <optional>

#include "fuzz_support.hpp"
#include "mdcast/feed/subscriber.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::fuzz;

namespace {

constexpr uint32_t kSession = 100;
constexpr uint32_t kInstruments = 8;

struct Handler {
  // The subscriber's filter (Subscriber<Handler> cannot be named while
  // Handler is incomplete).
  std::function<bool(uint32_t)> wants;
  std::array<uint32_t, kInstruments> last{};
  bool track = true;  // false without local books: snapshot baselines are unknown

  void on_message(const Message& m, const feed::Delivery&) noexcept {
    FUZZ_CHECK(m.instrument < kInstruments && wants(m.instrument), "delivered unwanted instrument %u",
               m.instrument);
    if (track) {
      FUZZ_CHECK(m.instrument_seq == last[m.instrument] + 1, "instrument %u: delivered iseq %u after %u",
                 m.instrument, m.instrument_seq, last[m.instrument]);
    }
    last[m.instrument] = m.instrument_seq;
    const size_t n = encoded_size(m);
    FUZZ_CHECK(n >= msg::kMdHeaderSize, "delivered an unencodable message (type %d)", static_cast<int>(m.type));
    std::vector<std::byte> b(n);
    encode(m, b.data());
    FUZZ_CHECK(validate_message(b.data(), static_cast<uint16_t>(n)) == MessageCheck::kOk,
               "delivered a message that does not validate (type %d)", static_cast<int>(m.type));
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    FUZZ_CHECK(inst < kInstruments, "snapshot of instrument %u", inst);
    last[inst] = b ? b->book(inst).instrument_seq() : 0;
  }
  void on_reset(uint64_t) noexcept { last.fill(0); }
  void on_event(feed::SubscriberEvent, std::string_view) noexcept {}
};

struct Control : feed::ControlChannel {
  std::vector<std::vector<std::byte>> sent;
  bool send(std::span<const std::byte> f) override {
    if (sent.size() > 256) sent.erase(sent.begin());
    sent.emplace_back(f.begin(), f.end());
    return true;
  }
};

feed::SubscriberConfig config(uint8_t sel) {
  feed::SubscriberConfig c;
  c.channel = 1;
  c.books = {kInstruments, 256, 8};
  c.max_datagram = sel & 1 ? 512 : kMaxDatagram;
  c.window_bytes = 16 * c.max_datagram;  // 16 slots: overflow is easy to reach
  c.all_instruments = !(sel & 2);
  if (!c.all_instruments) c.instruments = {1, 3};
  c.maintain_books = !(sel & 4);
  c.sender_id = sel & 8 ? 9 : 0;
  c.reorder_wait_ns = sel & 16 ? 500 : 0;
  c.verify_checksums = !(sel & 32);
  c.request_timeout_ns = 1000;
  c.max_retries = 2;
  c.max_outstanding = 4;
  c.max_retransmit_span = 64;
  c.max_message = 4096;
  c.max_reassemblies = 2;
  c.max_instrument_recoveries = 2;
  c.instrument_hold_bytes = 2048;
  c.publisher_timeout_ns = 1'000'000;
  c.status_interval_ns = 100'000;
  return c;
}

std::vector<std::byte> datagram_around(Reader& p) {
  const uint8_t flags = static_cast<uint8_t>(p.u8() & kKnownDatagramFlags);
  const uint64_t seq = p.u8();
  const uint8_t pick = p.u8();
  const uint64_t session = pick % 4 == 1 ? kSession + 1 : pick % 4 == 2 ? kSession - 1 : kSession;
  auto run = p.rest();
  if (run.size() > kMaxDatagram - dgram::kHeaderSize) run = run.first(kMaxDatagram - dgram::kHeaderSize);
  std::vector<std::byte> d(dgram::kHeaderSize + run.size());
  DatagramHeader h;
  h.flags = flags;
  h.channel = pick & 0x80 ? 2 : 1;
  const int n = validate_message_run(run.data(), run.size());
  h.message_count = static_cast<uint16_t>(n < 0 ? 0 : n);
  h.session = session;
  h.sender = pick & 0x40 ? 9 : 5;
  h.sequence = seq;
  h.length = static_cast<uint16_t>(d.size());
  write_header(d.data(), h);
  if (!run.empty()) std::memcpy(d.data() + dgram::kHeaderSize, run.data(), run.size());
  if (flags & kFlagCrc) seal_crc(d);
  return d;
}

std::vector<std::byte> frame_around(Reader& p, uint32_t rid_base) {
  const uint8_t type = p.u8();
  const uint32_t rid = rid_base + p.u8() % 8;
  auto body = p.rest();
  std::vector<std::byte> f(ctl::kHeaderSize + body.size());
  store_le<uint32_t>(f.data() + ctl::kLength, static_cast<uint32_t>(f.size()));
  store_le<uint8_t>(f.data() + ctl::kType, static_cast<uint8_t>(type % 11));
  store_le<uint8_t>(f.data() + ctl::kVersion, kVersion);
  store_le<uint32_t>(f.data() + ctl::kRequestId, rid);
  if (!body.empty()) std::memcpy(f.data() + ctl::kHeaderSize, body.data(), body.size());
  return f;
}

// MDCAST_FUZZ_STATS=1: sum every input's counters and print them at exit,
// to see which recovery paths a corpus reaches (e.g. with -runs=0).
struct Stats {
  std::array<uint64_t, feed::SubscriberCounters::kCount> sum{};
  uint64_t inputs = 0;
  bool on = [] {
    const char* e = std::getenv("MDCAST_FUZZ_STATS");
    return e && *e == '1';
  }();
  void add(const feed::SubscriberCounters& c) {
    if (!on) return;
    ++inputs;
    for (size_t i = 0; i < feed::SubscriberCounters::kCount; ++i) sum[i] += c.at(i).get();
  }
  ~Stats() {
    if (!on) return;
    std::fprintf(stderr, "subscriber counters summed over %llu inputs:\n", static_cast<unsigned long long>(inputs));
    for (size_t i = 0; i < feed::SubscriberCounters::kCount; ++i)
      std::fprintf(stderr, "  %-22.*s %llu\n", static_cast<int>(feed::SubscriberCounters::kInfo[i].name.size()),
                   feed::SubscriberCounters::kInfo[i].name.data(), static_cast<unsigned long long>(sum[i]));
  }
} g_stats;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const feed::SubscriberConfig cfg = config(in.u8());
  Handler h;
  h.track = cfg.maintain_books;
  Control ctl;
  feed::Subscriber<Handler> sub(cfg, h, &ctl);
  h.wants = [&sub](uint32_t i) { return sub.wants(i); };
  uint64_t now = 1'000'000;
  std::map<uint64_t, std::vector<std::byte>> seen;  // datagrams by sequence, for retransmit answers
  uint64_t session = 0;
  uint64_t changes = 0;
  uint64_t cuts = 0;  // forged runs cut: the one time the position may go back within a session
  uint64_t next = 1;
  sub.on_control_connected(now);

  auto rx = [&](std::span<const std::byte> d, feed::Rail r, bool lost) {
    DatagramHeader hd;
    if (validate_datagram(d, hd) == DatagramCheck::kOk && hd.sequenced() && seen.size() < 4096)
      seen[hd.sequence].assign(d.begin(), d.end());
    // An exact-size copy: ASan then sees any read past the end (builders
    // and the input buffer may have bytes after it).
    const std::vector<std::byte> exact(d.begin(), d.end());
    if (!lost) sub.on_datagram(exact, r, now);
  };
  auto frame = [&](std::span<const std::byte> f) {
    const std::vector<std::byte> exact(f.begin(), f.end());
    sub.on_control_frame(exact, now);
  };

  for (int ops = 0; !in.empty() && ops < 512; ++ops) {
    const uint8_t op = in.u8();
    const auto payload = in.bytes(in.u16());
    Reader p(reinterpret_cast<const uint8_t*>(payload.data()), payload.size());
    switch (op % 8) {
      case 0:
      case 1:
        rx(p.rest(), op % 8 ? feed::Rail::kB : feed::Rail::kA, op & 0x80);
        break;
      case 2:
        frame(p.rest());
        break;
      case 3:
        now += p.u32() % 10'000'000;
        sub.poll(now);
        break;
      case 4:
        rx(datagram_around(p), feed::Rail::kA, op & 0x80);
        break;
      case 5:
        frame(frame_around(p, 1));
        break;
      case 6:
        if (p.u8() & 1) sub.on_control_connected(now);
        else sub.on_control_disconnected();
        break;
      case 7: {
        // Answers the k-th most recent request (status reports skipped), so
        // recovery completes without the fuzzer guessing request ids.
        const uint8_t st = p.u8();
        std::optional<ControlFrame> req;
        for (size_t i = ctl.sent.size(), k = (st >> 4) % 4; i-- > 0;) {
          auto f = parse_control(ctl.sent[i], nullptr);
          FUZZ_CHECK(f.has_value(), "the subscriber sent a malformed frame");
          if (std::holds_alternative<StatusReport>(f->body) || std::holds_alternative<Unsubscribe>(f->body)) continue;
          if (k-- == 0) {
            req = std::move(f);
            break;
          }
        }
        if (!req) break;
        if (const auto* r = std::get_if<RetransmitRequest>(&req->body); r && (st & 0x40)) {
          // As a medium that fetched the range itself answers: no frame;
          // nothing fetched unless the status picked is ok.
          std::vector<std::vector<std::byte>> copies;
          if (st % 4 == 0)
            for (uint64_t s = r->from_seq; s < r->from_seq + r->count && s - r->from_seq < 64; ++s) {
              const auto it = seen.find(s);
              if (it == seen.end()) break;
              copies.push_back(it->second);
            }
          std::vector<std::span<const std::byte>> views(copies.begin(), copies.end());
          sub.on_retransmitted(req->request_id, st & 8 ? r->session + 1 : r->session, views, now);
        } else if (r) {
          RetransmitReplyBuilder b(req->request_id, st & 8 ? r->session + 1 : r->session,
                                   static_cast<RetransmitStatus>(st % 4), r->from_seq, 1);
          if (st % 4 == 0)
            for (uint64_t s = r->from_seq; s < r->from_seq + r->count && s - r->from_seq < 64; ++s) {
              const auto it = seen.find(s);
              if (it == seen.end()) break;
              b.add(it->second);
            }
          frame(std::move(b).finish());
        } else if (const auto* q = std::get_if<SnapshotRequest>(&req->body)) {
          const uint64_t snap = seen.empty() ? 0 : seen.rbegin()->first;
          const uint8_t iseq = p.u8();
          SnapshotDataBuilder b(req->request_id, kSession);
          auto run = p.rest();
          if (!run.empty() && validate_message_run(run.data(), run.size()) >= 0) {
            std::memcpy(b.reserve(run.size()), run.data(), run.size());
          } else {
            // No usable run in the input: empty books at `iseq` for what was asked.
            std::vector<uint32_t> ids = q->instruments.ids;
            if (q->instruments.all)
              for (uint32_t i = 0; i < kInstruments; ++i) ids.push_back(i);
            for (uint32_t i : ids)
              write_snapshot_chunk_header(b.reserve(snapshot_chunk::kOrders), i, iseq, snap, 0, 1, 0,
                                          TradingStatus::kTrading);
          }
          frame(std::move(b).finish());
          frame(encode_control(req->request_id, SnapshotDone{kSession, static_cast<SnapshotStatus>(st % 3),
                                                             kInstruments, st & 4 ? snap : st}));
        } else if (std::get_if<Subscribe>(&req->body)) {
          frame(encode_control(req->request_id, SubscribeAck{kSession, uint64_t{st} & 0x0fu, 1, ctl::kAll}));
        } else if (std::get_if<SessionQuery>(&req->body)) {
          // The publisher's word on what a datagram claimed: its session, its
          // tail (what was seen, or a small number), ended or not.
          const uint64_t last = st & 4 && !seen.empty() ? seen.rbegin()->first : uint64_t{st} & 0x0fu;
          frame(encode_control(req->request_id,
                               SessionStatus{st & 8 ? kSession + 1 : kSession, last, 1, (st & 1) != 0, last}));
        }
        break;
      }
    }
    // Sequence invariants, per session (a reused session id the control
    // plane showed to be a new run counts as a new session). A forged run
    // the control plane disproved is cut: the position goes back to the
    // publisher's, on purpose.
    if (sub.session() != session || sub.counters().session_changes.get() != changes ||
        sub.counters().forged_runs.get() != cuts) {
      session = sub.session();
      changes = sub.counters().session_changes.get();
      cuts = sub.counters().forged_runs.get();
      next = sub.next_sequence();
    }
    FUZZ_CHECK(sub.next_sequence() >= next, "next_sequence went back from %llu to %llu",
               static_cast<unsigned long long>(next), static_cast<unsigned long long>(sub.next_sequence()));
    next = sub.next_sequence();
    // (Written as next - 1 <= highest: highest may be 2^64 - 1.)
    FUZZ_CHECK(sub.next_sequence() >= 1 && sub.next_sequence() - 1 <= sub.highest_sequence(),
               "next %llu beyond highest %llu", static_cast<unsigned long long>(sub.next_sequence()),
               static_cast<unsigned long long>(sub.highest_sequence()));
  }
  if (sub.books()) check_books(*sub.books());
  g_stats.add(sub.counters());
  return 0;
}
