#include "mdcast/wire/datagram.hpp"

#include <sodium.h>

#include "mdcast/core/crc32c.hpp"

namespace mdcast::wire {

void write_header(std::byte* out, const DatagramHeader& h) noexcept {
  store_le<uint16_t>(out + dgram::kMagic, kMagic);
  store_le<uint8_t>(out + dgram::kVersion, kVersion);
  store_le<uint8_t>(out + dgram::kFlags, h.flags);
  store_le<uint16_t>(out + dgram::kChannel, h.channel);
  store_le<uint16_t>(out + dgram::kMessageCount, h.message_count);
  store_le<uint64_t>(out + dgram::kSession, h.session);
  store_le<uint16_t>(out + dgram::kSender, h.sender);
  store_le<uint64_t>(out + dgram::kSequence, h.sequence);
  store_le<uint64_t>(out + dgram::kSendTime, h.send_time_ns);
  store_le<uint16_t>(out + dgram::kLength, h.length);
  store_le<uint32_t>(out + dgram::kCrc, 0);
}

DatagramHeader read_header(const std::byte* p) noexcept {
  DatagramHeader h;
  h.flags = load_le<uint8_t>(p + dgram::kFlags);
  h.channel = load_le<uint16_t>(p + dgram::kChannel);
  h.message_count = load_le<uint16_t>(p + dgram::kMessageCount);
  h.session = load_le<uint64_t>(p + dgram::kSession);
  h.sender = load_le<uint16_t>(p + dgram::kSender);
  h.sequence = load_le<uint64_t>(p + dgram::kSequence);
  h.send_time_ns = load_le<uint64_t>(p + dgram::kSendTime);
  h.length = load_le<uint16_t>(p + dgram::kLength);
  return h;
}

namespace {
// CRC over the datagram with the 4-byte CRC field taken as zero, without
// copying: the three ranges before, "zero", and after.
uint32_t datagram_crc(const std::byte* p, size_t len) noexcept {
  static constexpr std::byte kZero[4]{};
  uint32_t c = crc32c(0, p, dgram::kCrc);
  c = crc32c(c, kZero, 4);
  return crc32c(c, p + dgram::kHeaderSize, len - dgram::kHeaderSize);
}
}  // namespace

void seal_crc(std::span<std::byte> d) noexcept {
  store_le<uint32_t>(d.data() + dgram::kCrc, datagram_crc(d.data(), d.size()));
}

// SipHash-2-4 with a 128-bit output: a PRF keyed per session, so a tag is a
// MAC without a nonce (a retransmitted or filtered copy, a heartbeat that
// repeats a sequence, and the other member of a pair sealing the same bytes
// cannot misuse one), and on a 1,400-byte datagram it costs a fraction of
// what keyed BLAKE2b, HMAC or GMAC do on CPUs without their instructions
// (docs/security.md has the figures and the reasons).
static_assert(dgram::kTagSize == crypto_shorthash_siphashx24_BYTES);
static_assert(sizeof(DataKey) == crypto_shorthash_siphashx24_KEYBYTES);

void seal_tag(std::span<std::byte> d, const DataKey& key) noexcept {
  const size_t body = d.size() - dgram::kTagSize;
  crypto_shorthash_siphashx24(reinterpret_cast<unsigned char*>(d.data() + body),
                              reinterpret_cast<const unsigned char*>(d.data()), body,
                              reinterpret_cast<const unsigned char*>(key.data()));
}

bool tag_ok(std::span<const std::byte> d, const DataKey& key) noexcept {
  if (d.size() < dgram::kHeaderSize + dgram::kTagSize || !(static_cast<uint8_t>(d[dgram::kFlags]) & kFlagTag))
    return false;
  const size_t body = d.size() - dgram::kTagSize;
  unsigned char want[dgram::kTagSize];
  crypto_shorthash_siphashx24(want, reinterpret_cast<const unsigned char*>(d.data()), body,
                              reinterpret_cast<const unsigned char*>(key.data()));
  return crypto_verify_16(want, reinterpret_cast<const unsigned char*>(d.data() + body)) == 0;
}

DatagramCheck validate_datagram(std::span<const std::byte> d, DatagramHeader& h, uint32_t* unknown_types) noexcept {
  if (d.size() < dgram::kHeaderSize) return DatagramCheck::kTooShort;
  const std::byte* p = d.data();
  if (load_le<uint16_t>(p + dgram::kMagic) != kMagic) return DatagramCheck::kBadMagic;
  if (load_le<uint8_t>(p + dgram::kVersion) != kVersion) return DatagramCheck::kBadVersion;
  h = read_header(p);
  if (h.flags & ~kKnownDatagramFlags) return DatagramCheck::kBadFlags;
  if (h.length != d.size() || h.length > kMaxDatagram) return DatagramCheck::kBadLength;
  if (h.sequence == 0 && h.sequenced()) return DatagramCheck::kBadSequence;
  size_t body = d.size() - dgram::kHeaderSize;
  if (h.flags & kFlagTag) {
    if (h.flags & kFlagCrc) return DatagramCheck::kBadFlags;
    if (body < dgram::kTagSize) return DatagramCheck::kBadLength;
    body -= dgram::kTagSize;  // checked by whoever holds the key (tag_ok)
  }
  if (h.flags & kFlagCrc) {
    if (load_le<uint32_t>(p + dgram::kCrc) != datagram_crc(p, d.size())) return DatagramCheck::kBadCrc;
  }
  uint32_t unknown = 0;
  const int n = validate_message_run(p + dgram::kHeaderSize, body, &unknown);
  if (n < 0) return DatagramCheck::kBadMessage;
  if (n != h.message_count) return DatagramCheck::kBadCount;
  // Only a datagram that passed gets a count: the caller trusts it then.
  if (unknown_types) *unknown_types = unknown;
  return DatagramCheck::kOk;
}

int validate_message_run(const std::byte* p, size_t len, uint32_t* unknown_types) noexcept {
  size_t off = 0;
  int n = 0;
  uint32_t unknown = 0;
  while (off < len) {
    if (len - off < msg::kHeaderSize) return -1;
    const auto mlen = load_le<uint16_t>(p + off + msg::kLength);
    if (mlen < msg::kHeaderSize || mlen > len - off) return -1;
    const MessageCheck c = validate_message(p + off, mlen);
    if (c == MessageCheck::kUnknownType) {
      ++unknown;
    } else if (c != MessageCheck::kOk) {
      return -1;
    }
    off += mlen;
    ++n;
  }
  if (unknown_types) *unknown_types = unknown;
  return n;
}

std::string_view to_string(DatagramCheck c) noexcept {
  switch (c) {
    case DatagramCheck::kOk: return "ok";
    case DatagramCheck::kTooShort: return "shorter than a datagram header";
    case DatagramCheck::kBadMagic: return "bad magic";
    case DatagramCheck::kBadVersion: return "unsupported protocol version";
    case DatagramCheck::kBadFlags: return "unknown flag bits";
    case DatagramCheck::kBadLength: return "header length disagrees with bytes received";
    case DatagramCheck::kBadCrc: return "CRC mismatch";
    case DatagramCheck::kBadMessage: return "malformed message";
    case DatagramCheck::kBadCount: return "message count disagrees with contents";
    case DatagramCheck::kBadSequence: return "sequence 0 on a sequenced datagram";
  }
  return "?";
}

}  // namespace mdcast::wire
