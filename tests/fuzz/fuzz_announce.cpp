// fuzz_announce: the UDP publisher's control-address announcement, as anyone
// on the multicast group may send one.
// Checks: decode never crashes; what decodes is a "tcp:" address of the
// allowed characters within the limits, and re-encodes to the same bytes
// (a signed one with the same header and address); a signature verifies
// under the fuzzer's fixed key only for the bytes that key signs; the
// source's fixed box never holds more than it has room for.
#include <array>
#include <cstring>

#include "fuzz_support.hpp"
#include "mdcast/media/udp/udp_announce.hpp"

using namespace mdcast::media::udp;

namespace {
// The seed corpus's signed announcement (make_fuzz_corpus) is signed with it.
constexpr std::array<std::byte, mdcast::wire::kSignSeedSize> kFuzzSeed = [] {
  std::array<std::byte, mdcast::wire::kSignSeedSize> s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = std::byte(static_cast<uint8_t>(i + 1));
  return s;
}();
}  // namespace

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
  static const mdcast::wire::SigningKey key(kFuzzSeed);
  const auto again = encode_announcement(a, a.is_signed ? &key : nullptr);
  const size_t body = again.size() - (a.is_signed ? mdcast::wire::kSignatureSize : 0);
  FUZZ_CHECK(again.size() == box.size && std::memcmp(again.data(), box.bytes.data(), body) == 0, "re-encoding differs");
  const bool valid = announcement_signed_by(box.view(), key.public_key());
  FUZZ_CHECK(valid == (a.is_signed && std::memcmp(again.data(), box.bytes.data(), again.size()) == 0),
             "signature %s for bytes the key %s", valid ? "valid" : "invalid", valid ? "did not sign" : "signs");
  return 0;
}
