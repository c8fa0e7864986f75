// mdcast-pcap-decode's printer (pcap_fields.hpp).
#include "pcap_fields.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/crc32c.hpp"
#include "mdcast/media/udp/udp_announce.hpp"
#include "mdcast/wire/auth.hpp"
#include "mdcast/wire/control.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::test::pcap {
namespace {

using namespace mdcast;
using namespace mdcast::wire;

// Malformed datagrams and frames named on stderr; the rest are only counted
// (a corrupted capture has thousands).
constexpr uint64_t kReported = 20;

// The dissector's fields, in the order the test passes them to tshark (-e).
// mdcast.msg.price_scaled is the one field left out: a double whose text
// form is Wireshark's to choose.
constexpr std::string_view kFields[] = {
    "mdcast.magic", "mdcast.version", "mdcast.flags", "mdcast.flags.unsequenced", "mdcast.flags.crc",
    "mdcast.flags.end_of_session", "mdcast.flags.filtered", "mdcast.flags.tag", "mdcast.flags.unknown",
    "mdcast.channel", "mdcast.message_count", "mdcast.session", "mdcast.seq", "mdcast.send_time", "mdcast.send_wall", "mdcast.length",
    "mdcast.sender", "mdcast.crc", "mdcast.crc.status", "mdcast.tag", "mdcast.messages_found",
    "mdcast.msg.length", "mdcast.msg.type", "mdcast.msg.flags", "mdcast.msg.instrument", "mdcast.msg.instrument_seq",
    "mdcast.msg.symbol", "mdcast.msg.lot_size", "mdcast.msg.price_exponent", "mdcast.msg.order_id",
    "mdcast.msg.price", "mdcast.msg.quantity", "mdcast.msg.side", "mdcast.msg.trade_id",
    "mdcast.msg.trading_status", "mdcast.msg.snapshot_seq", "mdcast.msg.chunk_index", "mdcast.msg.chunk_count",
    "mdcast.msg.order_count", "mdcast.msg.last_seq", "mdcast.msg.global_checksum", "mdcast.msg.instrument_count",
    "mdcast.msg.entry_count", "mdcast.msg.checksum", "mdcast.msg.message_id", "mdcast.msg.fragment_index",
    "mdcast.msg.fragment_count", "mdcast.msg.total_length", "mdcast.msg.payload",
    "mdcast.ctl.length", "mdcast.ctl.type", "mdcast.ctl.version", "mdcast.ctl.reserved", "mdcast.ctl.request_id",
    "mdcast.ctl.channel", "mdcast.ctl.credential_length", "mdcast.ctl.sender_id", "mdcast.ctl.instrument_count",
    "mdcast.ctl.instrument", "mdcast.ctl.session", "mdcast.ctl.last_seq", "mdcast.ctl.oldest_seq",
    "mdcast.ctl.granted", "mdcast.ctl.from_seq", "mdcast.ctl.count", "mdcast.ctl.retransmit_status",
    "mdcast.ctl.datagram_count", "mdcast.ctl.oldest_available", "mdcast.ctl.datagram_length",
    "mdcast.ctl.datagrams_found", "mdcast.ctl.snapshot_status", "mdcast.ctl.instruments", "mdcast.ctl.snapshot_seq",
    "mdcast.ctl.position", "mdcast.ctl.lag", "mdcast.ctl.drops", "mdcast.ctl.capacity", "mdcast.ctl.session_flags",
    "mdcast.ctl.features.latency", "mdcast.ctl.latency_count", "mdcast.ctl.latency_p50", "mdcast.ctl.latency_p99",
    "mdcast.ctl.latency_max",
    "mdcast.ctl.session_flags.ended", "mdcast.ctl.end_seq", "mdcast.ctl.error_code", "mdcast.ctl.text_length",
    "mdcast.ctl.text", "mdcast.ctl.scheme", "mdcast.ctl.identity_length", "mdcast.ctl.client_nonce",
    "mdcast.ctl.identity", "mdcast.ctl.server_nonce", "mdcast.ctl.server_proof", "mdcast.ctl.client_proof",
    "mdcast.ctl.wrapped_key", "mdcast.ctl.key_check",
    "mdcast.ann.magic", "mdcast.ann.version", "mdcast.ann.address_length", "mdcast.ann.channel",
    "mdcast.ann.reserved", "mdcast.ann.session", "mdcast.ann.address", "mdcast.ann.signature",
    "mdcast.rec.kind", "mdcast.rec.session", "mdcast.rec.clock_offset", "mdcast.rec.first_missing",
    "mdcast.rec.next_seq", "mdcast.rec.last_frame",
};

// Text forms as tshark writes them: decimal; hexadecimal zero-padded to the
// field's width; booleans 1/0; bytes as contiguous lowercase hex.
std::string dec(uint64_t v) { return std::to_string(v); }
std::string sdec(int64_t v) { return std::to_string(v); }
std::string hex(uint64_t v, int bytes) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%0*llx", bytes * 2, static_cast<unsigned long long>(v));
  return b;
}
std::string boolean(bool v) { return v ? "1" : "0"; }
std::string hexbytes(Bytes b) {
  std::string s;
  char x[3];
  for (const std::byte c : b) {
    std::snprintf(x, sizeof x, "%02x", std::to_integer<unsigned>(c));
    s += x;
  }
  return s;
}
std::string text(std::string_view v) {
  std::string s;
  for (const char c : v) {
    if (c == '\\') s += "\\\\";
    else if (c == '\t') s += "\\t";
    else if (c == '\n') s += "\\n";
    else if (c == '\r') s += "\\r";
    else s += c;
  }
  return s;
}
template <class T>
T le(Bytes b, size_t off) { return load_le<T>(b.data() + off); }
// An absolute time as tshark writes a UTC FT_ABSOLUTE_TIME: "Jan  2, 2026 12:00:00.500000000 UTC".
std::string utc(int64_t ns) {
  const time_t s = static_cast<time_t>(ns / 1'000'000'000);
  tm t{};
  gmtime_r(&s, &t);
  char b[64];
  const size_t n = std::strftime(b, sizeof b, "%b %e, %Y %H:%M:%S", &t);
  std::snprintf(b + n, sizeof b - n, ".%09lld UTC", static_cast<long long>(ns % 1'000'000'000));
  return b;
}
// The dissector's window for a plausible wall-clock send time (mdcast.lua:
// WALL_BEFORE_NS, WALL_AFTER_NS): outside it the publisher's monotonic clock
// is not the recording host's.
constexpr int64_t kWallBeforeNs = 60'000'000'000, kWallAfterNs = 1'000'000;


class Walker {
 public:
  Walker(Summary& s, Clocks& c) : sum_(s), clocks_(c) {}

  // One message of a validated run, fields in the dissector's order.
  void message(Packet& p, MessageView v) {
    const Bytes b = v.bytes();
    p.add("mdcast.msg.length", dec(v.size()));
    p.add("mdcast.msg.type", dec(std::to_integer<unsigned>(b[msg::kType])));
    p.add("mdcast.msg.flags", hex(std::to_integer<unsigned>(b[msg::kFlags]), 1));
    const auto type = v.type();
    const unsigned raw_type = std::to_integer<unsigned>(b[msg::kType]);
    if (raw_type < 1 || raw_type > 10) {
      sum_.count("msg.unknown");
      if (v.size() > 4) p.add("mdcast.msg.payload", hexbytes(b.subspan(4)));
      return;
    }
    sum_.count("msg." + std::string(to_string(type)));
    if (is_market_data(type)) {
      p.add("mdcast.msg.instrument", dec(v.instrument()));
      p.add("mdcast.msg.instrument_seq", dec(v.instrument_seq()));
    }
    switch (type) {
      case MsgType::kSnapshotChunk: {
        const SnapshotChunkView c(v);
        p.add("mdcast.msg.snapshot_seq", dec(c.snapshot_seq()));
        p.add("mdcast.msg.chunk_index", dec(c.chunk_index()));
        p.add("mdcast.msg.chunk_count", dec(c.chunk_count()));
        p.add("mdcast.msg.order_count", dec(c.order_count()));
        p.add("mdcast.msg.trading_status", dec(static_cast<unsigned>(c.status())));
        for (size_t i = 0; i < c.order_count(); ++i) {
          const auto e = c.order(i);
          p.add("mdcast.msg.order_id", dec(e.order_id));
          p.add("mdcast.msg.price", sdec(e.price));
          p.add("mdcast.msg.quantity", dec(e.quantity));
          p.add("mdcast.msg.side", dec(static_cast<unsigned>(e.side)));
        }
        return;
      }
      case MsgType::kHeartbeat: {
        const HeartbeatView h(v);
        p.add("mdcast.msg.last_seq", dec(h.last_seq()));
        p.add("mdcast.msg.global_checksum", hex(h.global_checksum(), 8));
        p.add("mdcast.msg.instrument_count", dec(h.instrument_count()));
        p.add("mdcast.msg.entry_count", dec(h.entry_count()));
        for (size_t i = 0; i < h.entry_count(); ++i) {
          const auto e = h.entry(i);
          p.add("mdcast.msg.instrument", dec(e.instrument));
          p.add("mdcast.msg.instrument_seq", dec(e.instrument_seq));
          p.add("mdcast.msg.checksum", hex(e.checksum, 8));
        }
        return;
      }
      case MsgType::kFragment: {
        const FragmentView f(v);
        p.add("mdcast.msg.instrument", dec(f.instrument()));
        p.add("mdcast.msg.message_id", dec(f.message_id()));
        p.add("mdcast.msg.fragment_index", dec(f.index()));
        p.add("mdcast.msg.fragment_count", dec(f.count()));
        p.add("mdcast.msg.total_length", dec(f.total_length()));
        if (!f.payload().empty()) p.add("mdcast.msg.payload", hexbytes(f.payload()));
        return;
      }
      default:
        break;
    }
    const Message m = decode(v);
    switch (m.type) {
      case MsgType::kInstrumentDefinition:
        p.add("mdcast.msg.symbol", text(m.definition.symbol_view()));
        p.add("mdcast.msg.lot_size", dec(m.definition.lot_size));
        p.add("mdcast.msg.price_exponent", sdec(m.definition.price_exponent));
        break;
      case MsgType::kAddOrder:
        p.add("mdcast.msg.order_id", dec(m.add.order_id));
        p.add("mdcast.msg.price", sdec(m.add.price));
        p.add("mdcast.msg.quantity", dec(m.add.quantity));
        p.add("mdcast.msg.side", dec(static_cast<unsigned>(m.add.side)));
        break;
      case MsgType::kModifyOrder:
        p.add("mdcast.msg.order_id", dec(m.modify.order_id));
        p.add("mdcast.msg.price", sdec(m.modify.price));
        p.add("mdcast.msg.quantity", dec(m.modify.quantity));
        break;
      case MsgType::kDeleteOrder:
        p.add("mdcast.msg.order_id", dec(m.del.order_id));
        break;
      case MsgType::kExecuteOrder:
        p.add("mdcast.msg.order_id", dec(m.execute.order_id));
        p.add("mdcast.msg.price", sdec(m.execute.price));
        p.add("mdcast.msg.quantity", dec(m.execute.quantity));
        p.add("mdcast.msg.trade_id", dec(m.execute.trade_id));
        break;
      case MsgType::kTradingStatus:
        p.add("mdcast.msg.trading_status", dec(static_cast<unsigned>(m.status.status)));
        break;
      case MsgType::kOpaque:
        if (m.opaque.size > 0) p.add("mdcast.msg.payload", hexbytes({m.opaque.data, m.opaque.size}));
        break;
      default:
        break;
    }
  }

  // One datagram (at least a header's worth, magic matched).
  void datagram(Packet& p, Bytes d, const char* where) {
    DatagramHeader h;
    const DatagramCheck check = validate_datagram(d, h);
    if (check != DatagramCheck::kOk) {
      h = read_header(d.data());
      sum_.count("malformed");
      if (sum_.counts["malformed"] <= kReported)
        std::fprintf(stderr, "mdcast-pcap-decode: %s datagram seq %llu: %.*s\n", where,
                   static_cast<unsigned long long>(h.sequence), int(to_string(check).size()), to_string(check).data());
    }
    sum_.count(std::string(where) + ".datagrams");
    p.add("mdcast.magic", hex(le<uint16_t>(d, dgram::kMagic), 2));
    p.add("mdcast.version", dec(std::to_integer<unsigned>(d[dgram::kVersion])));
    p.add("mdcast.flags", hex(h.flags, 1));
    p.add("mdcast.flags.unsequenced", boolean(h.flags & kFlagUnsequenced));
    p.add("mdcast.flags.crc", boolean(h.flags & kFlagCrc));
    p.add("mdcast.flags.end_of_session", boolean(h.flags & kFlagEndOfSession));
    p.add("mdcast.flags.filtered", boolean(h.flags & kFlagFiltered));
    p.add("mdcast.flags.tag", boolean(h.flags & kFlagTag));
    p.add("mdcast.flags.unknown", hex((h.flags & 0xe0) >> 5, 1));
    p.add("mdcast.channel", dec(h.channel));
    p.add("mdcast.message_count", dec(h.message_count));
    p.add("mdcast.session", hex(h.session, 8));
    p.add("mdcast.seq", dec(h.sequence));
    p.add("mdcast.send_time", dec(h.send_time_ns));
    if (const auto it = clocks_.offsets.find(h.session); it != clocks_.offsets.end()) {
      // Two's complement wrap as the dissector's Int64 sum does.
      const auto wall = static_cast<int64_t>(h.send_time_ns + static_cast<uint64_t>(it->second));
      // Both sides non-negative before subtracting: a corrupted send time
      // must not overflow (UBSan found one in a damaged capture).
      const int64_t early = wall >= 0 && clocks_.capture_ns >= 0 ? clocks_.capture_ns - wall : INT64_MIN;
      if (early != INT64_MIN && early >= -kWallAfterNs && early <= kWallBeforeNs) {
        p.add("mdcast.send_wall", utc(wall));
        sum_.count("send_wall");
      }
    }
    p.add("mdcast.length", dec(h.length));
    p.add("mdcast.sender", dec(h.sender));
    const uint32_t crc = le<uint32_t>(d, dgram::kCrc);
    p.add("mdcast.crc", hex(crc, 4));
    // crc.status as the dissector computes it: 0 absent, 1 good, 2 bad.
    if (h.flags & kFlagCrc) {
      std::vector<std::byte> copy(d.begin(), d.end());
      std::memset(copy.data() + dgram::kCrc, 0, 4);
      p.add("mdcast.crc.status", dec(crc32c(copy) == crc ? 1 : 2));
    } else {
      p.add("mdcast.crc.status", "0");
    }
    // The tag is shown, not checked: checking needs the session's data key.
    if ((h.flags & kFlagTag) && d.size() >= dgram::kHeaderSize + dgram::kTagSize)
      p.add("mdcast.tag", hexbytes(d.subspan(d.size() - dgram::kTagSize)));
    if (check != DatagramCheck::kOk) return;
    if (h.flags & kFlagEndOfSession) sum_.count("end_of_session");
    auto cur = MessageCursor::payload_of(d);
    MessageView v;
    size_t found = 0;
    while (cur.next(v)) {
      message(p, v);
      ++found;
    }
    p.add("mdcast.messages_found", dec(found));
  }

  // A UDP payload the dissector would take (heuristic or port).
  void udp_payload(Packet& p, Bytes pl) {
    if (pl.size() >= 8 && std::memcmp(pl.data(), "MDCREC01", 8) == 0) {
      marker(p, pl);
      return;
    }
    if (pl.size() >= 3 && le<uint16_t>(pl, 0) == media::udp::kAnnounceMagic &&
        (std::to_integer<unsigned>(pl[2]) == media::udp::kAnnounceVersion ||
         std::to_integer<unsigned>(pl[2]) == media::udp::kAnnounceSignedVersion)) {
      announcement(p, pl);
      return;
    }
    p.mark_present();
    size_t off = 0;
    while (off < pl.size()) {
      const size_t left = pl.size() - off;
      if (left < dgram::kHeaderSize) {
        sum_.count("malformed");
        break;
      }
      if (le<uint16_t>(pl, off) != kMagic) {
        p.add("mdcast.magic", hex(le<uint16_t>(pl, off), 2));
        sum_.count("malformed");
        break;
      }
      size_t len = le<uint16_t>(pl, off + dgram::kLength);
      if (len < dgram::kHeaderSize || len > left || (len < left && !looks_like_header(pl.subspan(off + len))))
        len = left;
      datagram(p, pl.subspan(off, len), "udp");
      off += len;
    }
  }

  // A marker `mdcast record` writes where the sequence breaks (docs/recording.md):
  // "MDCREC01", u8 kind, 7 zero, u64 a, u64 b; an image's messages follow.
  void marker(Packet& p, Bytes pl) {
    sum_.count("rec.markers");
    if (pl.size() < 32) {
      sum_.count("malformed");
      return;
    }
    const auto kind = std::to_integer<unsigned>(pl[8]);
    p.add("mdcast.rec.kind", dec(kind));
    const uint64_t a = le<uint64_t>(pl, 16), b = le<uint64_t>(pl, 24);
    if (kind == 1) {
      p.add("mdcast.rec.first_missing", dec(a));
      p.add("mdcast.rec.next_seq", dec(b));
    } else if (kind == 2) {
      p.add("mdcast.rec.session", hex(a, 8));
      p.add("mdcast.rec.clock_offset", sdec(static_cast<int64_t>(b)));
      if (b != 0) clocks_.offsets[a] = static_cast<int64_t>(b);
    } else if (kind == 3) {
      p.add("mdcast.rec.next_seq", dec(a));
      p.add("mdcast.rec.last_frame", dec(b));
    }
    if (kind != 3) return;
    // The run is bytes from a file: each length is checked before it is followed.
    size_t off = 32, found = 0;
    while (off + 4 <= pl.size()) {
      const size_t len = le<uint16_t>(pl, off);
      if (len < 4 || len > pl.size() - off ||
          validate_message(pl.data() + off, static_cast<uint16_t>(len)) != MessageCheck::kOk) {
        sum_.count("malformed");
        break;
      }
      message(p, MessageView(pl.data() + off, static_cast<uint16_t>(len)));
      ++found;
      off += len;
    }
    p.add("mdcast.messages_found", dec(found));
  }

  void announcement(Packet& p, Bytes pl) {
    p.mark_present();
    sum_.count("announcements");
    if (pl.size() < media::udp::kAnnounceHeader) {
      sum_.count("malformed");
      return;
    }
    media::udp::Announcement a;
    const bool ok = media::udp::decode_announcement(pl, a);
    if (!ok) sum_.count("malformed");
    const size_t n = std::to_integer<uint8_t>(pl[3]);
    p.add("mdcast.ann.magic", hex(le<uint16_t>(pl, 0), 2));
    p.add("mdcast.ann.version", dec(std::to_integer<unsigned>(pl[2])));
    p.add("mdcast.ann.address_length", dec(n));
    p.add("mdcast.ann.channel", dec(ok ? a.channel : le<uint16_t>(pl, 4)));
    p.add("mdcast.ann.reserved", hex(le<uint16_t>(pl, 6), 2));
    p.add("mdcast.ann.session", hex(ok ? a.session : le<uint64_t>(pl, 8), 8));
    const size_t shown = std::min(n, pl.size() - media::udp::kAnnounceHeader);
    if (ok) p.add("mdcast.ann.address", text(a.address));
    else if (shown > 0) p.add("mdcast.ann.address", text({reinterpret_cast<const char*>(pl.data() + 16), shown}));
    // The signature is shown, never checked (the dissector has no public key).
    const size_t sig_at = media::udp::kAnnounceHeader + n;
    if (std::to_integer<uint8_t>(pl[2]) == media::udp::kAnnounceSignedVersion && pl.size() >= sig_at + 64)
      p.add("mdcast.ann.signature", hexbytes(pl.subspan(sig_at, 64)));
  }

  void instrument_set(Packet& p, const InstrumentSet& s) {
    p.add("mdcast.ctl.instrument_count", dec(s.all ? ctl::kAll : s.ids.size()));
    if (!s.all)
      for (const uint32_t id : s.ids) p.add("mdcast.ctl.instrument", dec(id));
  }

  // One complete control frame.
  void frame(Packet& p, Bytes f) {
    p.add("mdcast.ctl.length", dec(le<uint32_t>(f, ctl::kLength)));
    if (f.size() < ctl::kHeaderSize) {
      sum_.count("malformed");
      return;
    }
    const unsigned type = std::to_integer<unsigned>(f[ctl::kType]);
    p.add("mdcast.ctl.type", dec(type));
    p.add("mdcast.ctl.version", dec(std::to_integer<unsigned>(f[ctl::kVersion])));
    p.add("mdcast.ctl.reserved", hex(le<uint16_t>(f, 6), 2));
    p.add("mdcast.ctl.request_id", dec(le<uint32_t>(f, ctl::kRequestId)));
    std::string why;
    if (is_auth_frame(f)) {
      const auto a = parse_auth(f, &why);
      if (!a) return malformed_frame(type, why);
      sum_.count("ctl." + std::string(to_string(static_cast<CtlType>(type))));
      if (const auto* h = std::get_if<AuthHello>(&a->body)) {
        p.add("mdcast.ctl.channel", dec(h->channel));
        p.add("mdcast.ctl.scheme", dec(std::to_integer<unsigned>(f[auth::kHelloScheme])));
        p.add("mdcast.ctl.identity_length", dec(h->identity.size()));
        p.add("mdcast.ctl.client_nonce", hexbytes(h->client_nonce));
        p.add("mdcast.ctl.identity", text(h->identity));
      } else if (const auto* c = std::get_if<AuthChallenge>(&a->body)) {
        p.add("mdcast.ctl.server_nonce", hexbytes(c->server_nonce));
        p.add("mdcast.ctl.server_proof", hexbytes(c->server_proof));
      } else if (const auto* pr = std::get_if<AuthProof>(&a->body)) {
        p.add("mdcast.ctl.client_proof", hexbytes(pr->client_proof));
      } else if (const auto* k = std::get_if<AuthDataKey>(&a->body)) {
        p.add("mdcast.ctl.session", hex(k->session, 8));
        p.add("mdcast.ctl.wrapped_key", hexbytes(k->wrapped));
        p.add("mdcast.ctl.key_check", hexbytes(k->check));
      }
      return;
    }
    const auto c = parse_control(f, &why);
    if (!c) return malformed_frame(type, why);
    sum_.count("ctl." + std::string(to_string(static_cast<CtlType>(type))));
    std::visit([&](const auto& b) { body(p, f, b); }, c->body);
  }

  [[nodiscard]] static bool looks_like_header(Bytes b) {
    return b.size() >= dgram::kHeaderSize && le<uint16_t>(b, 0) == kMagic &&
           std::to_integer<unsigned>(b[dgram::kVersion]) == kVersion;
  }

 private:
  void malformed_frame(unsigned type, const std::string& why) {
    sum_.count("malformed");
    if (sum_.counts["malformed"] <= kReported)
      std::fprintf(stderr, "mdcast-pcap-decode: control frame of type %u: %s\n", type, why.c_str());
  }
  void body(Packet& p, Bytes f, const Subscribe& b) {
    p.add("mdcast.ctl.channel", dec(b.channel));
    p.add("mdcast.ctl.credential_length", dec(le<uint16_t>(f, 14)));
    p.add("mdcast.ctl.sender_id", dec(b.sender_id));
    instrument_set(p, b.instruments);
  }
  void body(Packet& p, Bytes, const SubscribeAck& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    p.add("mdcast.ctl.last_seq", dec(b.last_seq));
    p.add("mdcast.ctl.oldest_seq", dec(b.oldest_retransmit));
    p.add("mdcast.ctl.granted", dec(b.granted));
    p.add("mdcast.ctl.features.latency", boolean((b.features & SubscribeAck::kAcceptsLatency) != 0));
  }
  void body(Packet& p, Bytes, const Unsubscribe& b) { instrument_set(p, b.instruments); }
  void body(Packet& p, Bytes, const SnapshotRequest& b) { instrument_set(p, b.instruments); }
  void body(Packet& p, Bytes, const RetransmitRequest& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    p.add("mdcast.ctl.from_seq", dec(b.from_seq));
    p.add("mdcast.ctl.count", dec(b.count));
  }
  void body(Packet& p, Bytes f, const RetransmitReply& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    p.add("mdcast.ctl.retransmit_status", dec(static_cast<unsigned>(b.status)));
    p.add("mdcast.ctl.datagram_count", dec(le<uint32_t>(f, 24)));
    p.add("mdcast.ctl.from_seq", dec(b.from_seq));
    p.add("mdcast.ctl.oldest_available", dec(b.oldest_available));
    for (const Bytes d : b.datagrams) {
      p.add("mdcast.ctl.datagram_length", dec(d.size()));
      if (d.size() >= dgram::kHeaderSize && le<uint16_t>(d, 0) == kMagic) datagram(p, d, "retransmitted");
      else sum_.count("malformed");
    }
    p.add("mdcast.ctl.datagrams_found", dec(b.datagrams.size()));
  }
  void body(Packet& p, Bytes, const SnapshotData& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    MessageCursor cur(b.messages.data(), b.messages.size());
    MessageView v;
    while (cur.next(v)) message(p, v);
  }
  void body(Packet& p, Bytes, const SnapshotDone& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    p.add("mdcast.ctl.snapshot_status", dec(static_cast<unsigned>(b.status)));
    p.add("mdcast.ctl.instruments", dec(b.instrument_count));
    p.add("mdcast.ctl.snapshot_seq", dec(b.snapshot_seq));
  }
  void body(Packet& p, Bytes, const StatusReport& b) {
    p.add("mdcast.ctl.position", dec(b.position));
    p.add("mdcast.ctl.lag", dec(b.lag));
    p.add("mdcast.ctl.drops", dec(b.drops));
    p.add("mdcast.ctl.capacity", dec(b.capacity));
  }
  void body(Packet& p, Bytes, const LatencyReport& b) {
    p.add("mdcast.ctl.latency_count", dec(b.count));
    p.add("mdcast.ctl.latency_p50", dec(b.p50_ns));
    p.add("mdcast.ctl.latency_p99", dec(b.p99_ns));
    p.add("mdcast.ctl.latency_max", dec(b.max_ns));
  }
  void body(Packet& p, Bytes f, const ErrorReply& b) {
    p.add("mdcast.ctl.error_code", dec(static_cast<unsigned>(b.code)));
    p.add("mdcast.ctl.text_length", dec(le<uint16_t>(f, 14)));
    if (!b.text.empty()) p.add("mdcast.ctl.text", text(b.text));
  }
  void body(Packet&, Bytes, const SessionQuery&) {}
  void body(Packet& p, Bytes f, const SessionStatus& b) {
    p.add("mdcast.ctl.session", hex(b.session, 8));
    p.add("mdcast.ctl.last_seq", dec(b.last_seq));
    p.add("mdcast.ctl.oldest_seq", dec(b.oldest_retransmit));
    p.add("mdcast.ctl.session_flags", hex(std::to_integer<unsigned>(f[36]), 1));
    p.add("mdcast.ctl.session_flags.ended", boolean(b.ended));
    p.add("mdcast.ctl.end_seq", dec(b.end_seq));
  }

  Summary& sum_;
  Clocks& clocks_;
};

}  // namespace

std::span<const std::string_view> fields() noexcept { return kFields; }

void Packet::add(std::string_view field, std::string value) {
  if (std::find(std::begin(kFields), std::end(kFields), field) == std::end(kFields)) {
    std::fprintf(stderr, "mdcast-pcap-decode: field %.*s is not in the field list\n", int(field.size()), field.data());
    std::exit(2);
  }
  auto it = values_.find(field);
  if (it == values_.end()) it = values_.emplace(std::string(field), std::vector<std::string>{}).first;
  it->second.push_back(std::move(value));
  present_ = true;
}

void Packet::print(FILE* out, uint64_t frame) const {
  std::fprintf(out, "%llu", static_cast<unsigned long long>(frame));
  for (const std::string_view f : kFields) {
    std::fputc('\t', out);
    const auto it = values_.find(f);
    if (it == values_.end()) continue;
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (i) std::fputc('|', out);
      std::fputs(it->second[i].c_str(), out);
    }
  }
  std::fputc('\n', out);
}

void Decoder::udp_payload(Packet& p, Bytes payload) { Walker(sum_, clocks_).udp_payload(p, payload); }
void Decoder::frame(Packet& p, Bytes frame) { Walker(sum_, clocks_).frame(p, frame); }
bool Decoder::looks_like_header(Bytes b) noexcept { return Walker::looks_like_header(b); }

}  // namespace mdcast::test::pcap
