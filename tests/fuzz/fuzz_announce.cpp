// fuzz_announce: the UDP publisher's control-address announcement, as anyone
// on the multicast group may send one.
// Checks: decode never crashes; what decodes is a "tcp:" address of the
// allowed characters within the limits, and re-encodes to the same bytes;
// the source's fixed box never holds more than it has room for.
#include <cstring>

#include "fuzz_support.hpp"
#include "mdcast/media/udp/udp_announce.hpp"

using namespace mdcast::media::udp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> d(reinterpret_cast<const std::byte*>(data), size);
  AnnounceBox box;
  box.store(d);
  FUZZ_CHECK(box.size <= box.bytes.size() && box.size == std::min(size, box.bytes.size()), "box size %zu", box.size);
  Announcement a;
  if (!decode_announcement(box.view(), a)) return 0;
  FUZZ_CHECK(a.address.rfind("tcp:", 0) == 0 && a.address.size() <= kMaxAnnouncedAddress, "address %s",
             a.address.c_str());
  for (const char c : a.address) FUZZ_CHECK(c > ' ' && c < 127, "character %d", c);
  const auto again = encode_announcement(a);
  FUZZ_CHECK(again.size() == box.size && std::memcmp(again.data(), box.bytes.data(), again.size()) == 0,
             "re-encoding differs");
  return 0;
}
