// Marker frames: what a recording holds where the delivered datagram sequence
// does not simply go on - the recorder's subscriber replaced a range by a
// snapshot (a gap in the recording) or the publisher began a new session.
// A marker is a UDP frame like the others, to the same group and port, whose
// payload starts with "MDCREC01" instead of an mdcast header (whose first two
// bytes are 'M','C'), so a dissector tells them apart (docs/recording.md):
//
//   "MDCREC01"  u8 kind  7 bytes zero  u64 a  u64 b        (32 bytes, little-endian)
//   kind 1 gap:      a = first sequence missing, b = the next sequence recorded
//   kind 2 session:  a = the new session's id,   b = the recording host's
//                    CLOCK_REALTIME - CLOCK_MONOTONIC (ns, i64; 0 in recordings
//                    made before it was written): frame time = receive time + b
//   kind 3 image:    a = the next sequence recorded, b = 1 on the last frame of
//                    the image; then a run of mdcast messages (definitions,
//                    statuses, add orders): the books as the snapshot left them
//
// A gap is followed by its image (one or more frames, the last flagged), so a
// replay can go on across it with the books the snapshot gave.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mdcast::record {

inline constexpr char kMarkerMagic[8] = {'M', 'D', 'C', 'R', 'E', 'C', '0', '1'};
inline constexpr size_t kMarkerSize = 32;

enum class MarkerKind : uint8_t { kGap = 1, kSession = 2, kImage = 3 };

struct Marker {
  MarkerKind kind = MarkerKind::kGap;
  uint64_t a = 0;
  uint64_t b = 0;
  std::span<const std::byte> messages;  // kImage: the message run after the 32 bytes (validated)
};

void encode_marker(const Marker& m, std::byte (&out)[kMarkerSize]) noexcept;
[[nodiscard]] bool is_marker(std::span<const std::byte> payload) noexcept;
// False if the payload is a marker of wrong size or unknown kind, or an image
// whose message run does not validate.
[[nodiscard]] bool decode_marker(std::span<const std::byte> payload, Marker& out) noexcept;

}  // namespace mdcast::record
