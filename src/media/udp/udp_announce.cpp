// The UDP publisher's control-address announcement (udp_announce.hpp).
#include "mdcast/media/udp/udp_announce.hpp"

#include "mdcast/core/bytes.hpp"

namespace mdcast::media::udp {

std::vector<std::byte> encode_announcement(const Announcement& a, const wire::SigningKey* key) {
  const size_t len = std::min(a.address.size(), kMaxAnnouncedAddress);
  std::vector<std::byte> d(kAnnounceHeader + len);
  store_le<uint16_t>(d.data(), kAnnounceMagic);
  d[2] = std::byte{key ? kAnnounceSignedVersion : kAnnounceVersion};
  d[3] = std::byte{static_cast<uint8_t>(len)};
  store_le<uint16_t>(d.data() + 4, a.channel);
  store_le<uint64_t>(d.data() + 8, a.session);
  std::memcpy(d.data() + kAnnounceHeader, a.address.data(), len);
  if (key) {
    const wire::Signature sig = key->sign(d);
    d.insert(d.end(), sig.begin(), sig.end());
  }
  return d;
}

bool decode_announcement(std::span<const std::byte> d, Announcement& out) {
  if (d.size() < kAnnounceHeader || !is_announcement(d)) return false;
  const uint8_t version = std::to_integer<uint8_t>(d[2]);
  if (version != kAnnounceVersion && version != kAnnounceSignedVersion) return false;
  const bool is_signed = version == kAnnounceSignedVersion;
  const size_t len = std::to_integer<uint8_t>(d[3]);
  if (len < 5 || len > kMaxAnnouncedAddress || kAnnounceHeader + len + (is_signed ? wire::kSignatureSize : 0) != d.size())
    return false;
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
  out.is_signed = is_signed;
  return true;
}

bool announcement_signed_by(std::span<const std::byte> d, const wire::SignPublicKey& key) noexcept {
  if (d.size() < kAnnounceHeader + wire::kSignatureSize || !is_announcement(d) ||
      std::to_integer<uint8_t>(d[2]) != kAnnounceSignedVersion)
    return false;
  const size_t body = d.size() - wire::kSignatureSize;
  if (kAnnounceHeader + std::to_integer<uint8_t>(d[3]) != body) return false;
  return wire::signature_valid(key, d.first(body), d.subspan(body).first<wire::kSignatureSize>());
}

}  // namespace mdcast::media::udp
