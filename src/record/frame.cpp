#include "mdcast/record/frame.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

namespace mdcast::record {

namespace {

// Network byte order, byte by byte: frames are big-endian, the host is not.
inline void put16(std::byte* p, uint16_t v) noexcept {
  p[0] = std::byte(v >> 8);
  p[1] = std::byte(v);
}
inline void put32(std::byte* p, uint32_t v) noexcept {
  put16(p, static_cast<uint16_t>(v >> 16));
  put16(p + 2, static_cast<uint16_t>(v));
}
inline uint16_t get16(const std::byte* p) noexcept {
  return static_cast<uint16_t>((static_cast<unsigned>(p[0]) << 8) | static_cast<unsigned>(p[1]));
}
inline uint32_t get32(const std::byte* p) noexcept {
  return (static_cast<uint32_t>(get16(p)) << 16) | get16(p + 2);
}

// RFC 1071 one's-complement sum, not yet folded or inverted.
uint32_t sum16(const std::byte* p, size_t n, uint32_t acc = 0) noexcept {
  for (; n >= 2; p += 2, n -= 2) acc += get16(p);
  if (n) acc += static_cast<uint32_t>(p[0]) << 8;
  return acc;
}
uint16_t fold(uint32_t acc) noexcept {
  while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
  return static_cast<uint16_t>(~acc);
}
uint32_t pseudo_header(uint32_t src, uint32_t dst, uint16_t udp_len) noexcept {
  return (src >> 16) + (src & 0xffff) + (dst >> 16) + (dst & 0xffff) + 17u + udp_len;
}

}  // namespace

bool parse_ipv4(std::string_view text, uint32_t& ip, uint16_t* port) noexcept {
  uint32_t v = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 4; ++i) {
    unsigned octet = 0;
    auto [q, ec] = std::from_chars(p, end, octet);
    if (ec != std::errc() || octet > 255 || q == p) return false;
    v = (v << 8) | octet;
    p = q;
    if (i < 3) {
      if (p == end || *p != '.') return false;
      ++p;
    }
  }
  if (p != end) {
    if (*p != ':' || !port) return false;
    unsigned pt = 0;
    auto [q, ec] = std::from_chars(p + 1, end, pt);
    if (ec != std::errc() || q != end || pt > 65535) return false;
    *port = static_cast<uint16_t>(pt);
  }
  ip = v;
  return true;
}

std::string format_ipv4(uint32_t ip) {
  return fmt::format("{}.{}.{}.{}", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

size_t build_frame(std::span<std::byte> out, const FrameAddress& a, std::span<const std::byte> payload,
                   uint16_t ip_id) noexcept {
  if (payload.size() > kMaxPayload || out.size() < kFrameOverhead + payload.size()) return 0;
  std::byte* e = out.data();
  // Ethernet: the IPv4 multicast MAC of the group (RFC 1112 section 6.4).
  const uint32_t g = a.group_ip;
  const std::byte dst_mac[6] = {std::byte{0x01}, std::byte{0x00}, std::byte{0x5e}, std::byte((g >> 16) & 0x7f),
                                std::byte(g >> 8), std::byte(g)};
  const std::byte src_mac[6] = {std::byte{0x02}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{0}, std::byte{1}};
  std::memcpy(e, dst_mac, 6);
  std::memcpy(e + 6, src_mac, 6);
  put16(e + 12, 0x0800);

  std::byte* ip = e + kEthernetHeader;
  const auto udp_len = static_cast<uint16_t>(kUdpHeader + payload.size());
  put16(ip, 0x4500);  // version 4, IHL 5, DSCP 0
  put16(ip + 2, static_cast<uint16_t>(kIpv4Header + udp_len));
  put16(ip + 4, ip_id);
  put16(ip + 6, 0x4000);  // don't fragment
  ip[8] = std::byte{1};   // TTL: what the UDP medium sends with by default
  ip[9] = std::byte{17};  // UDP
  put16(ip + 10, 0);
  put32(ip + 12, a.source_ip);
  put32(ip + 16, a.group_ip);
  put16(ip + 10, fold(sum16(ip, kIpv4Header)));

  std::byte* udp = ip + kIpv4Header;
  put16(udp, a.source_port);
  put16(udp + 2, a.group_port);
  put16(udp + 4, udp_len);
  put16(udp + 6, 0);
  if (!payload.empty()) std::memcpy(udp + kUdpHeader, payload.data(), payload.size());
  uint16_t ck = fold(sum16(udp, udp_len, pseudo_header(a.source_ip, a.group_ip, udp_len)));
  if (ck == 0) ck = 0xffff;  // 0 means "no checksum" in UDP over IPv4
  put16(udp + 6, ck);
  return kFrameOverhead + payload.size();
}

std::string_view to_string(FrameCheck c) noexcept {
  switch (c) {
    case FrameCheck::kOk: return "ok";
    case FrameCheck::kShort: return "frame shorter than its headers say";
    case FrameCheck::kNotIpv4: return "not an IPv4 frame";
    case FrameCheck::kBadIpHeader: return "bad IPv4 header (length)";
    case FrameCheck::kBadIpChecksum: return "bad IPv4 header checksum";
    case FrameCheck::kFragment: return "IPv4 fragment (not reassembled)";
    case FrameCheck::kNotUdp: return "not UDP";
    case FrameCheck::kBadUdpLength: return "bad UDP length";
    case FrameCheck::kBadUdpChecksum: return "bad UDP checksum";
    case FrameCheck::kUnknownLink: return "link type not supported (Ethernet, raw IPv4, Linux cooked SLL/SLL2 only)";
  }
  return "?";
}

FrameCheck parse_frame(int link, std::span<const std::byte> f, FrameInfo& out) noexcept {
  size_t off = 0;
  uint16_t ethertype = 0x0800;
  switch (link) {
    case kLinkEthernet:
      if (f.size() < kEthernetHeader) return FrameCheck::kShort;
      ethertype = get16(f.data() + 12);
      off = kEthernetHeader;
      if (ethertype == 0x8100) {  // one 802.1Q tag
        if (f.size() < off + 4) return FrameCheck::kShort;
        ethertype = get16(f.data() + 16);
        off += 4;
      }
      break;
    case kLinkLinuxSll:
      if (f.size() < 16) return FrameCheck::kShort;
      ethertype = get16(f.data() + 14);
      off = 16;
      break;
    case kLinkLinuxSll2:
      if (f.size() < 20) return FrameCheck::kShort;
      ethertype = get16(f.data());
      off = 20;
      break;
    case kLinkRaw:
    case kLinkRawDlt:
    case kLinkIpv4: break;
    default: return FrameCheck::kUnknownLink;
  }
  if (ethertype != 0x0800) return FrameCheck::kNotIpv4;
  if (f.size() < off + kIpv4Header) return FrameCheck::kShort;
  const std::byte* ip = f.data() + off;
  if ((static_cast<unsigned>(ip[0]) >> 4) != 4) return FrameCheck::kNotIpv4;
  const size_t ihl = (static_cast<unsigned>(ip[0]) & 15u) * 4;
  const size_t total = get16(ip + 2);
  if (ihl < kIpv4Header || total < ihl) return FrameCheck::kBadIpHeader;
  if (f.size() < off + total) return FrameCheck::kShort;
  if (fold(sum16(ip, ihl)) != 0) return FrameCheck::kBadIpChecksum;
  if ((get16(ip + 6) & 0x3fff) != 0) return FrameCheck::kFragment;  // MF set or an offset
  if (static_cast<unsigned>(ip[9]) != 17) return FrameCheck::kNotUdp;
  const std::byte* udp = ip + ihl;
  const size_t udp_room = total - ihl;
  if (udp_room < kUdpHeader) return FrameCheck::kBadUdpLength;
  const size_t udp_len = get16(udp + 4);
  if (udp_len < kUdpHeader || udp_len > udp_room) return FrameCheck::kBadUdpLength;
  const uint32_t src = get32(ip + 12), dst = get32(ip + 16);
  if (get16(udp + 6) != 0 &&
      fold(sum16(udp, udp_len, pseudo_header(src, dst, static_cast<uint16_t>(udp_len)))) != 0)
    return FrameCheck::kBadUdpChecksum;
  out.address = {src, dst, get16(udp), get16(udp + 2)};
  out.payload = {udp + kUdpHeader, udp_len - kUdpHeader};
  return FrameCheck::kOk;
}

}  // namespace mdcast::record
