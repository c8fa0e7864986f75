// RecordingWriter: delivered mdcast datagrams into nanosecond pcap files
// through libpcap (pcap_dump), one Ethernet/IPv4/UDP frame each, with the
// index beside every file and rotation by size or time (docs/recording.md).
//
//   RecordingWriter w({.base = "/data/feed1"});           // feed1.0000.pcap + .idx
//   w.write(datagram, sequence, realtime_ns);               // per delivered datagram
//   w.mark(Marker{MarkerKind::kGap, first_missing, next});  // a jump in the sequence
//   w.close();                                              // flush; throws Error if a write failed
//
// write() and mark() are the data path: noexcept, no allocation (the frame is
// built in a buffer allocated once, and pcap_dump writes through stdio's
// buffer); only a rotation allocates (the next file's name and libpcap's
// dumper). A failed write or rotation is remembered - failed(), error() - and
// everything after it is dropped and counted, never a crash.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "mdcast/record/frame.hpp"
#include "mdcast/record/index.hpp"
#include "mdcast/record/marker.hpp"

struct pcap;
struct pcap_dumper;

namespace mdcast::record {

// "<base>.<n>.pcap", n in 4 digits (lexical order is replay order up to 9999).
[[nodiscard]] std::string recording_file(const std::string& base, uint32_t n);
[[nodiscard]] inline std::string index_file(const std::string& pcap_file) { return pcap_file + ".idx"; }

struct WriterOptions {
  std::string base;               // files <base>.<n>.pcap; a trailing ".pcap" is dropped
  uint64_t rotate_bytes = 0;      // start the next file once this one holds this much; 0: never
  uint64_t rotate_ns = 0;         // ... or once its first frame is this old; 0: never
  uint32_t index_every = 1024;    // an index entry every this many datagrams (and the first of a file)
  size_t max_datagram = 65507;    // largest datagram recorded (larger: counted as dropped, never cut)
  FrameAddress address;
};

class RecordingWriter {
 public:
  // Opens the first file. Throws Error (path, errno, what to do).
  explicit RecordingWriter(WriterOptions o);
  ~RecordingWriter();
  RecordingWriter(RecordingWriter&&) noexcept;
  RecordingWriter& operator=(RecordingWriter&&) = delete;

  // One delivered datagram; false once the writer has failed (dropped).
  bool write(std::span<const std::byte> datagram, uint64_t sequence, uint64_t realtime_ns) noexcept;
  // A marker frame (a break in the sequence, a new session, an image's part).
  bool mark(const Marker& m, uint64_t realtime_ns) noexcept;
  // Where frames now say they come from (the publisher's address, once known).
  void set_address(const FrameAddress& a) noexcept { opts_.address = a; }

  // Flushes and closes the current file. Throws Error if any write failed.
  void close();

  [[nodiscard]] bool failed() const noexcept { return !error_.empty(); }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }
  [[nodiscard]] uint32_t files() const noexcept { return file_no_ + (dumper_ ? 1 : 0); }
  [[nodiscard]] uint64_t frames() const noexcept { return frames_; }
  [[nodiscard]] uint64_t bytes() const noexcept { return bytes_total_; }
  [[nodiscard]] uint64_t dropped() const noexcept { return dropped_; }
  [[nodiscard]] const std::string& current_file() const noexcept { return path_; }
  [[nodiscard]] const WriterOptions& options() const noexcept { return opts_; }

 private:
  void open_file();  // throws
  bool finish_file() noexcept;
  bool put(std::span<const std::byte> payload, uint64_t realtime_ns, uint64_t index_seq, bool indexed) noexcept;

  WriterOptions opts_;
  std::unique_ptr<std::byte[]> frame_;
  std::unique_ptr<std::byte[]> marker_;  // a marker's payload (an image's messages after its header)
  pcap* pcap_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
  IndexWriter index_;
  std::string path_;
  std::string error_;
  uint32_t file_no_ = 0;      // files finished
  uint64_t file_bytes_ = 0;
  uint64_t file_start_ns_ = 0;
  uint64_t since_index_ = 0;
  bool file_has_index_ = false;
  uint64_t frames_ = 0;
  uint64_t bytes_total_ = 0;
  uint64_t dropped_ = 0;
  uint16_t ip_id_ = 0;
};

}  // namespace mdcast::record
