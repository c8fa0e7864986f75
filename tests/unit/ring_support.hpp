// Datagrams a log test can recognise: bytes derived from the sequence,
// written through claim/commit and checked through get(), for either log or
// the engine's view of them (history::RetransmitLog).
#pragma once

#include <cstdint>

namespace mdcast::test {

template <class Log>
void put(Log& r, uint64_t seq, uint16_t len) {
  std::byte* p = r.claim(seq);
  for (uint16_t i = 0; i < len; ++i) p[i] = std::byte(static_cast<uint8_t>(seq * 31 + i));
  r.commit(seq, len);
}

template <class Log>
bool holds(const Log& r, uint64_t seq, uint16_t len) {
  const auto d = r.get(seq);
  if (d.size() != len) return false;
  for (uint16_t i = 0; i < len; ++i)
    if (d[i] != std::byte(static_cast<uint8_t>(seq * 31 + i))) return false;
  return true;
}

}  // namespace mdcast::test
