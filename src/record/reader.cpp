#include "mdcast/record/reader.hpp"

#include <pcap/pcap.h>
#include <sys/stat.h>

#include <utility>

#include "mdcast/core/error.hpp"

namespace mdcast::record {

RecordingReader::RecordingReader(const std::string& path) : path_(path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  p_ = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err);
  if (!p_)
    fail("recording {}: cannot read it: {} (a pcap or pcapng file is expected; a file cut inside its first 24 bytes "
         "has nothing to replay)", path, err);
  link_ = pcap_datalink(p_);
  // pcapng's major version reads as 1 through pcap_major_version only for
  // classic files; seeking to a record offset is for those.
  classic_ = pcap_major_version(p_) == 2;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) size_ = static_cast<uint64_t>(st.st_size);
  FrameInfo probe;
  if (parse_frame(link_, {}, probe) == FrameCheck::kUnknownLink) {
    const int l = link_;
    pcap_close(std::exchange(p_, nullptr));
    fail("recording {}: link type {} ({}): mdcast replays Ethernet, raw IPv4 and Linux cooked captures", path, l,
         pcap_datalink_val_to_name(l) ? pcap_datalink_val_to_name(l) : "?");
  }
}

RecordingReader::~RecordingReader() {
  if (p_) pcap_close(p_);
}

RecordingReader::RecordingReader(RecordingReader&& o) noexcept
    : path_(std::move(o.path_)),
      error_(std::move(o.error_)),
      p_(std::exchange(o.p_, nullptr)),
      link_(o.link_),
      classic_(o.classic_),
      size_(o.size_),
      frames_(o.frames_) {}

ReadResult RecordingReader::damaged(uint64_t offset, std::string what) noexcept {
  try {
    error_ = fmt::format("{}: offset {}: {}", path_, offset, what);
  } catch (...) {
    error_ = "recording damaged (and no memory to say where)";
  }
  return ReadResult::kDamaged;
}

bool RecordingReader::seek(uint64_t offset) noexcept {
  if (!p_ || !classic_ || offset < 24 || offset >= size_) return false;
  return std::fseek(pcap_file(p_), static_cast<long>(offset), SEEK_SET) == 0;
}

ReadResult RecordingReader::next(RecordedFrame& out) noexcept {
  if (!p_) return ReadResult::kEnd;
  std::FILE* f = pcap_file(p_);
  const long at = f ? std::ftell(f) : -1;
  const uint64_t offset = at < 0 ? 0 : static_cast<uint64_t>(at);
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  const int rc = pcap_next_ex(p_, &h, &data);
  if (rc == PCAP_ERROR_BREAK) return ReadResult::kEnd;
  if (rc != 1) return damaged(offset, fmt::format("unreadable record: {}", pcap_geterr(p_)));
  if (h->caplen < h->len)
    return damaged(offset, fmt::format("frame cut at {} of its {} bytes when captured (snapshot length too small)",
                                       h->caplen, h->len));
  out.offset = offset;
  out.time_ns = static_cast<uint64_t>(h->ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(h->ts.tv_usec);
  FrameInfo fi;
  const FrameCheck fc = parse_frame(link_, {reinterpret_cast<const std::byte*>(data), h->caplen}, fi);
  if (fc != FrameCheck::kOk) return damaged(offset, fmt::format("frame {}: {}", frames_ + 1, to_string(fc)));
  out.address = fi.address;
  out.datagram = fi.payload;
  ++frames_;
  if (is_marker(fi.payload)) {
    out.is_marker = true;
    if (!decode_marker(fi.payload, out.marker)) return damaged(offset, "malformed recording marker");
    return ReadResult::kFrame;
  }
  out.is_marker = false;
  const wire::DatagramCheck dc = wire::validate_datagram(fi.payload, out.header);
  if (dc != wire::DatagramCheck::kOk)
    return damaged(offset, fmt::format("frame {}: not a valid mdcast datagram: {}", frames_, wire::to_string(dc)));
  return ReadResult::kFrame;
}

}  // namespace mdcast::record
