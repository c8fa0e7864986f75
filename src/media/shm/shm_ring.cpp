#include "mdcast/media/shm/shm_ring.hpp"

// The ring's setup: the writer creating it, a reader attaching to it (what
// they read and write at run time is in shm_ring_reader.cpp and the header).
#include "mdcast/media/shm/shm_ring.hpp"

#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/process.hpp"
#include "mdcast/core/resources.hpp"
#include "ring_file.hpp"

namespace mdcast::media::shm {
namespace {

constexpr size_t kHugePage = 2u << 20;

long futex(void* addr, int op, uint32_t val, const timespec* ts) noexcept {
  return ::syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

// Slot i of a reader region of `slots` slots at `region`.
std::atomic<uint32_t>& slot_pid(std::byte* region, size_t slots, size_t i) noexcept {
  return *reinterpret_cast<std::atomic<uint32_t>*>(region + reader_slots_offset(slots) + i * kReaderSlotSize);
}
std::atomic<uint64_t>& slot_start(std::byte* region, size_t slots, size_t i) noexcept {
  return word(region + reader_slots_offset(slots) + i * kReaderSlotSize + 8);
}

// What the reaper looks at per upkeep (every 100 ms, on the publishing
// thread): kill(pid, 0) for up to 32 occupied slots (~0.4 us each), sleepers
// first (a dead one costs a futex wake per datagram), then round robin (a
// dead reader's slot is lost to the next one); and for one slot the start
// time too (a /proc read, ~10 us), which tells a reused pid from the reader
// that had it. With all 1024 default slots taken a dead reader is found
// within 32 upkeeps (~3 s), a reused pid within 1024 (~100 s); an upkeep
// costs ~25 us at worst. A /proc read for every slot, as before, stalled
// the feed for ~10 us per reader every 100 ms.
constexpr size_t kReapKillsPerTouch = 32;
constexpr size_t kReapSleepersPerTouch = 4;
constexpr size_t kReapScanPerTouch = 1024;

uint64_t round_up(uint64_t v, uint64_t to) noexcept { return (v + to - 1) / to * to; }

// a * b + c, or nullopt when it does not fit in 64 bits.
std::optional<uint64_t> mul_add(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t m = 0, r = 0;
  if (__builtin_mul_overflow(a, b, &m) || __builtin_add_overflow(m, c, &r)) return std::nullopt;
  return r;
}

}  // namespace

RingWriter::RingWriter(const RingOptions& opts, uint64_t session, uint16_t channel,
                       const std::string& control_address) {
  if (opts.name.empty() || opts.name.find('/') != std::string::npos)
    fail("ring name '{}' must be non-empty and contain no '/'", opts.name);
  if (opts.slots < 16) fail("ring slots {} too few (at least 16)", opts.slots);
  if (opts.max_datagram < 256 || opts.max_datagram > 65535)
    fail("ring max_datagram {} outside [256, 65535]", opts.max_datagram);
  if (control_address.size() >= sizeof(RingHeaderView::control))
    fail("control address '{}' too long for the ring header ({} characters at most)", control_address,
         sizeof(RingHeaderView::control) - 1);
  if (opts.readers > kMaxReaderSlots)
    fail("shm.readers {} is more than the {} reader slots a ring can have (readers past the slots still read, "
         "backing off when idle instead of blocking)",
         opts.readers, kMaxReaderSlots);
  reader_slots_ = opts.readers;
  max_datagram_ = opts.max_datagram;
  slot_size_ = history::TermLog::record_size_for(opts.max_datagram);
  slots_ = opts.slots;
  lane_slot_size_ = (kLaneHeader + opts.max_datagram + 63) / 64 * 64;
  // Before anything is allocated: a ring larger than the cap (64 GiB from a
  // mistyped --shm-slots) is refused with the numbers, not populated.
  // Records for `slots` datagrams of the largest size, packed; the index and
  // control block on top (history::TermLog::memory_for).
  // 0 stands for "past 64 bits" (no size here is 0: slots >= 16); plain
  // integers rather than optionals, which GCC's -O1 flow analysis misreads.
  const uint64_t data = mul_add(slots_, slot_size_, 0).value_or(0);
  const uint64_t ring = data && data < (uint64_t{1} << 56)
                            ? history::TermLog::memory_for(static_cast<size_t>(data))
                            : 0;
  const uint64_t lane_end =
      ring ? mul_add(kLaneSlots, lane_slot_size_, (kRingOffset + ring + 63) / 64 * 64).value_or(0) : 0;
  // The reader region starts on a page of its own, so a reader maps it
  // writable apart from the ring (hugetlbfs maps whole huge pages only).
  const uint64_t reader_bytes = reader_region_bytes(reader_slots_);
  const uint64_t total = lane_end && lane_end < (uint64_t{1} << 62) ? round_up(lane_end, 4096) + reader_bytes : 0;
  const std::string file = ring_path(opts.dir.empty() ? "/dev/shm" : opts.dir, opts.name);
  if (!total || total > opts.max_bytes)
    fail("shm ring {} would need {} ({} records of {} bytes and their index, {} reader slots), more than "
         "shm.max_bytes ({}): lower shm.slots (--shm-slots), shm.max_datagram or shm.readers, or raise "
         "shm.max_bytes if this host has the memory",
         file, total ? format_bytes(total) : std::string("more than 16 EiB"), slots_, slot_size_, reader_slots_,
         format_bytes(opts.max_bytes));
  ring_bytes_ = static_cast<size_t>(ring);
  lane_offset_ = (kRingOffset + ring_bytes_ + 63) / 64 * 64;
  // On hugetlbfs the region starts on a huge page (at most one more page).
  const uint64_t huge_reader_offset = round_up(lane_end, kHugePage);
  const size_t huge_bytes = static_cast<size_t>(round_up(huge_reader_offset + reader_bytes, kHugePage));

  std::string dir = opts.dir;
  if (dir.empty()) {
    const auto hp = opts.huge_pages ? filesystem_space("/dev/hugepages") : std::nullopt;
    dir = hp && hp->huge_pages && hp->free_bytes >= huge_bytes ? "/dev/hugepages" : "/dev/shm";
  }
  huge_ = dir == "/dev/hugepages";
  // A hugetlbfs file maps in whole huge pages only, wherever it is mounted.
  bool huge_fs = huge_;
  if (!huge_fs)
    if (const auto fs = filesystem_space(dir)) huge_fs = fs->huge_pages;
  const auto layout = [&] {
    reader_offset_ = static_cast<size_t>(huge_fs ? huge_reader_offset : round_up(lane_end, 4096));
    return huge_fs ? huge_bytes : static_cast<size_t>(reader_offset_ + reader_bytes);
  };
  size_t bytes = layout();
  path_ = ring_path(dir, opts.name);
  const std::optional<gid_t> group =
      opts.group.empty() ? std::nullopt : std::optional<gid_t>(detail::group_id(opts.group));

  // What is there already under this name: another user's file or a live
  // writer's ring refuses; our dead writer's leftover goes.
  const uid_t me = ::geteuid();
  // Both standard places are looked at, since readers look in both: a live
  // ring of ours in the other one is a feed of this name already running.
  for (const char* d : {"/dev/hugepages", "/dev/shm"})
    if (d != dir) detail::clear_leftover(ring_path(d, opts.name), me, false);
  detail::clear_leftover(path_, me, true);

  try {
    mem_ = detail::create_ring_file(path_, dir, bytes, group);
  } catch (const Error&) {
    if (!huge_ || !opts.dir.empty()) throw;
    // Huge pages ran out between the check and the mapping: use /dev/shm.
    huge_ = huge_fs = false;
    bytes = layout();
    path_ = ring_path("/dev/shm", opts.name);
    mem_ = detail::create_ring_file(path_, "/dev/shm", bytes, group);
  }
  data_bytes_ = static_cast<size_t>(data);
  history::TermLog::format(ring_memory(), data_bytes_, max_datagram_);
  copy_log_ = history::TermLog(ring_memory(), max_datagram_);
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
  h.file_bytes = mem_.size();
  h.data_offset = history::TermLog::data_offset(data_bytes_);
  h.data_bytes = data_bytes_;
  h.index_entries = history::TermLog::index_entries(data_bytes_);
  h.reader_offset = reader_offset_;
  h.reader_bytes = reader_bytes;
  h.reader_slots = reader_slots_;
  std::memcpy(mem_.data(), &h, sizeof h);
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(mem_.data())).store(kRingMagic, std::memory_order_release);
}

RingWriter::RingWriter(RingWriter&& o) noexcept
    : path_(std::move(o.path_)), mem_(std::move(o.mem_)), slot_size_(o.slot_size_), slots_(o.slots_),
      ring_bytes_(o.ring_bytes_), data_bytes_(o.data_bytes_), lane_offset_(o.lane_offset_), lane_slot_size_(o.lane_slot_size_),
      max_datagram_(o.max_datagram_), ring_lo_(o.ring_lo_), ring_hi_(o.ring_hi_), copy_log_(o.copy_log_),
      huge_(o.huge_), reader_offset_(o.reader_offset_), reader_slots_(o.reader_slots_), reap_next_(o.reap_next_),
      reap_word_(o.reap_word_), reap_full_(o.reap_full_),
      newest_(o.newest_), lane_pos_(o.lane_pos_), last_reap_(o.last_reap_) {
  o.path_.clear();
}

RingWriter::~RingWriter() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

void RingWriter::wake_sleepers() noexcept {
  const size_t words = sleeper_words(reader_slots_);
  const size_t per = sleeper_words_per_group(reader_slots_);
  uint64_t groups = word(mem_.data() + kSleepersOffset).load(std::memory_order_seq_cst);
  while (groups != 0) {
    const size_t g = static_cast<size_t>(__builtin_ctzll(groups));
    groups &= groups - 1;
    for (size_t w = g * per; w < std::min(words, (g + 1) * per); ++w)
      if (word(sleeper_word(w)).load(std::memory_order_seq_cst) != 0) {
        // Shared (not PRIVATE) futex: the word lives in a file mapping shared by processes.
        futex(mem_.data() + kEventOffset, FUTEX_WAKE, INT32_MAX, nullptr);
        return;
      }
  }
}

// Summary bits whose group has nobody asleep any more. A reader sets its
// sleeper bit, then (if not already set) its group's summary bit, both
// sequentially consistent, before it loads the event word; this clears a
// summary bit and then looks at the group's words again, and puts the bit
// back if one is set: a reader whose summary bit was set before the clear
// had set its own bit before that too, so the second look sees it. Only
// this thread announces, and it does not while it is here, so no announce
// finds the summary cleared under a sleeper. (Readers leave summary bits to
// the writer for that reason: a reader clearing one could race another
// reader of its group going to sleep, and the writer would miss it.)
void RingWriter::clear_idle_summary() noexcept {
  auto& summary = word(mem_.data() + kSleepersOffset);
  const size_t words = sleeper_words(reader_slots_);
  const size_t per = sleeper_words_per_group(reader_slots_);
  const auto asleep = [&](size_t g) {
    for (size_t w = g * per; w < std::min(words, (g + 1) * per); ++w)
      if (word(sleeper_word(w)).load(std::memory_order_seq_cst) != 0) return true;
    return false;
  };
  uint64_t groups = summary.load(std::memory_order_seq_cst);
  while (groups != 0) {
    const size_t g = static_cast<size_t>(__builtin_ctzll(groups));
    groups &= groups - 1;
    if (asleep(g)) continue;
    const uint64_t bit = uint64_t{1} << g;
    summary.fetch_and(~bit, std::memory_order_seq_cst);
    if (asleep(g)) summary.fetch_or(bit, std::memory_order_seq_cst);
  }
}

// A reader killed while blocked leaves its sleeper bit set, which would cost
// a futex wake per datagram from then on, and a dead reader's slot is lost
// to the next one: both are given back here, a few slots per upkeep.
bool RingWriter::reap_if_dead(size_t i, bool full) noexcept {
  std::byte* region = mem_.data() + reader_offset_;
  auto& pid_word = slot_pid(region, reader_slots_, i);
  const uint32_t pid = pid_word.load(std::memory_order_acquire);
  if (pid == 0) return false;
  // A reader still writing its start time is judged by its pid alone.
  const uint32_t p = pid & ~kReaderSlotSetup;
  bool dead = ::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH;
  if (!dead && full && (pid & kReaderSlotSetup) == 0)
    dead = !process_alive(p, slot_start(region, reader_slots_, i).load(std::memory_order_relaxed));
  if (dead) {
    // Its bit first: once the slot is free, a new reader may take it and sleep.
    word(sleeper_word(i / 64)).fetch_and(~(uint64_t{1} << (i % 64)), std::memory_order_seq_cst);
    uint32_t expect = pid;
    pid_word.compare_exchange_strong(expect, 0, std::memory_order_acq_rel);
  }
  return true;
}

void RingWriter::reap_dead_readers() noexcept {
  if (reader_slots_ == 0) return;
  size_t kills = 0;
  // Sleepers first, from where the last upkeep stopped.
  const size_t words = sleeper_words(reader_slots_);
  for (size_t n = 0; n < words && kills < kReapSleepersPerTouch; ++n) {
    const size_t w = reap_word_;
    reap_word_ = reap_word_ + 1 == words ? 0 : reap_word_ + 1;
    uint64_t bits = word(sleeper_word(w)).load(std::memory_order_relaxed);
    for (; bits != 0 && kills < kReapSleepersPerTouch; bits &= bits - 1) {
      const size_t i = w * 64 + static_cast<size_t>(__builtin_ctzll(bits));
      if (i < reader_slots_) kills += reap_if_dead(i, false);
    }
  }
  const size_t scan = std::min(reader_slots_, kReapScanPerTouch);
  for (size_t n = 0; n < scan && kills < kReapKillsPerTouch; ++n) {
    const size_t i = reap_next_;
    reap_next_ = reap_next_ + 1 == reader_slots_ ? 0 : reap_next_ + 1;
    kills += reap_if_dead(i, false);
  }
  // One slot in full: a pid that a new process reuses is caught here.
  for (size_t n = 0; n < scan; ++n) {
    const size_t i = reap_full_;
    reap_full_ = reap_full_ + 1 == reader_slots_ ? 0 : reap_full_ + 1;
    if (reap_if_dead(i, true)) break;
  }
}

void RingWriter::touch(uint64_t now_ns) noexcept {
  word(mem_.data() + kAliveOffset).store(now_ns, std::memory_order_relaxed);
  if (now_ns - last_reap_ < 100'000'000) return;
  last_reap_ = now_ns;
  reap_dead_readers();
  clear_idle_summary();
}

RingReader::RingReader(const std::string& path, std::optional<uid_t> owner) : path_(path) {
  // The file first (owner, mode: core of the trust), then its size, then
  // what it says: nothing in the header is believed before the file is.
  detail::CheckedFile f = detail::open_checked(path, owner ? *owner : ::geteuid());
  const struct stat& st = f.st;
  const auto size = static_cast<uint64_t>(st.st_size);
  owner_ = st.st_uid;
  c_.ino = st.st_ino;
  if (size < kRingHeaderSize)
    fail("{} is not an mdcast ring ({} bytes, shorter than its header)", path, st.st_size);
  RingHeaderView h{};
  if (::pread(f.fd.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h))
    fail_errno("cannot read ring header of {}", path);
  if (is_ring_magic(h.magic) && (h.magic != kRingMagic || h.version != kRingLayoutVersion))
    fail("shm ring {} has layout version {}, this mdcast reads version {}: run publisher and subscribers from "
         "the same mdcast release",
         path, h.version != kRingLayoutVersion ? h.version : static_cast<uint32_t>((h.magic >> 56) - '0'),
         kRingLayoutVersion);
  if (h.magic != kRingMagic) fail("{} is not an mdcast ring (or its publisher is still creating it)", path);
  // Geometry, without overflow: each product is bounded before it is formed.
  const bool sane = h.header_size == kRingHeaderSize && h.max_datagram >= 1 && h.max_datagram <= 65535 &&
                    h.slot_size == history::TermLog::record_size_for(h.max_datagram) && h.slot_size <= (1u << 20) &&
                    h.slots >= 4 && h.slots <= (uint64_t{1} << 40) && h.data_bytes == h.slots * h.slot_size &&
                    h.index_entries == history::TermLog::index_entries(h.data_bytes) &&
                    h.data_offset == history::TermLog::data_offset(h.data_bytes) &&
                    h.ring_offset == kRingOffset && h.ring_bytes == history::TermLog::memory_for(h.data_bytes) &&
                    h.lane_offset >= h.ring_offset + h.ring_bytes && h.lane_offset <= (uint64_t{1} << 62) &&
                    h.lane_slot_size >= kLaneHeader + h.max_datagram && h.lane_slot_size <= (1u << 20) &&
                    h.lane_slots >= 1 && h.lane_slots <= 4096 &&
                    h.file_bytes >= h.lane_offset + h.lane_slots * h.lane_slot_size &&
                    h.reader_slots <= kMaxReaderSlots && h.reader_bytes == reader_region_bytes(h.reader_slots) &&
                    h.reader_offset % 4096 == 0 && h.reader_offset >= h.lane_offset + h.lane_slots * h.lane_slot_size &&
                    h.reader_offset <= (uint64_t{1} << 62) && h.file_bytes >= h.reader_offset + h.reader_bytes;
  if (!sane)
    fail("shm ring {} has an inconsistent header (slot size {}, slots {}, file {} bytes, header says {})", path,
         h.slot_size, h.slots, st.st_size, h.file_bytes);
  // Mapping past the end of the file would kill this process with SIGBUS on
  // the first read there.
  if (size < h.file_bytes)
    fail("shm ring {} is {} bytes, its header says {} ({}): truncated, refusing to map it; restart its publisher",
         path, size, h.file_bytes, format_bytes(h.file_bytes));
  mem_ = MappedMemory::shared(f.fd.get(), static_cast<size_t>(h.file_bytes), false, "shm ring " + path);
  hdr_ = h;
  hdr_.control[sizeof hdr_.control - 1] = 0;
  // The geometry checked above, from the private copy of the header.
  log_ = history::TermReader(mem_.data() + h.ring_offset, static_cast<size_t>(h.data_bytes),
                             static_cast<size_t>(h.max_datagram));
  c_.lane = mem_.data() + h.lane_offset;
  c_.lane_slot_size = h.lane_slot_size;
  c_.lane_slots = h.lane_slots;
  // Where the writer is now, as far as the records prove it: the bound on
  // how far it can be later.
  if (!proven_published(published(), monotonic_ns())) {
    c_.base = log_.newest_indexed();
    c_.base_ns = monotonic_ns();
  }
  if (f.writable && h.reader_slots > 0) {
    // The header page and the reader region, writable, for blocking waits
    // (a reader slot, its sleeper bit, the summary and the event word).
    ctl_ = MappedMemory::shared(f.fd.get(), kRingHeaderSize, true, "shm ring header " + path);
    try {
      rdr_ = MappedMemory::shared(f.fd.get(), static_cast<size_t>(h.reader_bytes), true, "shm ring reader slots " + path,
                                  h.reader_offset);
    } catch (const Error&) {
      // A region not on a page this file system maps alone: this reader
      // backs off instead of blocking (the ring reads the same).
      ctl_ = MappedMemory();
      return;
    }
    const auto slots = static_cast<size_t>(h.reader_slots);
    const auto pid = static_cast<uint32_t>(::getpid());
    const uint64_t start = process_start_time(pid);
    for (size_t i = 0; i < slots; ++i) {
      uint32_t expect = 0;
      auto& pw = slot_pid(rdr_.data(), slots, i);
      if (pw.load(std::memory_order_relaxed) != 0 ||
          !pw.compare_exchange_strong(expect, pid | kReaderSlotSetup, std::memory_order_acq_rel))
        continue;
      // The start time before the plain pid: the reaper judges a slot by
      // both only once they belong together.
      slot_start(rdr_.data(), slots, i).store(start, std::memory_order_relaxed);
      pw.store(pid, std::memory_order_release);
      slot_ = static_cast<int>(i);
      break;
    }
  }
}

RingReader::RingReader(RingReader&& o) noexcept
    : path_(std::move(o.path_)), mem_(std::move(o.mem_)), ctl_(std::move(o.ctl_)), rdr_(std::move(o.rdr_)),
      slot_(std::exchange(o.slot_, -1)),
      hdr_(o.hdr_), owner_(o.owner_), log_(o.log_), c_(o.c_), lane_next_(o.lane_next_) {}

RingReader& RingReader::operator=(RingReader&& o) noexcept {
  if (this != &o) {
    release_slot();
    path_ = std::move(o.path_);
    mem_ = std::move(o.mem_);
    ctl_ = std::move(o.ctl_);
    rdr_ = std::move(o.rdr_);
    slot_ = std::exchange(o.slot_, -1);
    hdr_ = o.hdr_;
    owner_ = o.owner_;
    log_ = o.log_;
    c_ = o.c_;
    lane_next_ = o.lane_next_;
  }
  return *this;
}

RingReader::~RingReader() { release_slot(); }

void RingReader::release_slot() noexcept {
  if (slot_ >= 0 && rdr_)
    slot_pid(rdr_.data(), static_cast<size_t>(hdr_.reader_slots), static_cast<size_t>(slot_))
        .store(0, std::memory_order_release);
  slot_ = -1;
}

bool RingReader::wait(uint64_t timeout_ns) noexcept {
  if (slot_ < 0) return false;
  const auto slot = static_cast<size_t>(slot_);
  auto& mine = word(rdr_.data() + 8 * (slot / 64));
  auto& summary = word(ctl_.data() + kSleepersOffset);
  auto& event = word(ctl_.data() + kEventOffset);
  const uint64_t bit = uint64_t{1} << (slot % 64);
  const uint64_t group = uint64_t{1} << (slot / 64 / sleeper_words_per_group(static_cast<size_t>(hdr_.reader_slots)));
  // Our bit, then our group's summary bit (set already: nothing to write;
  // the writer, clearing it meanwhile, looks at our word after it and puts
  // it back), then the event word: the writer announces (event, then the
  // summary and the words), so one of us sees the other.
  mine.fetch_or(bit, std::memory_order_seq_cst);
  if ((summary.load(std::memory_order_seq_cst) & group) == 0) summary.fetch_or(group, std::memory_order_seq_cst);
  const uint64_t e = event.load(std::memory_order_seq_cst);
  // Sleep only if nothing is there for us: our record (committed, or a lap
  // not yet judged corrupt), or the lane. The record itself, not the
  // published word: that is stored after the record, and a forged one must
  // not keep a reader spinning.
  const auto m = log_.mark();
  const bool data = m == history::TermReader::Mark::kCommitted ||
                    (m == history::TermReader::Mark::kOther && c_.implausible_at != log_.seq());
  const bool lane = word(lane_slot(lane_next_)).load(std::memory_order_acquire) >= 2 * lane_next_ + 2;
  if (!data && !lane) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    futex(ctl_.data() + kEventOffset, FUTEX_WAIT, static_cast<uint32_t>(e), &ts);
  }
  mine.fetch_and(~bit, std::memory_order_relaxed);
  return true;
}

uint64_t RingReader::alive_stamp() const noexcept { return word(mem_.data() + kAliveOffset).load(std::memory_order_relaxed); }

bool RingReader::current() const noexcept {
  struct stat st;
  if (::stat(path_.c_str(), &st) != 0 || st.st_ino != c_.ino) return false;
  return process_alive(hdr_.writer_pid, hdr_.writer_start);
}

}  // namespace mdcast::media::shm
