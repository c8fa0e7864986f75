// RecordingReader: the frames of a recording (or of any pcap/pcapng capture
// of an mdcast UDP feed: tcpdump -i lo, -i any) back as validated mdcast
// datagrams, in file order, with their file offsets and nanosecond
// timestamps. Read through libpcap (pcap_open_offline_with_tstamp_precision),
// so classic pcap in either precision and pcapng are all taken.
//
// Damage stops the reader, never crashes it: a truncated record, a record
// header libpcap refuses, a frame whose IPv4/UDP layers or checksums are
// wrong, a payload that is neither a valid mdcast datagram nor a marker -
// next() returns kDamaged and error() says "FILE: offset N: what", N the
// offset of the record's header. Everything before it was returned intact.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "mdcast/record/frame.hpp"
#include "mdcast/record/marker.hpp"
#include "mdcast/wire/datagram.hpp"

struct pcap;

namespace mdcast::record {

struct RecordedFrame {
  bool is_marker = false;
  uint64_t offset = 0;                  // of the pcap record (its 16-byte header) in the file
  uint64_t time_ns = 0;                 // nanoseconds since the epoch
  FrameAddress address;
  std::span<const std::byte> datagram;  // the UDP payload: valid until the next call
  wire::DatagramHeader header;          // when a datagram
  Marker marker;                        // when a marker
};

enum class ReadResult : uint8_t { kFrame, kEnd, kDamaged };

class RecordingReader {
 public:
  // Throws Error when the file cannot be opened or is not a capture libpcap reads.
  explicit RecordingReader(const std::string& path);
  ~RecordingReader();
  RecordingReader(RecordingReader&& o) noexcept;
  RecordingReader& operator=(RecordingReader&&) = delete;

  [[nodiscard]] ReadResult next(RecordedFrame& out) noexcept;
  // Continues at a record's offset (from the index). Classic pcap only; false
  // for pcapng or an offset outside the file.
  [[nodiscard]] bool seek(uint64_t offset) noexcept;

  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int link_type() const noexcept { return link_; }
  [[nodiscard]] uint64_t frames() const noexcept { return frames_; }
  [[nodiscard]] uint64_t file_size() const noexcept { return size_; }

 private:
  ReadResult damaged(uint64_t offset, std::string what) noexcept;

  std::string path_;
  std::string error_;
  pcap* p_ = nullptr;
  int link_ = 0;
  bool classic_ = false;
  uint64_t size_ = 0;
  uint64_t frames_ = 0;
};

}  // namespace mdcast::record
