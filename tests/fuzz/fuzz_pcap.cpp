// fuzz_pcap: the recording reader is what `mdcast replay` points at a file
// anyone may have written (or cut, or damaged). Whatever the bytes, it must
// return frames, a clean end or kDamaged with an offset - never crash, hang
// or hand out a datagram that validate_datagram did not pass. Frames are
// walked and decoded exactly as the replay does.
//
// Input: byte 0 selects the mode.
//   0 mod 3: the rest is a whole capture file (pcap or pcapng).
//   1 mod 3: the rest is an mdcast payload, wrapped into a valid frame in a
//            valid nanosecond pcap (so mutations reach the datagram checks);
//            byte 1 damages one byte of the frame when nonzero.
//   2 mod 3: byte 1 picks a link type, the rest is one frame for parse_frame;
//            a payload it accepts is framed again and must parse the same.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fuzz_support.hpp"
#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/record/reader.hpp"

using namespace mdcast;
using namespace mdcast::record;

namespace {

// The input as a file libpcap can open by name.
struct MemFile {
  int fd = -1;
  std::string path;
  explicit MemFile(std::span<const std::byte> data) {
    fd = ::memfd_create("fuzz_pcap", 0);
    if (fd < 0) std::abort();
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
      if (n <= 0) std::abort();
      off += static_cast<size_t>(n);
    }
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() { ::close(fd); }
};

void read_all(std::span<const std::byte> file) {
  MemFile mf(file);
  try {
    RecordingReader r(mf.path);
    feed::Reassembler reasm(4, 16384);
    RecordedFrame f;
    uint64_t last_offset = 0;
    for (int i = 0; i < 4096; ++i) {
      const ReadResult rr = r.next(f);
      if (rr == ReadResult::kDamaged) {
        FUZZ_CHECK(r.error().find(": offset ") != std::string::npos, "damage without an offset: %s", r.error().c_str());
        return;
      }
      if (rr == ReadResult::kEnd) return;
      FUZZ_CHECK(i == 0 || f.offset > last_offset, "offsets do not rise: %llu after %llu",
                 static_cast<unsigned long long>(f.offset), static_cast<unsigned long long>(last_offset));
      last_offset = f.offset;
      if (f.is_marker) {
        // An image's messages were validated as a run: decoding reads them unchecked.
        wire::MessageCursor cur(f.marker.messages.data(), f.marker.messages.size());
        wire::MessageView v;
        while (cur.next(v)) (void)wire::decode(v);
        continue;
      }
      wire::DatagramHeader h;
      FUZZ_CHECK(wire::validate_datagram(f.datagram, h) == wire::DatagramCheck::kOk, "an invalid datagram returned");
      wire::MessageCursor cur = wire::MessageCursor::payload_of(f.datagram);
      wire::MessageView v;
      while (cur.next(v)) {
        if (v.type() == wire::MsgType::kFragment) {
          std::span<const std::byte> whole;
          if (reasm.add(wire::FragmentView(v), whole) == feed::Reassembler::Result::kComplete && whole.size() <= 65535 &&
              wire::validate_message(whole.data(), static_cast<uint16_t>(whole.size())) == wire::MessageCheck::kOk)
            (void)wire::decode(wire::MessageView(whole.data(), static_cast<uint16_t>(whole.size())));
          continue;
        }
        (void)wire::decode(v);
      }
    }
  } catch (const Error&) {
    // Not a capture libpcap opens, or a link type the reader does not take: refused, as documented.
  }
}

void wrapped(fuzz::Reader& in) {
  const uint8_t damage = in.u8();
  const auto payload = in.bytes(std::min<size_t>(in.left(), kMaxPayload));
  std::vector<std::byte> file(24 + 16 + kFrameOverhead + payload.size());
  std::byte* p = file.data();
  store_le<uint32_t>(p, 0xa1b23c4d);  // nanosecond pcap
  store_le<uint16_t>(p + 4, 2);
  store_le<uint16_t>(p + 6, 4);
  store_le<uint32_t>(p + 16, 65549);
  store_le<uint32_t>(p + 20, 1);
  const size_t n = build_frame({p + 40, kFrameOverhead + payload.size()}, FrameAddress{}, payload, 1);
  FUZZ_CHECK(n == kFrameOverhead + payload.size(), "build_frame refused %zu bytes", payload.size());
  store_le<uint32_t>(p + 24, 1'780'000'000);
  store_le<uint32_t>(p + 28, 5);
  store_le<uint32_t>(p + 32, static_cast<uint32_t>(n));
  store_le<uint32_t>(p + 36, static_cast<uint32_t>(n));
  if (damage) file[24 + (damage * 7u) % (file.size() - 24)] ^= std::byte{damage};
  read_all(file);
}

void one_frame(fuzz::Reader& in) {
  static constexpr int kLinks[] = {kLinkEthernet, kLinkRaw, kLinkRawDlt, kLinkLinuxSll, kLinkLinuxSll2, kLinkIpv4, 147};
  const int link = kLinks[in.u8() % std::size(kLinks)];
  const auto frame = in.bytes(in.left());
  FrameInfo fi;
  if (parse_frame(link, frame, fi) != FrameCheck::kOk) return;
  FUZZ_CHECK(fi.payload.data() >= frame.data() && fi.payload.data() + fi.payload.size() <= frame.data() + frame.size(),
             "payload outside the frame");
  std::vector<std::byte> again(kFrameOverhead + fi.payload.size());
  if (build_frame(again, fi.address, fi.payload, 9) == 0) return;  // a payload above kMaxPayload
  FrameInfo fj;
  FUZZ_CHECK(parse_frame(kLinkEthernet, again, fj) == FrameCheck::kOk, "a frame built from a parsed one fails");
  FUZZ_CHECK(fj.payload.size() == fi.payload.size() &&
                 std::memcmp(fj.payload.data(), fi.payload.data(), fi.payload.size()) == 0,
             "payload changed in a round trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  switch (in.u8() % 3) {
    case 0: read_all(in.bytes(in.left())); break;
    case 1: wrapped(in); break;
    default: one_frame(in); break;
  }
  return 0;
}
