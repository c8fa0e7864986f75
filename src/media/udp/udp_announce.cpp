// The UDP publisher's control-address announcement (udp_announce.hpp).
#include "mdcast/media/udp/udp_announce.hpp"

#include "mdcast/core/bytes.hpp"

namespace mdcast::media::udp {

std::vector<std::byte> encode_announcement(const Announcement& a) {
  const size_t len = std::min(a.address.size(), kMaxAnnouncedAddress);
  std::vector<std::byte> d(kAnnounceHeader + len);
  store_le<uint16_t>(d.data(), kAnnounceMagic);
  d[2] = std::byte{kAnnounceVersion};
  d[3] = std::byte{static_cast<uint8_t>(len)};
  store_le<uint16_t>(d.data() + 4, a.channel);
  store_le<uint64_t>(d.data() + 8, a.session);
  std::memcpy(d.data() + kAnnounceHeader, a.address.data(), len);
  return d;
}

bool decode_announcement(std::span<const std::byte> d, Announcement& out) {
  if (d.size() < kAnnounceHeader || !is_announcement(d)) return false;
  if (std::to_integer<uint8_t>(d[2]) != kAnnounceVersion) return false;
  const size_t len = std::to_integer<uint8_t>(d[3]);
  if (len < 5 || len > kMaxAnnouncedAddress || kAnnounceHeader + len != d.size()) return false;
  if (load_le<uint16_t>(d.data() + 6) != 0) return false;
  std::string address(reinterpret_cast<const char*>(d.data() + kAnnounceHeader), len);
  if (address.rfind("tcp:", 0) != 0) return false;
  for (const char c : address)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == ':' ||
          c == '-'))
      return false;
  out.channel = load_le<uint16_t>(d.data() + 4);
  out.session = load_le<uint64_t>(d.data() + 8);
  out.address = std::move(address);
  return true;
}

}  // namespace mdcast::media::udp
