// The frames of a recording: each mdcast datagram as the Ethernet + IPv4 +
// UDP frame it is on a UDP feed (or would be, for shm and verbs), checksums
// and all, so that tcpdump, tshark and Wireshark read a recording with no
// help (docs/recording.md). Also the reverse: a captured frame back to its
// UDP payload, for a replay, with every layer checked - a damaged byte shows
// up as a bad IPv4 or UDP checksum rather than as a wrong message.
//
// Both directions are allocation-free and noexcept: the recorder builds a
// frame per delivered datagram.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace mdcast::record {

inline constexpr size_t kEthernetHeader = 14;
inline constexpr size_t kIpv4Header = 20;
inline constexpr size_t kUdpHeader = 8;
inline constexpr size_t kFrameOverhead = kEthernetHeader + kIpv4Header + kUdpHeader;
// The largest UDP payload an IPv4 datagram carries (65535 - 20 - 8).
inline constexpr size_t kMaxPayload = 65507;
inline constexpr size_t kMaxFrame = kFrameOverhead + kMaxPayload;

// Where the frames say they went. Addresses in host byte order.
struct FrameAddress {
  uint32_t source_ip = 0x7f000001;       // 127.0.0.1 unless the publisher's is known
  uint32_t group_ip = 0xef4d0101;        // 239.77.1.1, the UDP medium's default group
  uint16_t source_port = 7470;
  uint16_t group_port = 7470;
};

// "A.B.C.D" or "A.B.C.D:PORT" (port left alone without one). False if malformed.
[[nodiscard]] bool parse_ipv4(std::string_view text, uint32_t& ip, uint16_t* port = nullptr) noexcept;
[[nodiscard]] std::string format_ipv4(uint32_t ip);

// Writes the frame carrying `payload` (at most kMaxPayload bytes) into `out`
// (at least kFrameOverhead + payload.size() bytes): destination MAC the
// group's (01:00:5e + its low 23 bits), source MAC 02:00:00:00:00:01 (locally
// administered), IPv4 with DF, TTL 1 and `ip_id`, UDP with its checksum.
// Returns the frame's length, or 0 when the payload or `out` is too big/small.
size_t build_frame(std::span<std::byte> out, const FrameAddress& a, std::span<const std::byte> payload,
                   uint16_t ip_id) noexcept;

// libpcap's link types this reader takes (DLT_* values).
inline constexpr int kLinkEthernet = 1;   // DLT_EN10MB: what the recorder writes, tcpdump -i lo/eth0
inline constexpr int kLinkRaw = 101;      // LINKTYPE_RAW (DLT_RAW is 12 or 14 by platform)
inline constexpr int kLinkRawDlt = 12;
inline constexpr int kLinkLinuxSll = 113; // tcpdump -i any (before 4.99)
inline constexpr int kLinkLinuxSll2 = 276; // tcpdump -i any (4.99 and later)
inline constexpr int kLinkIpv4 = 228;

enum class FrameCheck : uint8_t {
  kOk,
  kShort,          // fewer bytes than the headers claim (or than the headers)
  kNotIpv4,        // another EtherType / IP version
  kBadIpHeader,    // IHL, total length
  kBadIpChecksum,
  kFragment,       // an IP fragment: not reassembled here
  kNotUdp,
  kBadUdpLength,
  kBadUdpChecksum,
  kUnknownLink,    // a link type this reader does not take
};
[[nodiscard]] std::string_view to_string(FrameCheck c) noexcept;

struct FrameInfo {
  FrameAddress address;
  std::span<const std::byte> payload;  // the UDP payload, inside the frame given
};

// The UDP payload of a captured frame of link type `link`, every layer checked
// (IPv4 header checksum; UDP checksum unless it is 0, "none", which IPv4 allows).
[[nodiscard]] FrameCheck parse_frame(int link, std::span<const std::byte> frame, FrameInfo& out) noexcept;

}  // namespace mdcast::record
