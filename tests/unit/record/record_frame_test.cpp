// Frames of a recording: what build_frame writes parse_frame reads back, every
// layer is what tools expect (multicast MAC, lengths, checksums), and a damaged
// byte anywhere in the IPv4/UDP headers or the payload is caught.
#include <gtest/gtest.h>

#include <vector>

#include "mdcast/record/frame.hpp"

using namespace mdcast;
using namespace mdcast::record;

namespace {

std::vector<std::byte> payload(size_t n) {
  std::vector<std::byte> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = std::byte(i * 7 + 3);
  return p;
}

FrameAddress addr() {
  FrameAddress a;
  a.source_ip = 0x0a000105;  // 10.0.1.5
  a.group_ip = 0xef4d0203;   // 239.77.2.3
  a.source_port = 40001;
  a.group_port = 7470;
  return a;
}

}  // namespace

TEST(RecordFrame, RoundTripsEveryLayer) {
  for (size_t n : {0u, 1u, 2u, 41u, 1400u, 4032u}) {
    const auto p = payload(n);
    std::vector<std::byte> f(kFrameOverhead + n);
    ASSERT_EQ(build_frame(f, addr(), p, 77), kFrameOverhead + n);
    // Ethernet: the group's MAC (RFC 1112: 01:00:5e + low 23 bits), IPv4.
    EXPECT_EQ(f[0], std::byte{0x01});
    EXPECT_EQ(f[2], std::byte{0x5e});
    EXPECT_EQ(f[3], std::byte{0x4d});
    EXPECT_EQ(f[4], std::byte{0x02});
    EXPECT_EQ(f[5], std::byte{0x03});
    EXPECT_EQ(f[12], std::byte{0x08});
    EXPECT_EQ(f[13], std::byte{0x00});
    FrameInfo fi;
    ASSERT_EQ(parse_frame(kLinkEthernet, f, fi), FrameCheck::kOk) << n;
    EXPECT_EQ(fi.address.source_ip, addr().source_ip);
    EXPECT_EQ(fi.address.group_ip, addr().group_ip);
    EXPECT_EQ(fi.address.source_port, 40001);
    EXPECT_EQ(fi.address.group_port, 7470);
    ASSERT_EQ(fi.payload.size(), n);
    EXPECT_TRUE(std::equal(p.begin(), p.end(), fi.payload.begin()));
    // The same frame without its Ethernet header is a raw IPv4 capture; with
    // a Linux cooked header (tcpdump -i any) instead of it, SLL or SLL2.
    EXPECT_EQ(parse_frame(kLinkRaw, std::span(f).subspan(kEthernetHeader), fi), FrameCheck::kOk);
    std::vector<std::byte> sll(16, std::byte{0});
    sll[14] = std::byte{0x08};
    sll.insert(sll.end(), f.begin() + kEthernetHeader, f.end());
    ASSERT_EQ(parse_frame(kLinkLinuxSll, sll, fi), FrameCheck::kOk);
    EXPECT_EQ(fi.payload.size(), n);
    std::vector<std::byte> sll2(20, std::byte{0});
    sll2[0] = std::byte{0x08};
    sll2.insert(sll2.end(), f.begin() + kEthernetHeader, f.end());
    ASSERT_EQ(parse_frame(kLinkLinuxSll2, sll2, fi), FrameCheck::kOk);
    EXPECT_EQ(fi.payload.size(), n);
  }
}

TEST(RecordFrame, EverySingleByteDamageInIpUdpOrPayloadIsCaught) {
  const auto p = payload(300);
  std::vector<std::byte> f(kFrameOverhead + p.size());
  ASSERT_NE(build_frame(f, addr(), p, 1), 0u);
  for (size_t i = kEthernetHeader; i < f.size(); ++i) {
    auto g = f;
    g[i] ^= std::byte{0x10};
    FrameInfo fi;
    EXPECT_NE(parse_frame(kLinkEthernet, g, fi), FrameCheck::kOk) << "byte " << i;
  }
}

TEST(RecordFrame, RefusesWhatItCannotCarryOrRead) {
  const auto big = payload(kMaxPayload + 1);
  std::vector<std::byte> f(kFrameOverhead + big.size());
  EXPECT_EQ(build_frame(f, addr(), big, 0), 0u);
  std::vector<std::byte> small(kFrameOverhead + 3);
  EXPECT_EQ(build_frame(small, addr(), payload(4), 0), 0u);

  const auto p = payload(10);
  std::vector<std::byte> ok(kFrameOverhead + p.size());
  ASSERT_NE(build_frame(ok, addr(), p, 0), 0u);
  FrameInfo fi;
  EXPECT_EQ(parse_frame(kLinkEthernet, std::span(ok).first(30), fi), FrameCheck::kShort);
  EXPECT_EQ(parse_frame(kLinkEthernet, std::span(ok).first(kFrameOverhead + 5), fi), FrameCheck::kShort);
  EXPECT_EQ(parse_frame(147, ok, fi), FrameCheck::kUnknownLink);
  auto arp = ok;
  arp[12] = std::byte{0x08};
  arp[13] = std::byte{0x06};
  EXPECT_EQ(parse_frame(kLinkEthernet, arp, fi), FrameCheck::kNotIpv4);
  // A UDP checksum of 0 is "none" in IPv4: taken as it is.
  auto none = ok;
  none[kEthernetHeader + kIpv4Header + 6] = std::byte{0};
  none[kEthernetHeader + kIpv4Header + 7] = std::byte{0};
  EXPECT_EQ(parse_frame(kLinkEthernet, none, fi), FrameCheck::kOk);
}

TEST(RecordFrame, ParsesAddresses) {
  uint32_t ip = 0;
  uint16_t port = 1;
  EXPECT_TRUE(parse_ipv4("239.77.1.1:7470", ip, &port));
  EXPECT_EQ(ip, 0xef4d0101u);
  EXPECT_EQ(port, 7470);
  EXPECT_TRUE(parse_ipv4("127.0.0.1", ip, &port));
  EXPECT_EQ(port, 7470);  // left alone
  EXPECT_FALSE(parse_ipv4("127.0.0", ip, &port));
  EXPECT_FALSE(parse_ipv4("256.0.0.1", ip, &port));
  EXPECT_FALSE(parse_ipv4("1.2.3.4:70000", ip, &port));
  EXPECT_FALSE(parse_ipv4("1.2.3.4:", ip, &port));
  EXPECT_EQ(format_ipv4(0xef4d0101u), "239.77.1.1");
}
