// The shared-memory medium's ring: one writer, many readers, one host.
//
// The publisher's retransmit history, a term log (history/term_log.hpp),
// lives in a shared file (hugetlbfs when the host has huge pages reserved,
// /dev/shm otherwise): the engine builds each datagram once, in its record,
// and every subscriber process reads it from there with its own cursor
// (history/term_reader.hpp), kept in its own memory. Publishing costs the
// same for one reader or a hundred, and a reader that dies leaves nothing
// behind that could block anyone.
//
// File layout (version 5, little-endian, 64-byte aligned):
//   [0, 4096)         header: magic, layout version, geometry, writer pid and
//                     start time, session (64-bit), channel, control socket
//                     name, the file's size, where the reader slots are; on
//                     their own cache lines the event word (futex), a
//                     liveness stamp, the sleeper summary
//   [4032, +ring)     the term log (history/term_log.hpp):
//                     control block (the horizon word first) in the header
//                     page's last line, the sequence index from 4096, then,
//                     page-aligned, records {u64 seq, u32 length, u32 0,
//                     datagram} rounded up to 64 bytes, back to back
//   [.., +lane)       the lane: a small ring of unsequenced datagrams
//                     (heartbeats), slots {u64 marker, u64 data_newest,
//                     u64 length, u64 0, datagram} indexed by position
//   [.., +readers)    page-aligned (huge-page aligned on hugetlbfs, so it can
//                     be mapped on its own): the sleeper words (bit i: reader
//                     slot i is blocked in futex_wait), then the reader slots
//                     {u32 pid, u32 0, u64 start time}, as many as the
//                     publisher was told (RingOptions::readers, 16 bytes and
//                     one bit each). Version 4 had 64 slots in the header.
//
// A reader walks the records in order (a history::TermReader cursor: its
// byte position beside its next sequence). At record position P it waits
// for the sequence word to say s (0 or s being written: not yet), copies the
// datagram, and keeps it if the horizon word is still at most P +
// data_bytes: nothing of the record was reclaimed while it copied.
// (Version 3 gave every datagram a fixed 4 KiB slot: a page per 100-byte
// datagram for the writer and every reader.)
// Anything else at P means the writer lapped the reader: it jumps ahead to
// a record the index and that record's header agree on, and the feed engine
// recovers the gap through the control plane like any loss. A torn record is
// never handed out. The reader learns of a datagram from the line that
// carries its start (one cache-line transfer); the writer claims, encodes,
// seals and commits a datagram in one short burst, so a reader waiting on
// that line takes it from the writer about once. The published word (the
// newest sequence announced) serves sleepers and a reader that positions
// itself. A heartbeat is handed out only after every datagram it follows
// (its data_newest) was read, so it never announces a sequence the reader
// is about to get anyway.
//
// Trust. Anyone can create files in /dev/shm, so a ring is only believed
// when its file says the publisher made it: created exclusively, owned by
// the publisher's user, writable by nobody else (0600, or 0640 for a group
// of readers), as large as its header says (checked before mapping: a
// shorter file would kill readers with SIGBUS). Even then no single word
// moves a reader far: a position (the published word, the horizon, an index
// entry, the lane position) is followed only as far as the records
// themselves prove it and no faster than any writer could have written;
// anything else is counted (implausible()) and never followed, and the
// engine recovers what was lost through the control plane.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <optional>
#include <string>

#include <sys/types.h>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/fence.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/history/term_log.hpp"
#include "mdcast/history/term_reader.hpp"
#include "mdcast/media/left_rings.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::media::shm {

// Payload copies between a slot's seqlock markers (the data slot's seq word,
// a lane slot's marker).
//
// Why a plain memcpy is correct here. This is a seqlock: a reader copies
// while the marker says "s" before and after, and throws the copy away
// otherwise, so a copy torn by a writer that reclaimed the slot meanwhile is
// never used - the bytes are only ever moved into the reader's buffer, never
// interpreted, before the re-check passes. What the hardware must guarantee
// is order, and the fences give it: the writer stores the claim marker,
// then (release fence) the payload, then the final marker with release; the
// reader loads the marker with acquire, copies, then (acquire fence) loads
// the marker again. A reader that sees the final marker therefore sees the
// whole payload, and one that copied any byte of a newer payload sees the
// claim marker (or a later one) on its re-check. On x86-64 both fences are
// compiler barriers only (TSO), so the copy is a memcpy at full width
// instead of one 8-byte access per word.
//
// The racing memcpy is formally a data race in the C++ memory model (the
// language's answer, a "byte-wise atomic memcpy", is proposal P1478, not yet
// in the standard). It is contained the way Linux's seqcount contains it
// (read_seqcount_begin/_retry around plain loads, smp_rmb/smp_wmb between;
// Boehm, "Can seqlocks get along with programming language memory models?",
// gives the C++ form used here): the racing accesses are confined to a
// memcpy into a private buffer whose result is discarded unless the re-check
// proves no write overlapped it, and the fences keep the compiler and the
// CPU from moving them across the marker accesses. (glibc's memcpy switches
// to non-temporal stores, which fences do not order the same way, only for
// copies of megabytes; a datagram is at most 64 KiB.)
//
// ThreadSanitizer cannot see through that argument (it would report every
// lap, and GCC refuses standalone fences under it), so its builds keep a
// copy of 8-byte atomic accesses - release stores, acquire loads, which
// order themselves against the markers - and check the protocol on it.
#if defined(__SANITIZE_THREAD__)
#define MDCAST_SHM_ATOMIC_COPY 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MDCAST_SHM_ATOMIC_COPY 1
#endif
#endif

inline std::atomic<uint64_t>& word(std::byte* p) noexcept { return *reinterpret_cast<std::atomic<uint64_t>*>(p); }
inline const std::atomic<uint64_t>& word(const std::byte* p) noexcept {
  return *reinterpret_cast<const std::atomic<uint64_t>*>(p);
}
// After the claim marker (stored before this), before the final one (stored
// with release after this).
inline void copy_in(std::byte* slot, const std::byte* src, size_t n) noexcept {
#if defined(MDCAST_SHM_ATOMIC_COPY)
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, src + i, 8);
    word(slot + i).store(v, std::memory_order_release);
  }
  if (i < n) {
    uint64_t v = 0;
    std::memcpy(&v, src + i, n - i);
    word(slot + i).store(v, std::memory_order_release);
  }
#else
  // The claim marker before any payload byte.
  release_fence();
  std::memcpy(slot, src, n);
#endif
}
// After the marker was loaded with acquire, before it is loaded again to
// re-check.
inline void copy_out(std::byte* dst, const std::byte* slot, size_t n) noexcept {
#if defined(MDCAST_SHM_ATOMIC_COPY)
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = word(slot + i).load(std::memory_order_acquire);
    std::memcpy(dst + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = word(slot + i).load(std::memory_order_acquire);
    std::memcpy(dst + i, &v, n - i);
  }
#else
  std::memcpy(dst, slot, n);
  // Every payload byte before the re-check of the marker.
  acquire_fence();
#endif
}

constexpr uint64_t kRingMagic = 0x35524853'43444d4dull;  // "MMDCSHR5"
// Magics of every layout: "MMDCSHR" and the version digit. Older ones are
// refused with a message naming both versions.
constexpr uint64_t kRingMagicStem = 0x00524853'43444d4dull;
constexpr uint64_t kRingMagicStemMask = 0x00ffffff'ffffffffull;
[[nodiscard]] constexpr bool is_ring_magic(uint64_t m) noexcept {
  const uint64_t digit = m >> 56;
  return (m & kRingMagicStemMask) == kRingMagicStem && digit >= '1' && digit <= '9';
}
constexpr uint32_t kRingLayoutVersion = 5;
constexpr size_t kRingHeaderSize = 4096;
// The term log's 64-byte control block is the header page's last line,
// so its index and its records start on page boundaries, and the horizon
// word has a line of its own.
constexpr size_t kRingOffset = kRingHeaderSize - history::TermLog::kControlSize;
constexpr size_t kSlotHeader = history::TermLog::kRecordHeader;  // u64 seq, u32 length, u32 0
constexpr size_t kLaneHeader = 32;  // u64 marker, u64 data_newest, u64 length, u64 0
constexpr size_t kLaneSlots = 64;   // heartbeats a reader may fall behind by without missing one
// Header offsets of the words the writer and readers share at run time, each
// on its own cache line.
constexpr size_t kPublishedOffset = 1024;  // u64 newest data sequence published: what readers poll
constexpr size_t kEventOffset = 1088;      // u64 datagrams + heartbeats published; its low half is the futex word
constexpr size_t kAliveOffset = 1152;      // u64 writer liveness stamp
// u64 sleeper summary: bit g, some reader of group g may be blocked (a group
// is sleeper_words_per_group() sleeper words). Readers set bits; only the
// writer clears them (touch()), so the writer, which alone announces, never
// misses a sleeper: see RingWriter::touch.
constexpr size_t kSleepersOffset = 1216;
constexpr size_t kLanePosOffset = 1280;    // u64 next lane position

// Readers that can block (each needs a slot); more read all the same but
// back off instead of sleeping. The default serves 1024 subscribers for
// 16 KiB + 128 bytes. The most: the writer's wake check looks at the words
// of a group whose summary bit is set, at most 16 of them (64 groups of
// 1024 slots), which keeps an announce with sleepers around at a few loads.
constexpr size_t kDefaultReaderSlots = 1024;
constexpr size_t kMaxReaderSlots = 65536;
constexpr size_t kReaderSlotSize = 16;     // u32 pid, u32 0, u64 process start time
// While a reader writes its start time the pid word carries this bit: the
// writer's reaper judges such a slot by its pid alone (see RingWriter::touch).
constexpr uint32_t kReaderSlotSetup = 0x8000'0000u;
constexpr size_t kSleeperGroups = 64;      // bits of the summary word
// Sleeper words (64 slots each) for n slots, and how many one summary bit covers.
[[nodiscard]] constexpr size_t sleeper_words(size_t slots) noexcept { return (slots + 63) / 64; }
[[nodiscard]] constexpr size_t sleeper_words_per_group(size_t slots) noexcept {
  return (sleeper_words(slots) + kSleeperGroups - 1) / kSleeperGroups;
}
// The reader region: sleeper words, padded to a cache line, then the slots.
[[nodiscard]] constexpr size_t reader_slots_offset(size_t slots) noexcept {
  return (sleeper_words(slots) * 8 + 63) / 64 * 64;
}
[[nodiscard]] constexpr size_t reader_region_bytes(size_t slots) noexcept {
  return (reader_slots_offset(slots) + slots * kReaderSlotSize + 63) / 64 * 64;
}
static_assert(sleeper_words_per_group(kMaxReaderSlots) == 16);

// A writer that is faster than one datagram a nanosecond does not exist (a
// record is at least 64 bytes): a position that claims more is corruption.
constexpr uint64_t kMaxPlausibleDatagramsPerSec = 1'000'000'000;

struct RingOptions {
  std::string name = "mdcast";      // ring file mdcast-<name>.ring
  std::string dir;                  // default: /dev/hugepages if usable, else /dev/shm
  // The ring holds `slots` datagrams of max_datagram (64 MiB of records by
  // default), more of smaller ones: records are packed. Plus an index of
  // 8 bytes per 64 of records.
  size_t slots = 16384;
  size_t max_datagram = 4032;       // largest record = 16 + this, rounded up to 64
  bool huge_pages = true;           // try hugetlbfs first
  // "" : the ring is this user's alone (mode 0600). A group (name or
  // number): the file is given to it, mode 0640, and readers in that group
  // may read it (they cannot block: the header is not theirs to write).
  std::string group;
  // Rings larger than this are refused before anything is allocated.
  uint64_t max_bytes = uint64_t{4} << 30;
  // Reader slots: readers that can block in futex_wait (--idle block), up to
  // kMaxReaderSlots; the others read too, backing off when idle.
  size_t readers = kDefaultReaderSlots;
};

// Where a ring named `name` lives in `dir`.
[[nodiscard]] std::string ring_path(const std::string& dir, const std::string& name);
// How rings are named and who left one, for `mdcast stat --clean`.
[[nodiscard]] LeftRings left_rings();
// Where a reader finds it: `dir` if given, else the first of /dev/hugepages,
// /dev/shm that holds one owned by `owner` (default: this process's
// effective uid), else the first that holds any (the reader then refuses it
// with the reason), else the /dev/shm path.
[[nodiscard]] std::string find_ring(const std::string& name, const std::string& dir = {},
                                    std::optional<uid_t> owner = std::nullopt);
// The uid whose rings a reader trusts: `user` as a user name or a number,
// or this process's effective uid when empty. Throws Error for an unknown user.
[[nodiscard]] uid_t ring_owner_uid(const std::string& user);

struct RingHeaderView {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;
  uint64_t slot_size;     // the largest record
  uint64_t slots;         // records of slot_size the data holds
  uint64_t max_datagram;
  uint64_t writer_pid;
  uint64_t writer_start;  // /proc/<pid>/stat start time, guards against pid reuse
  uint64_t session;
  uint16_t channel;
  uint16_t huge;
  uint32_t reserved0;
  char control[128];      // control socket address (abstract Unix name with 64 random bits)
  uint64_t ring_offset;   // the retransmit ring (control block first)
  uint64_t ring_bytes;
  uint64_t lane_offset;
  uint64_t lane_slot_size;
  uint64_t lane_slots;
  uint64_t file_bytes;    // the file as created: a reader refuses a shorter one
  uint64_t data_offset;   // records, from ring_offset
  uint64_t data_bytes;
  uint64_t index_entries; // index, from ring_offset + 64
  uint64_t reader_offset; // the reader region (sleeper words, then slots), page-aligned
  uint64_t reader_bytes;
  uint64_t reader_slots;
};
static_assert(sizeof(RingHeaderView) <= kPublishedOffset, "the header fields end before the shared words");

class RingWriter {
 public:
  // Creates the ring exclusively (mode 0600, or 0640 for opts.group), with
  // every byte of it reserved before it is mapped. Replaces a leftover of a
  // dead writer of this user. Throws Error naming the path when: a live
  // process owns a ring of that name; a file of that name belongs to another
  // user (never used or removed); the ring is larger than opts.max_bytes, its
  // file system's free space or, on tmpfs, the host's available memory (with
  // the numbers); or the file cannot be created, reserved and mapped.
  RingWriter(const RingOptions& opts, uint64_t session, uint16_t channel, const std::string& control_address);
  RingWriter(RingWriter&&) noexcept;
  RingWriter& operator=(RingWriter&&) = delete;
  RingWriter(const RingWriter&) = delete;
  ~RingWriter();  // unlinks the file: readers notice the writer is gone

  // The term log's memory, formatted for this ring's records: the
  // publisher's engine builds its datagrams here (history::RetransmitLog
  // adopts it as a TermLog), and publish() announces each one.
  [[nodiscard]] std::span<std::byte> ring_memory() const noexcept { return {mem_.data() + kRingOffset, ring_bytes_}; }
  [[nodiscard]] bool holds(std::span<const std::byte> d) const noexcept {
    return d.data() >= ring_lo_ && d.data() + d.size() <= ring_hi_;
  }
  // Datagram `seq`, committed in place in ring_memory(), is out: readers
  // may read it; sleepers are woken.
  void publish(uint64_t seq) noexcept {
    if (seq > newest_) newest_ = seq;
    word(mem_.data() + kPublishedOffset).store(newest_, std::memory_order_release);
    announce();
  }
  // Copies datagram `seq` (newest + 1; len <= max_datagram) into its slot:
  // for an engine whose retransmit ring lives elsewhere, and tests.
  void write(std::span<const std::byte> d, uint64_t seq) noexcept {
    std::byte* p = copy_log_.claim(seq);
    copy_in(p, d.data(), d.size());
    copy_log_.commit(seq, static_cast<uint16_t>(d.size()));
    publish(seq);
  }
  // Writes an unsequenced datagram (a heartbeat) into the lane. Never blocks.
  void write_unsequenced(std::span<const std::byte> d) noexcept {
    const uint64_t p = lane_pos_;
    std::byte* s = lane_slot(p);
    auto& marker = word(s);
    // Odd marker first; the release stores below cannot pass it.
    marker.store(2 * p + 1, std::memory_order_relaxed);
    word(s + 8).store(newest_, std::memory_order_release);
    word(s + 16).store(d.size(), std::memory_order_release);
    copy_in(s + kLaneHeader, d.data(), d.size());
    marker.store(2 * p + 2, std::memory_order_release);
    lane_pos_ = p + 1;
    word(mem_.data() + kLanePosOffset).store(lane_pos_, std::memory_order_release);
    announce();
  }
  // Periodic upkeep from the publisher's loop: liveness stamp, and clearing
  // the sleep bits of readers that died while blocked.
  void touch(uint64_t now_ns) noexcept;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] uint64_t position() const noexcept { return newest_ + 1; }  // next sequence
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] size_t slots() const noexcept { return slots_; }
  [[nodiscard]] bool huge_pages() const noexcept { return huge_; }

 private:
  void announce() noexcept {
    // seq_cst (a locked xadd on x86) orders this store before the sleepers
    // load: a reader that announced itself after it will see the new event.
    word(mem_.data() + kEventOffset).fetch_add(1, std::memory_order_seq_cst);
    if (word(mem_.data() + kSleepersOffset).load(std::memory_order_relaxed) != 0) [[unlikely]]
      wake_sleepers();
  }
  std::byte* lane_slot(uint64_t p) const noexcept {
    return mem_.data() + lane_offset_ + (p % kLaneSlots) * lane_slot_size_;
  }
  // A summary bit is set: wakes the readers if a word of its group says
  // someone sleeps (a bit the writer has not cleared yet costs loads, not a
  // system call).
  [[gnu::cold]] void wake_sleepers() noexcept;
  void clear_idle_summary() noexcept;
  void reap_dead_readers() noexcept;
  // false: the slot is free. full: the start time too (a /proc read), not only the pid.
  bool reap_if_dead(size_t slot, bool full) noexcept;
  [[nodiscard]] std::byte* sleeper_word(size_t w) const noexcept { return mem_.data() + reader_offset_ + 8 * w; }

  std::string path_;
  MappedMemory mem_;
  size_t slot_size_ = 0;
  size_t slots_ = 0;
  size_t ring_bytes_ = 0;
  size_t data_bytes_ = 0;
  size_t lane_offset_ = 0;
  size_t lane_slot_size_ = 0;
  size_t max_datagram_ = 0;
  const std::byte* ring_lo_ = nullptr;
  const std::byte* ring_hi_ = nullptr;
  history::TermLog copy_log_;  // write()'s view of ring_memory()
  bool huge_ = false;
  size_t reader_offset_ = 0;
  size_t reader_slots_ = 0;
  size_t reap_next_ = 0;   // the slot the reaper looks at next (round robin)
  size_t reap_word_ = 0;   // the sleeper word it looks at next
  size_t reap_full_ = 0;   // the slot it checks in full next
  uint64_t newest_ = 0;
  uint64_t lane_pos_ = 0;
  uint64_t last_reap_ = 0;
};

class RingReader {
 public:
  enum class Read : uint8_t { kOk, kEmpty, kLapped };

  // Attaches to the ring at `path` after checking its file, before reading
  // anything in it: a regular file (no link), owned by `owner` (default:
  // this process's effective uid), writable by no one else, at least as
  // large as its header says. Throws Error naming the path and what is wrong
  // (missing, another owner, mode, size, not a mdcast ring, another layout
  // version, an inconsistent header).
  explicit RingReader(const std::string& path, std::optional<uid_t> owner = std::nullopt);
  RingReader(RingReader&&) noexcept;
  RingReader& operator=(RingReader&&) noexcept;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();  // gives back its reader slot

  // Copies the next datagram (data in sequence order, heartbeats after the
  // data they follow) into buf (max_datagram() bytes) and sets len.
  // kLapped: the writer overwrote what this reader had not read yet; the
  // cursor has jumped to a safe sequence (lapped() counts datagrams lost).
  Read read(std::byte* buf, size_t& len) noexcept {
    const auto m = log_.mark();
    if (m == history::TermReader::Mark::kCommitted) {
      const size_t l = log_.length();
      if (l <= log_.max_datagram()) [[likely]] {
        copy_out(buf, log_.payload(), l);
        // After copy_out's acquire fence (or loads): nothing of the record
        // was reclaimed while it was copied.
        if (log_.held()) [[likely]] {
          len = l;
          log_.advance(l);
          return Read::kOk;
        }
      }
      return overtaken();
    }
    // Not yet, unless the writer lapped us: a later lap may leave anything
    // at our position, zeros too.
    if (m == history::TermReader::Mark::kPending && log_.held()) [[likely]]
      return read_lane(buf, len);
    return overtaken();
  }

  [[nodiscard]] const RingHeaderView& header() const noexcept { return hdr_; }
  [[nodiscard]] uid_t owner() const noexcept { return owner_; }  // the file's owner, checked
  [[nodiscard]] size_t max_datagram() const noexcept { return log_.max_datagram(); }
  [[nodiscard]] uint64_t position() const noexcept { return log_.seq(); }  // next sequence to read
  [[nodiscard]] uint64_t byte_position() const noexcept { return log_.position(); }  // where its record goes
  // The writer's next sequence as its published word says: for display, not
  // proven (the reader itself follows only what the records prove).
  [[nodiscard]] uint64_t writer_position() const noexcept;
  [[nodiscard]] uint64_t lapped() const noexcept { return c_.lapped; }
  // Positions seen that the records did not back (corruption or forgery),
  // never followed.
  [[nodiscard]] uint64_t implausible() const noexcept { return c_.implausible; }
  [[nodiscard]] uint64_t alive_stamp() const noexcept;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // True while the file at path() is still the one we mapped and its writer lives.
  [[nodiscard]] bool current() const noexcept;
  // Start reading at the writer's current position (new subscribers do
  // this): the published one where the records prove it, else the newest
  // sequence the records hold.
  void seek_to_writer() noexcept;
  // Re-reads the writer's published position where the records prove it, so
  // that how far it may have moved since is bounded tightly (the medium
  // calls this from its control duty, ~10 times a second).
  void refresh(uint64_t now_ns) noexcept;

  // Blocks until the writer publishes something this reader has not seen, or
  // timeout. Returns false if this reader cannot block (no writable header
  // or no free reader slot: header().reader_slots are taken): the caller
  // then backs off instead.
  bool wait(uint64_t timeout_ns) noexcept;
  [[nodiscard]] bool can_block() const noexcept { return slot_ >= 0; }
  // Its reader slot, -1: none.
  [[nodiscard]] int slot() const noexcept { return slot_; }

 private:
  // Everything but the owners below and the term log's cursor: trivially
  // copied by the moves.
  struct Cursor {
    const std::byte* lane = nullptr;
    size_t lane_slot_size = 0;
    size_t lane_slots = 0;
    uint64_t ino = 0;
    uint64_t lapped = 0;
    uint64_t implausible = 0;
    uint64_t implausible_at = 0;     // data position whose record was last judged corrupt (counted once)
    uint64_t implausible_value = 0;  // published word last judged implausible (counted once)
    uint64_t implausible_horizon = 0;  // horizon last judged implausible (counted once)
    uint64_t implausible_lane = 0;   // lane position word last judged implausible (counted once)
    uint64_t implausible_lane_at = UINT64_MAX;  // lane position whose marker was last judged corrupt
    // The writer was at about `base` (a published position the records
    // proved) at `base_ns`: where it can be now is bounded by the rate.
    uint64_t base = 0;
    uint64_t base_ns = 0;
  };

  Read read_lane(std::byte* buf, size_t& len) noexcept;
  [[gnu::cold]] Read overtaken() noexcept;
  [[gnu::cold]] void lane_overtaken(uint64_t marker) noexcept;
  bool plausible(uint64_t seq, uint64_t now) const noexcept;
  bool proven_published(uint64_t p, uint64_t now) noexcept;
  bool proven_lane_position(uint64_t w) const noexcept;
  bool skip_ahead(uint64_t newest) noexcept;
  uint64_t newest_in_lane() const noexcept;
  void note_implausible(uint64_t& last, uint64_t v) noexcept;
  void release_slot() noexcept;
  [[nodiscard]] uint64_t published() const noexcept {
    return word(mem_.data() + kPublishedOffset).load(std::memory_order_acquire);
  }
  const std::byte* lane_slot(uint64_t p) const noexcept { return c_.lane + (p % c_.lane_slots) * c_.lane_slot_size; }

  std::string path_;
  MappedMemory mem_;   // the whole ring, read-only
  MappedMemory ctl_;   // the header page, writable when the file allows (blocking waits)
  MappedMemory rdr_;   // the reader region (sleeper words, slots), writable with ctl_
  int slot_ = -1;      // reader slot, -1: none
  RingHeaderView hdr_{};
  uid_t owner_ = 0;
  history::TermReader log_;  // the data: next sequence and its record
  Cursor c_;
  uint64_t lane_next_ = 0;  // next lane position
};

// Publisher-side medium adapter. Datagrams the engine built in the ring are
// only announced; any other (an engine with its own retransmit ring) is
// copied in. Heartbeats go to the lane.
class ShmSink {
 public:
  explicit ShmSink(RingWriter& w) noexcept : w_(w) {}
  SendResult send(std::span<const std::byte> d, uint64_t seq) noexcept {
    if (w_.holds(d)) [[likely]]
      w_.publish(seq);
    else
      w_.write(d, seq);
    return SendResult::kSent;
  }
  SendResult send_unsequenced(std::span<const std::byte> d) noexcept {
    w_.write_unsequenced(d);
    return SendResult::kSent;
  }

 private:
  RingWriter& w_;
};
static_assert(DatagramSink<ShmSink>);

}  // namespace mdcast::media::shm
