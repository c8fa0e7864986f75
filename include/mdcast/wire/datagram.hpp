// Datagram header codec, the one validating pass over a received datagram, and
// the cursor that walks its messages afterwards.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mdcast/core/bytes.hpp"
#include "mdcast/wire/messages.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::wire {

struct DatagramHeader {
  uint8_t flags = 0;
  uint16_t channel = 0;
  uint16_t message_count = 0;
  uint64_t session = 0;
  uint16_t sender = 0;
  uint64_t sequence = 0;
  uint64_t send_time_ns = 0;
  uint16_t length = 0;

  [[nodiscard]] bool sequenced() const noexcept { return (flags & kFlagUnsequenced) == 0; }
};

enum class DatagramCheck : uint8_t {
  kOk,
  kTooShort,       // fewer bytes than a header
  kBadMagic,
  kBadVersion,
  kBadFlags,       // unknown flag bits
  kBadLength,      // header length disagrees with the bytes received
  kBadCrc,
  kBadMessage,     // a message overruns the datagram or fails validate_message
  kBadCount,       // message_count disagrees with the messages present
  kBadSequence,    // sequence 0
};

// A session's data key: every tagged datagram of the session is sealed and
// checked with it. Subscribers get it only over the authenticated control
// plane (wire/auth.hpp, AuthDataKey).
using DataKey = std::array<std::byte, 16>;

void write_header(std::byte* out, const DatagramHeader& h) noexcept;

// Reads the header fields without any check (use after validate_datagram, or
// to peek at a header already known to be at least kHeaderSize long).
[[nodiscard]] DatagramHeader read_header(const std::byte* p) noexcept;

// Fills the CRC field of a complete datagram (header flags must have kFlagCrc).
void seal_crc(std::span<std::byte> datagram) noexcept;

// Fills the tag trailer of a complete datagram (flags must have kFlagTag,
// and `length` count the trailer).
void seal_tag(std::span<std::byte> datagram, const DataKey& key) noexcept;
// Whether a validated datagram carries kFlagTag and a tag `key` made.
// Constant time in the tag's contents.
[[nodiscard]] bool tag_ok(std::span<const std::byte> datagram, const DataKey& key) noexcept;

// The bytes a datagram's messages occupy (without the header and any tag).
[[nodiscard]] inline size_t payload_size(std::span<const std::byte> datagram) noexcept {
  const bool tagged = (static_cast<uint8_t>(datagram[dgram::kFlags]) & kFlagTag) != 0;
  return datagram.size() - dgram::kHeaderSize - (tagged ? dgram::kTagSize : 0);
}

// The bounds-checked pass: header, length, CRC, and every message's framing
// and type-specific size. `unknown_types` receives the count of skipped
// messages of unknown type. After kOk, everything below may read unchecked.
[[nodiscard]] DatagramCheck validate_datagram(std::span<const std::byte> d, DatagramHeader& out,
                                              uint32_t* unknown_types = nullptr) noexcept;

[[nodiscard]] std::string_view to_string(DatagramCheck c) noexcept;

// Walks the messages of a validated datagram (or any validated message run).
class MessageCursor {
 public:
  MessageCursor(const std::byte* p, size_t len) noexcept : p_(p), end_(p + len) {}
  static MessageCursor payload_of(std::span<const std::byte> datagram) noexcept {
    return {datagram.data() + dgram::kHeaderSize, payload_size(datagram)};
  }
  // Returns false at the end.
  bool next(MessageView& v) noexcept {
    if (p_ >= end_) return false;
    const auto len = load_le<uint16_t>(p_ + msg::kLength);
    v = MessageView(p_, len);
    p_ += len;
    return true;
  }

 private:
  const std::byte* p_;
  const std::byte* end_;
};

// Validates a run of messages with no datagram header around it (control
// frames carry these). Returns the number of messages, or -1 if malformed.
// `unknown_types` (set only when the run is well formed) receives how many of
// them are of a type this build does not know, counted in the same pass so a
// datagram's messages are read once.
[[nodiscard]] int validate_message_run(const std::byte* p, size_t len, uint32_t* unknown_types = nullptr) noexcept;

}  // namespace mdcast::wire
