// CRC-32C: published check values, and the accelerated path agrees with a
// bit-at-a-time reference for every length and alignment, one-shot or in
// pieces (datagram_crc() relies on chaining three pieces).
#include <gtest/gtest.h>

#include <vector>

#include "mdcast/core/crc32c.hpp"
#include "mdcast/core/rng.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

// Deliberately the slowest, most obvious form: shares no table or
// instruction with the implementation under test.
uint32_t reference_crc(uint32_t crc, const std::byte* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint8_t>(p[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0x82f63b78u : 0u);
  }
  return ~crc;
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(Bytes{}), 0u);
  EXPECT_EQ(crc32c(bytes_of("a")), 0xC1D04330u);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(crc32c(Bytes(32, std::byte{0})), 0x8A9136AAu);
  EXPECT_EQ(crc32c(Bytes(32, std::byte{0xff})), 0x62A8AB43u);
  Bytes inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(i));
    dec[static_cast<size_t>(i)] = std::byte(static_cast<uint8_t>(31 - i));
  }
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
  EXPECT_EQ(crc32c(dec), 0x113FDB5Cu);
}

TEST(Crc32c, MatchesReferenceForEveryLengthAndAlignment) {
  Rng rng(5);
  std::vector<std::byte> buf(600);
  for (auto& b : buf) b = std::byte(static_cast<uint8_t>(rng.next()));
  for (size_t off = 0; off < 8; ++off)
    for (size_t len = 0; len + off <= 300; ++len)
      ASSERT_EQ(crc32c(0, buf.data() + off, len), reference_crc(0, buf.data() + off, len))
          << "offset " << off << " length " << len;
  // A seed other than 0 continues a running CRC.
  EXPECT_EQ(crc32c(0x12345678, buf.data(), 100), reference_crc(0x12345678, buf.data(), 100));
}

TEST(Crc32c, IncrementalEqualsOneShot) {
  Rng rng(9);
  std::vector<std::byte> buf(257);
  for (auto& b : buf) b = std::byte(static_cast<uint8_t>(rng.next()));
  const uint32_t whole = crc32c(buf);
  for (size_t cut = 0; cut <= buf.size(); ++cut) {
    const uint32_t a = crc32c(0, buf.data(), cut);
    ASSERT_EQ(crc32c(a, buf.data() + cut, buf.size() - cut), whole) << cut;
  }
  // Three pieces, as datagram_crc() chains them.
  for (size_t c1 = 0; c1 <= buf.size(); c1 += 3)
    for (size_t c2 = c1; c2 <= buf.size(); c2 += 11) {
      uint32_t c = crc32c(0, buf.data(), c1);
      c = crc32c(c, buf.data() + c1, c2 - c1);
      ASSERT_EQ(crc32c(c, buf.data() + c2, buf.size() - c2), whole) << c1 << "," << c2;
    }
}

TEST(Crc32c, DetectsEverySingleBitFlip) {
  Bytes b = bytes_of("market data distribution, exactly once");
  const uint32_t c = crc32c(b);
  for (size_t i = 0; i < b.size(); ++i)
    for (int k = 0; k < 8; ++k) {
      b[i] ^= std::byte(static_cast<uint8_t>(1u << k));
      ASSERT_NE(crc32c(b), c) << i << ":" << k;
      b[i] ^= std::byte(static_cast<uint8_t>(1u << k));
    }
}

}  // namespace
}  // namespace mdcast::test
