#include "recorder.hpp"

namespace mdcast::test {

uint64_t message_hash(const wire::Message& m) {
  std::byte buf[wire::kMaxMessage];
  const size_t n = wire::encoded_size(m);
  wire::encode(m, buf);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(buf[i])) * 0x100000001b3ull;
  return h;
}

}  // namespace mdcast::test
