#include "mdcast/core/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace mdcast {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

uint32_t crc_soft(uint32_t crc, const std::byte* p, size_t n) noexcept {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i)
    crc = kTable[(crc ^ static_cast<uint8_t>(p[i])) & 0xff] ^ (crc >> 8);
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_hw(uint32_t crc, const std::byte* p, size_t n) noexcept {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p++));
  return ~c32;
}
const bool kHaveHw = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const std::byte* data, size_t len) noexcept {
#if defined(__x86_64__)
  if (kHaveHw) return crc_hw(crc, data, len);
#endif
  return crc_soft(crc, data, len);
}

}  // namespace mdcast
