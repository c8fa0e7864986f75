// mdcast-pcap-decode: what mdcast's own decoders make of a capture, printed
// the way `tshark -T fields -E occurrence=a -E aggregator='|'` prints the
// Wireshark dissector's fields (tools/wireshark/mdcast.lua), so that the two
// outputs can be diffed (tests/system/wireshark_dissector.sh).
//
//   mdcast-pcap-decode --fields              the field list, one a line (tshark's -e)
//   mdcast-pcap-decode [--control-port P]... [--data-port P]... [--summary FILE] CAPTURE
//
// One line per packet holding mdcast: the frame number, then every field in
// --fields order, each field's occurrences in the order the dissector adds
// them, joined by '|'. UDP payloads are datagrams (magic "MC" v2, several back
// to back when a GSO send was captured before segmentation) or announcements
// ("MA" v1); TCP payloads of the control ports (or of a connection whose first
// data is a plausible frame header, as the dissector's heuristic) are
// reassembled per direction and cut into frames with wire::FrameAssembler.
// Values come from validate_datagram / parse_control / parse_auth /
// decode_announcement and the message views; only what those do not keep
// (magic, version, reserved words, raw lengths) is read from the bytes.
//
// This is a test tool: control code, allocation is fine, and it expects a
// capture without TCP retransmissions (loopback). A malformed datagram or frame
// is counted (summary key `malformed`) and only its header is printed.
#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/media/udp/udp_announce.hpp"
#include "mdcast/wire/control.hpp"
#include "mdcast/wire/protocol.hpp"
#include "pcap_fields.hpp"

namespace {

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::test::pcap;

template <class T>
T le(Bytes b, size_t off) { return load_le<T>(b.data() + off); }
std::string dec(uint64_t v) { return std::to_string(v); }

struct Options {
  std::vector<uint16_t> control_ports;
  std::vector<uint16_t> data_ports;
  std::string summary;
};

// One direction of a TCP connection: bytes in sequence order, cut into frames.
struct Flow {
  bool started = false;
  bool dead = false;  // a length prefix out of range: nothing after it can be framed
  uint32_t next_seq = 0;
  FrameAssembler frames{ctl::kMaxFrame};
};
struct Endpoint {
  uint32_t ip;
  uint16_t port;
  auto operator<=>(const Endpoint&) const = default;
};

// The dissector's TCP heuristic: a plausible frame header (length in range,
// version 2, a known type, reserved 0, a fixed-size type's exact size).
bool plausible_frame(Bytes b) {
  if (b.size() < ctl::kHeaderSize) return false;
  const uint32_t len = le<uint32_t>(b, 0);
  const unsigned type = std::to_integer<unsigned>(b[ctl::kType]);
  if (len < ctl::kHeaderSize || len > ctl::kMaxFrame || std::to_integer<unsigned>(b[ctl::kVersion]) != kVersion ||
      type < 1 || type > 15 || le<uint16_t>(b, 6) != 0)
    return false;
  static constexpr std::array<uint32_t, 16> kExact = {0, 0, 40, 0, 32, 0, 0, 0, 36, 44, 0, 0, 76, 44, 12, 48};
  return kExact[type] == 0 || kExact[type] == len;
}

class Capture {
 public:
  Capture(const Options& o, Decoder& d, Summary& s) : o_(o), dec_(d), sum_(s) {}

  // Returns the IPv4 packet inside a link-layer frame (empty if none).
  static Bytes ipv4_of(int linktype, Bytes f) {
    size_t off = 0;
    uint16_t proto = 0;
    switch (linktype) {
      case DLT_EN10MB:
        if (f.size() < 14) return {};
        off = 14;
        proto = static_cast<uint16_t>(std::to_integer<unsigned>(f[12]) << 8 | std::to_integer<unsigned>(f[13]));
        while (proto == 0x8100 && f.size() >= off + 4) {  // VLAN tags
          proto = static_cast<uint16_t>(std::to_integer<unsigned>(f[off + 2]) << 8 |
                                        std::to_integer<unsigned>(f[off + 3]));
          off += 4;
        }
        break;
      case DLT_LINUX_SLL:
        if (f.size() < 16) return {};
        off = 16;
        proto = static_cast<uint16_t>(std::to_integer<unsigned>(f[14]) << 8 | std::to_integer<unsigned>(f[15]));
        break;
      case DLT_RAW:
      case 228:  // LINKTYPE_IPV4
        proto = 0x0800;
        break;
      default:
        return {};
    }
    if (proto != 0x0800 || f.size() <= off) return {};
    return f.subspan(off);
  }

  void packet(uint64_t frame, Bytes ip) {
    Packet p;
    if (ip.size() < 20 || (std::to_integer<unsigned>(ip[0]) >> 4) != 4) return;
    const size_t ihl = (std::to_integer<unsigned>(ip[0]) & 0xf) * 4u;
    const size_t total = std::min<size_t>(ip.size(), be16(ip, 2));
    if (ihl < 20 || total < ihl) return;
    if ((be16(ip, 6) & 0x3fff) != 0) {  // a fragment: mdcast datagrams never are
      sum_.count("ip_fragments");
      return;
    }
    const unsigned proto = std::to_integer<unsigned>(ip[9]);
    const Endpoint src{be32(ip, 12), 0}, dst{be32(ip, 16), 0};
    const Bytes l4 = ip.subspan(ihl, total - ihl);
    if (proto == 17 && l4.size() >= 8) {
      const uint16_t sport = be16(l4, 0), dport = be16(l4, 2);
      const Bytes pl = l4.subspan(8, std::min<size_t>(l4.size(), std::max<size_t>(be16(l4, 4), 8)) - 8);
      const bool port = has(o_.data_ports, sport) || has(o_.data_ports, dport);
      const bool data = pl.size() >= dgram::kHeaderSize && Decoder::looks_like_header(pl);
      const unsigned version = pl.size() >= 3 ? std::to_integer<unsigned>(pl[2]) : 0;
      const bool ann = pl.size() >= media::udp::kAnnounceHeader && le<uint16_t>(pl, 0) == media::udp::kAnnounceMagic &&
                       (version == media::udp::kAnnounceVersion || version == media::udp::kAnnounceSignedVersion);
      if (port || data || ann) dec_.udp_payload(p, pl);
    } else if (proto == 6 && l4.size() >= 20) {
      tcp(p, Endpoint{src.ip, be16(l4, 0)}, Endpoint{dst.ip, be16(l4, 2)}, l4);
    }
    if (p.present()) p.print(stdout, frame);
  }

 private:
  static uint16_t be16(Bytes b, size_t o) {
    return static_cast<uint16_t>(std::to_integer<unsigned>(b[o]) << 8 | std::to_integer<unsigned>(b[o + 1]));
  }
  static uint32_t be32(Bytes b, size_t o) { return uint32_t{be16(b, o)} << 16 | be16(b, o + 2); }
  static bool has(const std::vector<uint16_t>& v, uint16_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

  void tcp(Packet& p, Endpoint src, Endpoint dst, Bytes seg) {
    const size_t hl = (std::to_integer<unsigned>(seg[12]) >> 4) * 4u;
    if (hl < 20 || hl > seg.size()) return;
    const uint32_t seq = be32(seg, 4);
    const bool syn = (std::to_integer<unsigned>(seg[13]) & 0x02) != 0;
    Flow& fl = flows_[{src, dst}];
    if (syn) {
      fl = Flow{};
      fl.started = true;
      fl.next_seq = seq + 1;
      return;
    }
    Bytes pl = seg.subspan(hl);
    if (pl.empty()) return;
    const auto conv = std::minmax(src, dst);
    bool& ctl = control_[conv];
    if (!ctl) ctl = has(o_.control_ports, src.port) || has(o_.control_ports, dst.port) || plausible_frame(pl);
    if (!ctl) return;
    if (!fl.started) {  // capture began mid-connection: start at this segment
      fl.started = true;
      fl.next_seq = seq;
    }
    const auto ahead = static_cast<int32_t>(seq - fl.next_seq);
    if (ahead > 0 && !fl.dead) {
      std::fprintf(stderr, "mdcast-pcap-decode: %u bytes missing from a TCP stream (lost from the capture); it is "
                           "decoded no further\n", static_cast<unsigned>(ahead));
      sum_.count("tcp_gaps");
      fl.dead = true;
    }
    if (ahead < 0) {  // a retransmission: keep only what is new
      const size_t old = std::min<size_t>(pl.size(), static_cast<size_t>(-ahead));
      pl = pl.subspan(old);
    }
    if (fl.dead || pl.empty()) return;
    fl.next_seq += static_cast<uint32_t>(pl.size());
    fl.frames.append(pl);
    std::span<const std::byte> f;
    for (;;) {
      const auto st = fl.frames.next(f);
      if (st == FrameAssembler::Status::kNeedMore) break;
      if (st == FrameAssembler::Status::kBadFrame) {
        // The dissector shows the rest of the segment as one bad frame.
        p.add("mdcast.ctl.length", dec(fl.frames.declared_length()));
        sum_.count("malformed");
        fl.dead = true;
        break;
      }
      dec_.frame(p, f);
    }
  }

  const Options& o_;
  Decoder& dec_;
  Summary& sum_;
  std::map<std::pair<Endpoint, Endpoint>, Flow> flows_;
  std::map<std::pair<Endpoint, Endpoint>, bool> control_;
};

int run(const std::string& path, const Options& o) {
  char err[PCAP_ERRBUF_SIZE] = {};
  // Nanoseconds, as Wireshark reads them (a microsecond file is scaled).
  pcap_t* pc = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!pc) {
    std::fprintf(stderr, "mdcast-pcap-decode: cannot read %s: %s\n", path.c_str(), err);
    return 3;
  }
  const int linktype = pcap_datalink(pc);
  Summary sum;
  Decoder dec(sum);
  Capture cap(o, dec, sum);
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  uint64_t frame = 0;
  int rc;
  while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
    ++frame;
    dec.set_capture_time(static_cast<int64_t>(h->ts.tv_sec) * 1'000'000'000 + h->ts.tv_usec);  // tv_usec holds ns here
    const Bytes f(reinterpret_cast<const std::byte*>(data), h->caplen);
    const Bytes ip = Capture::ipv4_of(linktype, f);
    if (!ip.empty()) cap.packet(frame, ip);
  }
  const bool ok = rc == PCAP_ERROR_BREAK || rc == -2;
  if (!ok) std::fprintf(stderr, "mdcast-pcap-decode: %s: %s after %llu packets\n", path.c_str(), pcap_geterr(pc),
                        static_cast<unsigned long long>(frame));
  pcap_close(pc);
  sum.count("packets", frame);
  if (!o.summary.empty()) {
    std::ofstream out(o.summary);
    for (const auto& [k, v] : sum.counts) out << k << ' ' << v << '\n';
    if (!out) {
      std::fprintf(stderr, "mdcast-pcap-decode: cannot write %s\n", o.summary.c_str());
      return 3;
    }
  }
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mdcast-pcap-decode: %s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--fields") {
      for (const std::string_view f : fields()) std::printf("%.*s\n", int(f.size()), f.data());
      return 0;
    } else if (a == "--control-port") {
      o.control_ports.push_back(static_cast<uint16_t>(std::stoul(value())));
    } else if (a == "--data-port") {
      o.data_ports.push_back(static_cast<uint16_t>(std::stoul(value())));
    } else if (a == "--summary") {
      o.summary = value();
    } else if (!a.empty() && a[0] != '-' && path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr,
                   "usage: mdcast-pcap-decode --fields | [--control-port P]... [--data-port P]... [--summary FILE] "
                   "CAPTURE.pcap\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "mdcast-pcap-decode: no capture file given\n");
    return 2;
  }
  if (o.control_ports.empty()) o.control_ports.push_back(7471);
  if (o.data_ports.empty()) o.data_ports.push_back(7470);
  return run(path, o);
}
