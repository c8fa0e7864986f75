// The shm ring under a writer whose shared words anyone with the file's
// access could overwrite (the publisher's own user, or a bit flip): the
// input is a program of writes, forged words and reads. Whatever it does, a
// reader never crashes, hangs or hands out more than max_datagram bytes, the
// writer's own history (retransmits) never points outside its records, and
// without forgery every datagram read is the one written, in order.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "fuzz_support.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/history/record.hpp"
#include "mdcast/history/retransmit_log.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

using namespace mdcast;
using namespace mdcast::media::shm;

namespace {

constexpr size_t kMax = 256;

struct Forger {
  explicit Forger(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDWR);
    struct stat st;
    ::fstat(fd, &st);
    size = static_cast<size_t>(st.st_size);
    base = static_cast<std::byte*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    ::close(fd);
  }
  ~Forger() { ::munmap(base, size); }
  std::byte* base;
  size_t size;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  RingOptions o;
  o.name = "fuzz-" + std::to_string(::getpid());
  o.dir = "/dev/shm";
  o.slots = 16 + in.u8() % 16;
  o.max_datagram = kMax;
  o.huge_pages = false;
  RingWriter w(o, 1, 1, "unix:@fuzz");
  history::RetransmitLog eng(w.ring_memory(), kMax);  // the engine builds in place, as a publisher does
  FUZZ_CHECK(eng.layout() == history::RetransmitLog::Layout::kTerm, "the shm ring is a term log");
  Forger f(w.path());
  std::optional<RingReader> r;
  r.emplace(w.path());
  bool forged = false;
  uint64_t seq = 0, last_read = 0;
  std::byte buf[kMax];
  for (int step = 0; step < 256 && !in.empty(); ++step) {
    switch (in.u8() % 8) {
      case 0:
      case 1: {  // a datagram: its sequence in its first 8 bytes
        const size_t len = 8 + in.u8() % (kMax - 7);
        std::byte* p = eng.claim(++seq);
        std::memcpy(p, &seq, 8);
        std::memset(p + 8, static_cast<int>(seq & 0xff), len - 8);
        eng.commit(seq, static_cast<uint16_t>(len));
        w.publish(seq);
        break;
      }
      case 2: {  // a heartbeat: zeros where a datagram has its sequence
        std::byte hb[16]{};
        w.write_unsequenced({hb, sizeof hb});
        break;
      }
      case 3: {  // a forged word, anywhere in the file past the magic
        const size_t at = (8 + in.u32() % (f.size - 16)) & ~size_t{7};
        uint64_t v = 0;
        switch (in.u8() % 4) {
          case 0: v = in.u32(); break;
          case 1: v = seq + in.u8(); break;
          case 2: v = history::record::kClaimed | (seq + 1); break;
          default: v = uint64_t{in.u32()} << 32 | in.u32(); break;
        }
        std::memcpy(f.base + at, &v, 8);
        forged = true;
        break;
      }
      case 4:
      case 5: {  // reads
        const int n = 1 + in.u8() % 32;
        for (int i = 0; i < n; ++i) {
          size_t len = 0;
          const auto res = r->read(buf, len);
          if (res == RingReader::Read::kEmpty) break;
          if (res != RingReader::Read::kOk) continue;
          FUZZ_CHECK(len <= kMax, "read %zu bytes, more than max_datagram", len);
          if (forged || len < 8) continue;
          uint64_t got = 0;
          std::memcpy(&got, buf, 8);
          if (got == 0) continue;  // a heartbeat (the lane's)
          FUZZ_CHECK(got > last_read && got <= seq, "honest ring: read %llu after %llu (written %llu)",
                     static_cast<unsigned long long>(got), static_cast<unsigned long long>(last_read),
                     static_cast<unsigned long long>(seq));
          FUZZ_CHECK(got == last_read + 1 || r->lapped() > 0, "honest ring: skipped without a lap");
          last_read = got;
        }
        break;
      }
      case 6: {  // the writer's history: what a retransmit would send
        const uint64_t want = seq ? 1 + in.u32() % seq : 0;
        const auto d = eng.get(want);
        const auto mem = w.ring_memory();
        FUZZ_CHECK(d.size() <= kMax, "retransmit of %zu bytes", d.size());
        FUZZ_CHECK(d.empty() || (d.data() >= mem.data() && d.data() + d.size() <= mem.data() + mem.size()),
                   "retransmit outside the ring");
        (void)eng.oldest();
        break;
      }
      default: {  // a reader repositions, or a new one attaches
        const uint8_t k = in.u8() % 3;
        if (k == 0) {
          r->seek_to_writer();
        } else if (k == 1) {
          r->refresh(mdcast::monotonic_ns());
        } else {
          try {
            RingReader fresh(w.path());  // a forged header refuses it: the old reader stays
            *r = std::move(fresh);
          } catch (const Error&) {
            FUZZ_CHECK(forged, "an honest ring refused: attach");
          }
        }
        last_read = r->position() - 1;
        break;
      }
    }
  }
  return 0;
}
