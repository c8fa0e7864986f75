// The UDP publisher's announcement of its control address: a small datagram
// on each rail, every 100 ms, so a subscriber needs only the group. It is the
// medium's, never the engine's: it starts with its own magic ('M','A'), not
// a feed datagram's ('M','C'), and the source keeps it aside.
//
//   @0  u16 magic 0x414d ('M','A')     @2  u8 version 1 or 2  @3 u8 length of the address
//   @4  u16 channel                    @6  u16 reserved (0)
//   @8  u64 session
//   @16 the address, "tcp:10.0.0.1:7471", `length` bytes (at most 64)
//   version 2 only: 64 bytes, the Ed25519 signature of every byte before it
//
// Trust (docs/security.md): anyone on the fabric can send one. A subscriber
// uses an announcement only where no control address is configured, takes
// the first it hears and sticks to it while it answers; a different one is
// counted, reported and remembered, and taken once the one in use failed
// (refused, closed, or silent to a request) for 2 s, which is then held off,
// so an impostor that announces more often costs 2 s, not the feed. Where
// the feed has secrets, the publisher proves itself before the subscriber
// says anything, so a forged address costs time, not trust. A subscriber
// given the publisher's public key (udp.announce_public_key) follows only
// announcements it signed (version 2), and costs a forger nothing but a
// counted drop; it then also moves at once when a connection fails, since
// every address it knows is a real publisher's (a pair's other member).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/wire/signature.hpp"

namespace mdcast::media::udp {

inline constexpr uint16_t kAnnounceMagic = 0x414d;
inline constexpr uint8_t kAnnounceVersion = 1;
inline constexpr uint8_t kAnnounceSignedVersion = 2;
inline constexpr size_t kAnnounceHeader = 16;
inline constexpr size_t kMaxAnnouncedAddress = 64;
inline constexpr size_t kMaxAnnouncement = kAnnounceHeader + kMaxAnnouncedAddress + wire::kSignatureSize;

[[nodiscard]] inline bool is_announcement(std::span<const std::byte> d) noexcept {
  return d.size() >= 2 && load_le<uint16_t>(d.data()) == kAnnounceMagic;
}

struct Announcement {
  uint16_t channel = 0;
  uint64_t session = 0;
  std::string address;
  bool is_signed = false;  // version 2: carries a signature (not yet checked)
};

// Version 2, signed, with a key; version 1 without.
[[nodiscard]] std::vector<std::byte> encode_announcement(const Announcement& a,
                                                        const wire::SigningKey* key = nullptr);
// False for anything malformed: wrong version, length beyond the datagram, an
// address that is not "tcp:" printable text. A signature is not checked here.
[[nodiscard]] bool decode_announcement(std::span<const std::byte> d, Announcement& out);
// A well-formed version 2 announcement whose signature `key` made.
[[nodiscard]] bool announcement_signed_by(std::span<const std::byte> d, const wire::SignPublicKey& key) noexcept;

// Where the source keeps the last announcement for the medium: a copy in a
// fixed buffer (the data path does not allocate) and a count that tells the
// medium a new one arrived.
struct AnnounceBox {
  std::array<std::byte, kMaxAnnouncement> bytes{};
  size_t size = 0;
  uint64_t count = 0;
  void store(std::span<const std::byte> d) noexcept {
    size = std::min(d.size(), bytes.size());
    std::memcpy(bytes.data(), d.data(), size);
    ++count;
  }
  [[nodiscard]] std::span<const std::byte> view() const noexcept { return {bytes.data(), size}; }
};

}  // namespace mdcast::media::udp
