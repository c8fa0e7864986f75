// Datagrams a RetransmitRing test can recognise: bytes derived from the
// sequence, written through claim/commit and checked through get().
#pragma once

#include <cstdint>

#include "mdcast/history/retransmit_ring.hpp"

namespace mdcast::test {

inline void put(history::RetransmitRing& r, uint64_t seq, uint16_t len) {
  std::byte* p = r.claim(seq);
  for (uint16_t i = 0; i < len; ++i) p[i] = std::byte(static_cast<uint8_t>(seq * 31 + i));
  r.commit(seq, len);
}

inline bool holds(const history::RetransmitRing& r, uint64_t seq, uint16_t len) {
  const auto d = r.get(seq);
  if (d.size() != len) return false;
  for (uint16_t i = 0; i < len; ++i)
    if (d[i] != std::byte(static_cast<uint8_t>(seq * 31 + i))) return false;
  return true;
}

}  // namespace mdcast::test
