#include "mdcast/media/shm/shm_ring.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <linux/futex.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/process.hpp"

namespace mdcast::media::shm {
namespace {

constexpr long kHugetlbfsMagic = 0x958458f6;

// The header fields at fixed offsets (the first 256 bytes).
void write_header(std::byte* p, const RingHeaderView& h) {
  std::memcpy(p, &h, sizeof h);
}

bool hugetlbfs_usable(const std::string& dir) {
  struct statfs fs;
  if (statfs(dir.c_str(), &fs) != 0 || fs.f_type != kHugetlbfsMagic) return false;
  return fs.f_bfree > 0;
}


// Creates the ring file exclusively and maps it; unlinks it again on failure.
MappedMemory create_mapping(const std::string& path, size_t bytes, bool huge) {
  UniqueFd f(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644));
  if (f.get() < 0) fail_errno("cannot create shm ring {}", path);
  const size_t map_bytes = huge ? (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20) : bytes;
  try {
    if (::ftruncate(f.get(), static_cast<off_t>(map_bytes)) != 0) fail_errno("cannot size shm ring {} to {} bytes", path, map_bytes);
    return MappedMemory::shared(f.get(), map_bytes, true, "shm ring " + path);
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
}

long futex(void* addr, int op, uint32_t val, const timespec* ts) noexcept {
  return ::syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

std::atomic<uint32_t>& slot_pid(std::byte* base, size_t i) noexcept {
  return *reinterpret_cast<std::atomic<uint32_t>*>(base + kReaderSlotsOffset + i * kReaderSlotSize);
}
uint64_t& slot_start(std::byte* base, size_t i) noexcept {
  return *reinterpret_cast<uint64_t*>(base + kReaderSlotsOffset + i * kReaderSlotSize + 8);
}

}  // namespace

std::string ring_path(const std::string& dir, const std::string& name) {
  return dir + "/mdcast-" + name + ".ring";
}

std::string find_ring(const std::string& name, const std::string& dir) {
  if (!dir.empty()) return ring_path(dir, name);
  for (const char* d : {"/dev/hugepages", "/dev/shm"}) {
    const std::string p = ring_path(d, name);
    if (::access(p.c_str(), F_OK) == 0) return p;
  }
  return ring_path("/dev/shm", name);
}

RingWriter::RingWriter(const RingOptions& opts, uint32_t session, uint16_t channel,
                       const std::string& control_address) {
  if (opts.name.empty() || opts.name.find('/') != std::string::npos)
    fail("ring name '{}' must be non-empty and contain no '/'", opts.name);
  if (opts.slots < 16) fail("ring slots {} too few (at least 16)", opts.slots);
  if (opts.max_datagram < 256 || opts.max_datagram > 65535)
    fail("ring max_datagram {} outside [256, 65535]", opts.max_datagram);
  if (control_address.size() >= sizeof(RingHeaderView::control))
    fail("control address '{}' too long for the ring header", control_address);
  max_datagram_ = opts.max_datagram;
  slot_size_ = feed::RetransmitRing::slot_size_for(opts.max_datagram);
  slots_ = opts.slots;
  ring_bytes_ = feed::RetransmitRing::kControlSize + slots_ * slot_size_;
  lane_slot_size_ = (kLaneHeader + opts.max_datagram + 63) / 64 * 64;
  lane_offset_ = (kRingOffset + ring_bytes_ + 63) / 64 * 64;
  const size_t bytes = lane_offset_ + kLaneSlots * lane_slot_size_;

  std::string dir = opts.dir;
  if (dir.empty()) dir = opts.huge_pages && hugetlbfs_usable("/dev/hugepages") ? "/dev/hugepages" : "/dev/shm";
  huge_ = dir == "/dev/hugepages";
  path_ = ring_path(dir, opts.name);

  // A ring of this name whose writer still lives is someone else's feed.
  for (const char* d : {"/dev/hugepages", "/dev/shm"}) {
    const std::string p = ring_path(d, opts.name);
    UniqueFd old(::open(p.c_str(), O_RDONLY));
    if (old.get() < 0) continue;
    RingHeaderView h{};
    if (::pread(old.get(), &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) &&
        (h.magic == kRingMagic || h.magic == kRingMagicV1) && process_alive(h.writer_pid, h.writer_start) &&
        h.writer_pid != static_cast<uint64_t>(::getpid()))
      fail("shm ring {} is in use by a live publisher (pid {}); pick another --name", p, h.writer_pid);
    ::unlink(p.c_str());  // a dead writer's leftover
  }

  try {
    mem_ = create_mapping(path_, bytes, huge_);
  } catch (const Error&) {
    if (!huge_) throw;
    // Huge pages ran out between the check and the mapping: use /dev/shm.
    huge_ = false;
    path_ = ring_path("/dev/shm", opts.name);
    mem_ = create_mapping(path_, bytes, false);
  }
  feed::RetransmitRing::format(ring_memory(), slot_size_);
  copy_ring_ = feed::RetransmitRing(ring_memory(), max_datagram_);
  ring_lo_ = ring_memory().data();
  ring_hi_ = ring_lo_ + ring_bytes_;
  RingHeaderView h{};
  h.magic = 0;  // published last
  h.version = kRingLayoutVersion;
  h.header_size = kRingHeaderSize;
  h.slot_size = slot_size_;
  h.slots = slots_;
  h.max_datagram = max_datagram_;
  h.writer_pid = static_cast<uint64_t>(::getpid());
  h.writer_start = process_start_time(h.writer_pid);
  h.session = session;
  h.channel = channel;
  h.huge = huge_;
  std::memcpy(h.control, control_address.data(), control_address.size());
  h.ring_offset = kRingOffset;
  h.ring_bytes = ring_bytes_;
  h.lane_offset = lane_offset_;
  h.lane_slot_size = lane_slot_size_;
  h.lane_slots = kLaneSlots;
  write_header(mem_.data(), h);
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mem_.data())).store(kRingMagic, std::memory_order_release);
}

RingWriter::RingWriter(RingWriter&& o) noexcept
    : path_(std::move(o.path_)), mem_(std::move(o.mem_)), slot_size_(o.slot_size_), slots_(o.slots_),
      ring_bytes_(o.ring_bytes_), lane_offset_(o.lane_offset_), lane_slot_size_(o.lane_slot_size_),
      max_datagram_(o.max_datagram_), ring_lo_(o.ring_lo_), ring_hi_(o.ring_hi_), copy_ring_(o.copy_ring_),
      huge_(o.huge_), newest_(o.newest_), lane_pos_(o.lane_pos_), last_reap_(o.last_reap_) {
  o.path_.clear();
}

RingWriter::~RingWriter() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

void RingWriter::wake_readers() noexcept {
  // Shared (not PRIVATE) futex: the word lives in a file mapping shared by processes.
  futex(mem_.data() + kEventOffset, FUTEX_WAKE, INT32_MAX, nullptr);
}

void RingWriter::touch(uint64_t now_ns) noexcept {
  word(mem_.data() + kAliveOffset).store(now_ns, std::memory_order_relaxed);
  if (now_ns - last_reap_ < 100'000'000) return;
  last_reap_ = now_ns;
  // A reader killed while blocked leaves its sleep bit set, which would cost
  // a futex wake per datagram from then on: clear bits of dead readers.
  for (size_t i = 0; i < kReaderSlots; ++i) {
    const uint32_t pid = slot_pid(mem_.data(), i).load(std::memory_order_acquire);
    if (pid == 0 || process_alive(pid, slot_start(mem_.data(), i))) continue;
    word(mem_.data() + kSleepersOffset).fetch_and(~(uint64_t{1} << i), std::memory_order_relaxed);
    slot_pid(mem_.data(), i).store(0, std::memory_order_release);
  }
}

RingReader::RingReader(const std::string& path) : path_(path) {
  UniqueFd f(::open(path.c_str(), O_RDWR));
  const bool writable = f.valid();
  if (!writable) f = UniqueFd(::open(path.c_str(), O_RDONLY));
  if (f.get() < 0) {
    if (errno == ENOENT)
      fail("shm ring {} not found: is a publisher running with the same --name (and on this host)?", path);
    fail_errno("cannot open shm ring {}", path);
  }
  struct stat st;
  if (::fstat(f.get(), &st) != 0) fail_errno("cannot stat shm ring {}", path);
  ino_ = st.st_ino;
  if (static_cast<size_t>(st.st_size) < kRingHeaderSize)
    fail("{} is not an mdcast ring ({} bytes, shorter than its header)", path, st.st_size);
  RingHeaderView h{};
  if (::pread(f.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) fail_errno("cannot read ring header of {}", path);
  if ((h.magic == kRingMagicV1 || h.magic == kRingMagic) && h.version != kRingLayoutVersion)
    fail("shm ring {} has layout version {}, this mdcast reads version {}: run publisher and subscribers from "
         "the same mdcast release",
         path, h.version, kRingLayoutVersion);
  if (h.magic != kRingMagic) fail("{} is not an mdcast ring (or its publisher is still creating it)", path);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (h.header_size != kRingHeaderSize || h.slot_size < kSlotHeader + h.max_datagram || h.slots < 16 ||
      h.slot_size % 64 != 0 || h.ring_offset != kRingOffset ||
      h.ring_bytes != feed::RetransmitRing::kControlSize + h.slots * h.slot_size ||
      h.lane_offset < h.ring_offset + h.ring_bytes || h.lane_slot_size < kLaneHeader + h.max_datagram ||
      h.lane_slots == 0 || h.lane_offset + h.lane_slots * h.lane_slot_size > size)
    fail("shm ring {} has an inconsistent header (slot size {}, slots {}, file {} bytes)", path, h.slot_size,
         h.slots, st.st_size);
  mem_ = MappedMemory::shared(f.get(), static_cast<size_t>(st.st_size), false, "shm ring " + path);
  hdr_ = h;
  hdr_.control[sizeof hdr_.control - 1] = 0;
  ring_ = mem_.data() + h.ring_offset;
  lane_ = mem_.data() + h.lane_offset;
  slot_size_ = h.slot_size;
  slots_ = h.slots;
  lane_slot_size_ = h.lane_slot_size;
  lane_slots_ = h.lane_slots;
  max_datagram_ = h.max_datagram;
  if (writable) {
    // The header page, writable, for blocking waits (a reader slot + sleep bit).
    ctl_ = MappedMemory::shared(f.get(), kRingHeaderSize, true, "shm ring header " + path);
    const auto pid = static_cast<uint32_t>(::getpid());
    for (size_t i = 0; i < kReaderSlots; ++i) {
      uint32_t expect = 0;
      if (slot_pid(ctl_.data(), i).compare_exchange_strong(expect, pid)) {
        slot_start(ctl_.data(), i) = process_start_time(pid);
        slot_ = static_cast<int>(i);
        break;
      }
    }
  }
}

RingReader::RingReader(RingReader&& o) noexcept
    : path_(std::move(o.path_)), mem_(std::move(o.mem_)), ctl_(std::move(o.ctl_)), slot_(std::exchange(o.slot_, -1)),
      hdr_(o.hdr_), ino_(o.ino_), ring_(o.ring_), lane_(o.lane_), slot_size_(o.slot_size_), slots_(o.slots_),
      lane_slot_size_(o.lane_slot_size_), lane_slots_(o.lane_slots_), max_datagram_(o.max_datagram_),
      next_(o.next_), lane_next_(o.lane_next_), lapped_(o.lapped_) {}

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    release_slot();
    path_ = std::move(o.path_);
    mem_ = std::move(o.mem_);
    ctl_ = std::move(o.ctl_);
    slot_ = std::exchange(o.slot_, -1);
    hdr_ = o.hdr_;
    ino_ = o.ino_;
    ring_ = o.ring_;
    lane_ = o.lane_;
    slot_size_ = o.slot_size_;
    slots_ = o.slots_;
    lane_slot_size_ = o.lane_slot_size_;
    lane_slots_ = o.lane_slots_;
    max_datagram_ = o.max_datagram_;
    next_ = o.next_;
    lane_next_ = o.lane_next_;
    lapped_ = o.lapped_;
  }
  return *this;
}

RingReader::~RingReader() { release_slot(); }

void RingReader::release_slot() noexcept {
  if (slot_ >= 0 && ctl_) slot_pid(ctl_.data(), static_cast<size_t>(slot_)).store(0, std::memory_order_release);
  slot_ = -1;
}

RingReader::Read RingReader::read_lane(std::byte* buf, size_t& len) noexcept {
  const std::byte* s = lane_slot(lane_next_);
  const auto& marker = word(s);
  const uint64_t want = 2 * lane_next_ + 2;
  const uint64_t m1 = marker.load(std::memory_order_acquire);
  if (m1 < want) return Read::kEmpty;
  if (m1 == want) {
    // A heartbeat follows the data committed before it: hand it out once
    // that was read (it is in the ring: the next read finds it).
    if (word(s + 8).load(std::memory_order_acquire) >= next_) return Read::kEmpty;
    auto l = static_cast<size_t>(word(s + 16).load(std::memory_order_acquire));
    if (l > max_datagram_) l = 0;
    copy_out(buf, s + kLaneHeader, l);
    if (marker.load(std::memory_order_relaxed) == want) {
      len = l;
      ++lane_next_;
      return Read::kOk;
    }
  }
  // Lapped on the lane: heartbeats repeat what they say, so missing some
  // loses nothing; resume at the newest.
  const uint64_t w = word(mem_.data() + kLanePosOffset).load(std::memory_order_acquire);
  lane_next_ = w > lane_next_ + 1 ? w - 1 : lane_next_ + 1;
  return Read::kEmpty;
}

bool RingReader::wait(uint64_t timeout_ns) noexcept {
  if (slot_ < 0) return false;
  auto& sleepers = word(ctl_.data() + kSleepersOffset);
  auto& event = word(ctl_.data() + kEventOffset);
  const uint64_t bit = uint64_t{1} << slot_;
  sleepers.fetch_or(bit, std::memory_order_seq_cst);
  const uint64_t e = event.load(std::memory_order_seq_cst);
  // Sleep only if nothing is there for us: our data slot, the lane, or a lap.
  const bool lane = word(lane_slot(lane_next_)).load(std::memory_order_acquire) >= 2 * lane_next_ + 2;
  if (published() < next_ && !lane) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    futex(ctl_.data() + kEventOffset, FUTEX_WAIT, static_cast<uint32_t>(e), &ts);
  }
  sleepers.fetch_and(~bit, std::memory_order_relaxed);
  return true;
}

uint64_t RingReader::writer_position() const noexcept { return published() + 1; }

void RingReader::seek_to_writer() noexcept {
  next_ = writer_position();
  lane_next_ = word(mem_.data() + kLanePosOffset).load(std::memory_order_acquire);
}

uint64_t RingReader::alive_stamp() const noexcept { return word(mem_.data() + kAliveOffset).load(std::memory_order_relaxed); }

void RingReader::skip_ahead() noexcept {
  // Resume an eighth of the ring behind the writer: far enough that the
  // writer will not lap us again at once, near enough to lose little.
  const uint64_t w = published();
  const uint64_t keep = slots_ - slots_ / 8;
  const uint64_t safe = w > keep ? w - keep : 0;
  const uint64_t target = safe > next_ ? safe : next_ + 1;
  lapped_ += target - next_;
  next_ = target;
}

bool RingReader::current() const noexcept {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0 || st.st_ino != ino_) return false;
  return process_alive(hdr_.writer_pid, hdr_.writer_start);
}

}  // namespace mdcast::media::shm
