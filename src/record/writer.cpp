#include "mdcast/record/writer.hpp"

#include <pcap/pcap.h>

#include <cstring>
#include <utility>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::record {

void encode_marker(const Marker& m, std::byte (&out)[kMarkerSize]) noexcept {
  std::memset(out, 0, sizeof out);
  std::memcpy(out, kMarkerMagic, 8);
  out[8] = static_cast<std::byte>(m.kind);
  store_le<uint64_t>(out + 16, m.a);
  store_le<uint64_t>(out + 24, m.b);
}

bool is_marker(std::span<const std::byte> p) noexcept {
  return p.size() >= 8 && std::memcmp(p.data(), kMarkerMagic, 8) == 0;
}

bool decode_marker(std::span<const std::byte> p, Marker& out) noexcept {
  if (p.size() < kMarkerSize || !is_marker(p)) return false;
  const auto kind = static_cast<uint8_t>(p[8]);
  if (kind < 1 || kind > 3) return false;
  if (kind != 3 && p.size() != kMarkerSize) return false;
  const std::span<const std::byte> run = p.subspan(kMarkerSize);
  if (kind == 3 && wire::validate_message_run(run.data(), run.size()) < 0) return false;
  out = {static_cast<MarkerKind>(kind), load_le<uint64_t>(p.data() + 16), load_le<uint64_t>(p.data() + 24),
         kind == 3 ? run : std::span<const std::byte>()};
  return true;
}

std::string recording_file(const std::string& base, uint32_t n) { return fmt::format("{}.{:04}.pcap", base, n); }

RecordingWriter::RecordingWriter(WriterOptions o) : opts_(std::move(o)) {
  if (opts_.base.size() > 5 && opts_.base.ends_with(".pcap")) opts_.base.resize(opts_.base.size() - 5);
  if (opts_.base.empty()) fail("recording: no file name given (--out BASE)");
  if (opts_.max_datagram > kMaxPayload)
    fail("recording: datagrams of up to {} bytes do not fit an IPv4/UDP frame (at most {}); lower the medium's "
         "max_datagram", opts_.max_datagram, kMaxPayload);
  if (opts_.index_every == 0) opts_.index_every = 1;
  frame_ = std::make_unique<std::byte[]>(kFrameOverhead + kMaxPayload);
  pcap_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(kFrameOverhead + kMaxPayload),
                                               PCAP_TSTAMP_PRECISION_NANO);
  if (!pcap_) fail("recording: libpcap could not make a nanosecond Ethernet capture handle (out of memory?)");
  try {
    open_file();
  } catch (...) {
    pcap_close(pcap_);
    pcap_ = nullptr;
    throw;
  }
}

RecordingWriter::~RecordingWriter() {
  (void)finish_file();
  if (pcap_) pcap_close(pcap_);
}

RecordingWriter::RecordingWriter(RecordingWriter&& o) noexcept
    : opts_(std::move(o.opts_)),
      frame_(std::move(o.frame_)),
      marker_(std::move(o.marker_)),
      pcap_(std::exchange(o.pcap_, nullptr)),
      dumper_(std::exchange(o.dumper_, nullptr)),
      index_(std::move(o.index_)),
      path_(std::move(o.path_)),
      error_(std::move(o.error_)),
      file_no_(o.file_no_),
      file_bytes_(o.file_bytes_),
      file_start_ns_(o.file_start_ns_),
      since_index_(o.since_index_),
      file_has_index_(o.file_has_index_),
      frames_(o.frames_),
      bytes_total_(o.bytes_total_),
      dropped_(o.dropped_),
      ip_id_(o.ip_id_) {}

void RecordingWriter::open_file() {
  path_ = recording_file(opts_.base, file_no_);
  // Our own FILE, to give it a 1 MiB buffer before libpcap writes the file
  // header: a write(2) per MiB of frames instead of per 4 KiB.
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  if (!f) fail_errno("recording file {}: cannot create it (does the directory exist and may this user write there?)", path_);
  std::setvbuf(f, nullptr, _IOFBF, size_t{1} << 20);
  dumper_ = pcap_dump_fopen(pcap_, f);
  if (!dumper_) {
    std::fclose(f);
    fail("recording file {}: libpcap cannot write it: {}", path_, pcap_geterr(pcap_));
  }
  index_ = IndexWriter(index_file(path_), opts_.index_every);
  file_bytes_ = static_cast<uint64_t>(pcap_dump_ftell64(dumper_));
  file_start_ns_ = 0;
  since_index_ = 0;
  file_has_index_ = false;
}

bool RecordingWriter::finish_file() noexcept {
  if (!dumper_) return true;
  bool ok = pcap_dump_flush(dumper_) == 0 && !std::ferror(pcap_dump_file(dumper_));
  if (!ok || failed()) (void)index_.mark_cut();
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  ok = index_.flush() && ok;
  index_ = IndexWriter();
  ++file_no_;
  if (!ok && error_.empty()) error_ = fmt::format("recording file {}: a write failed (disk full?)", path_);
  return ok;
}

bool RecordingWriter::put(std::span<const std::byte> payload, uint64_t t, uint64_t index_seq, bool indexed) noexcept {
  if (failed() || !dumper_) {
    ++dropped_;
    return false;
  }
  const bool by_size = opts_.rotate_bytes && file_bytes_ >= opts_.rotate_bytes;
  const bool by_time = opts_.rotate_ns && file_start_ns_ && t - file_start_ns_ >= opts_.rotate_ns;
  if ((by_size || by_time) && frames_ > 0) {
    if (!finish_file()) {
      ++dropped_;
      return false;
    }
    try {
      open_file();
    } catch (const std::exception& e) {
      error_ = e.what();
      ++dropped_;
      return false;
    }
  }
  if (payload.size() > opts_.max_datagram && !is_marker(payload)) {
    ++dropped_;  // larger than the snapshot length: counted, never cut
    return false;
  }
  const size_t n = build_frame({frame_.get(), kFrameOverhead + kMaxPayload}, opts_.address, payload, ip_id_++);
  if (n == 0) {
    ++dropped_;  // larger than an IPv4/UDP frame carries
    return false;
  }
  if (!file_start_ns_) file_start_ns_ = t ? t : 1;
  if (indexed && (!file_has_index_ || ++since_index_ >= opts_.index_every)) {
    // A full disk shows as a sticky stdio error, not as pcap_dump's (void)
    // result: looked at here, once per index entry, so the recording stops
    // loudly within N datagrams of it instead of at the end.
    if (std::ferror(pcap_dump_file(dumper_))) {
      error_ = fmt::format("recording file {}: a write failed near offset {} (is the disk full?); the file holds "
                           "what was written before it", path_, file_bytes_);
      (void)index_.mark_cut();
      ++dropped_;
      return false;
    }
    index_.add({index_seq, file_bytes_, t});
    since_index_ = 0;
    file_has_index_ = true;
  }
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(t / 1'000'000'000);
  h.ts.tv_usec = static_cast<suseconds_t>(t % 1'000'000'000);  // nanoseconds: the handle is PRECISION_NANO
  h.caplen = h.len = static_cast<bpf_u_int32>(n);
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, reinterpret_cast<const u_char*>(frame_.get()));
  file_bytes_ += sizeof(uint32_t) * 4 + n;  // the record header on disk is 16 bytes
  bytes_total_ += sizeof(uint32_t) * 4 + n;
  ++frames_;
  return true;
}

bool RecordingWriter::write(std::span<const std::byte> d, uint64_t sequence, uint64_t t) noexcept {
  return put(d, t, sequence, true);
}

bool RecordingWriter::mark(const Marker& m, uint64_t t) noexcept {
  const size_t n = kMarkerSize + m.messages.size();
  if (n > kMaxPayload) {
    ++dropped_;
    return false;
  }
  if (!marker_) marker_ = std::make_unique<std::byte[]>(kMaxPayload);  // once, at the first image
  std::byte b[kMarkerSize];
  encode_marker(m, b);
  std::memcpy(marker_.get(), b, kMarkerSize);
  if (!m.messages.empty()) std::memcpy(marker_.get() + kMarkerSize, m.messages.data(), m.messages.size());
  return put({marker_.get(), n}, t, 0, false);
}

void RecordingWriter::close() {
  (void)finish_file();
  if (failed()) throw Error(error_);
}

}  // namespace mdcast::record
