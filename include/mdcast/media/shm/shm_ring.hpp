// The shared-memory medium: one writer, many readers, one host.
//
// The publisher writes each datagram once into a ring in a shared file
// (hugetlbfs when the host has huge pages reserved, /dev/shm otherwise); every
// subscriber process polls its own cursor, kept in its own memory. Publishing
// cost is independent of the number of readers, and a reader that dies leaves
// nothing behind that could block anyone.
//
// File layout (version 1, little-endian, 64-byte aligned):
//   [0, 4096)    header: magic, layout version, slot geometry, writer pid and
//                start time, session, channel, control socket name, and on
//                their own cache lines the write position and a liveness stamp
//   [4096, ...)  slots of `slot_size` bytes: u64 marker, u64 length, datagram
//
// Each slot is a seqlock. Position p (0, 1, 2 ...) lives in slot p % slots;
// its marker is 2p+1 while being written and 2p+2 once complete. A reader at
// position p copies the datagram out, then re-reads the marker: unchanged
// means the copy is whole. A marker beyond 2p+2 means the writer lapped the
// reader; the reader jumps ahead and the feed engine recovers the gap through
// the control plane like any loss. A torn slot is never handed out as data.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::media::shm {

// The seqlock's payload is copied with 8-byte atomic accesses, not memcpy: a
// reader racing a lapping writer then reads stale-or-new words (defined
// behaviour, which the marker re-check rejects) instead of a data race. The
// writer's stores are release and the reader's loads acquire, which orders
// them against the markers without standalone fences, so ThreadSanitizer can
// check the protocol. On x86-64 all of these are plain 8-byte moves.
inline std::atomic<uint64_t>& word(std::byte* p) noexcept { return *reinterpret_cast<std::atomic<uint64_t>*>(p); }
inline const std::atomic<uint64_t>& word(const std::byte* p) noexcept {
  return *reinterpret_cast<const std::atomic<uint64_t>*>(p);
}
inline void copy_in(std::byte* slot, const std::byte* src, size_t n) noexcept {
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
}
inline void copy_out(std::byte* dst, const std::byte* slot, size_t n) noexcept {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = word(slot + i).load(std::memory_order_acquire);
    std::memcpy(dst + i, &v, 8);
  }
  if (i < n) {
    const uint64_t v = word(slot + i).load(std::memory_order_acquire);
    std::memcpy(dst + i, &v, n - i);
  }
}

constexpr uint64_t kRingMagic = 0x31524853'43444d4dull;  // "MMDCSHR1"
constexpr uint32_t kRingLayoutVersion = 1;
constexpr size_t kRingHeaderSize = 4096;
constexpr size_t kSlotHeader = 16;  // u64 marker, u64 length (the datagram follows 8-byte aligned)
// Header offsets of the words the writer and readers share at run time, each
// on its own cache line.
constexpr size_t kWritePosOffset = 1024;   // u64 next position; its low half is the futex word
constexpr size_t kAliveOffset = 1088;      // u64 writer liveness stamp
constexpr size_t kSleepersOffset = 1152;   // u64 bit i: reader slot i is blocked in futex_wait
constexpr size_t kReaderSlotsOffset = 1216;
constexpr size_t kReaderSlots = 64;        // readers that can block; more fall back to backing off
constexpr size_t kReaderSlotSize = 16;     // u32 pid, u32 0, u64 process start time

struct RingOptions {
  std::string name = "mdcast";      // ring file mdcast-<name>.ring
  std::string dir;                  // default: /dev/hugepages if usable, else /dev/shm
  size_t slots = 16384;             // power of two not required
  size_t max_datagram = 4032;       // slot = 16 + this, rounded up to 64 (4096 by default)
  bool huge_pages = true;           // try hugetlbfs first
};

// Where a ring named `name` lives: the first existing of dir candidates.
[[nodiscard]] std::string ring_path(const std::string& dir, const std::string& name);
[[nodiscard]] std::string find_ring(const std::string& name, const std::string& dir = {});

struct RingHeaderView {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;
  uint64_t slot_size;
  uint64_t slots;
  uint64_t max_datagram;
  uint64_t writer_pid;
  uint64_t writer_start;  // /proc/<pid>/stat start time, guards against pid reuse
  uint32_t session;
  uint16_t channel;
  uint16_t huge;
  char control[108];      // control socket address (abstract Unix name)
};

class RingWriter {
 public:
  // Creates (or replaces a dead writer's) ring. Throws Error if a live process
  // owns a ring of that name, or the file cannot be created and mapped.
  RingWriter(const RingOptions& opts, uint32_t session, uint16_t channel, const std::string& control_address);
  RingWriter(RingWriter&&) noexcept;
  RingWriter& operator=(RingWriter&&) = delete;
  RingWriter(const RingWriter&) = delete;
  ~RingWriter();  // unlinks the file: readers notice the writer is gone

  // Writes one datagram (len <= max_datagram). Never blocks, never fails.
  void write(std::span<const std::byte> d) noexcept {
    const uint64_t p = pos_;
    std::byte* s = slot(p);
    auto& marker = *reinterpret_cast<std::atomic<uint64_t>*>(s);
    // Odd marker first; the release stores below cannot pass it.
    marker.store(2 * p + 1, std::memory_order_relaxed);
    word(s + 8).store(d.size(), std::memory_order_release);
    copy_in(s + kSlotHeader, d.data(), d.size());
    marker.store(2 * p + 2, std::memory_order_release);
    pos_ = p + 1;
    // seq_cst (a locked xchg on x86) orders this store before the sleepers
    // load: a reader that announced itself after it will see the new position.
    write_pos().store(pos_, std::memory_order_seq_cst);
    if (sleepers().load(std::memory_order_relaxed) != 0) wake_readers();
  }
  // Periodic upkeep from the publisher's loop: liveness stamp, and clearing
  // the sleep bits of readers that died while blocked.
  void touch(uint64_t now_ns) noexcept;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] uint64_t position() const noexcept { return pos_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] bool huge_pages() const noexcept { return huge_; }

 private:
  std::byte* slot(uint64_t p) const noexcept { return mem_.data() + kRingHeaderSize + (p % slots_) * slot_size_; }
  std::atomic<uint64_t>& write_pos() const noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(mem_.data() + kWritePosOffset);
  }
  std::atomic<uint64_t>& alive_stamp() const noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(mem_.data() + kAliveOffset);
  }
  std::atomic<uint64_t>& sleepers() const noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(mem_.data() + kSleepersOffset);
  }
  void wake_readers() noexcept;
  uint64_t last_reap_ = 0;

  std::string path_;
  MappedMemory mem_;
  size_t slot_size_ = 0;
  size_t slots_ = 0;
  size_t max_datagram_ = 0;
  bool huge_ = false;
  uint64_t pos_ = 0;
};

class RingReader {
 public:
  enum class Read : uint8_t { kOk, kEmpty, kLapped };

  // Attaches to the ring at `path`. Throws Error naming the path when it is
  // missing, not a mdcast ring, or of another layout version.
  explicit RingReader(const std::string& path);
  RingReader(RingReader&&) noexcept;
  RingReader& operator=(RingReader&&) noexcept;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;
  ~RingReader();  // gives back its reader slot

  // Copies the next datagram into buf (max_datagram() bytes) and sets len.
  // kLapped: the writer overwrote what this reader had not read yet; the
  // cursor has jumped to the oldest safe position (lapped() counts datagrams lost).
  Read read(std::byte* buf, size_t& len) noexcept {
    const std::byte* s = slot(pos_);
    const auto& marker = *reinterpret_cast<const std::atomic<uint64_t>*>(s);
    const uint64_t want = 2 * pos_ + 2;
    const uint64_t m1 = marker.load(std::memory_order_acquire);
    if (m1 == want) {
      auto l = static_cast<size_t>(word(s + 8).load(std::memory_order_acquire));
      if (l > max_datagram_) l = 0;  // torn length: the marker check below rejects it
      copy_out(buf, s + kSlotHeader, l);
      // The acquire loads above keep this re-check after them.
      if (marker.load(std::memory_order_relaxed) == want) {
        len = l;
        ++pos_;
        return Read::kOk;
      }
    } else if (m1 < want) {
      return Read::kEmpty;  // 2p+1 (being written) or an older lap: not there yet
    }
    skip_ahead();
    return Read::kLapped;
  }

  [[nodiscard]] const RingHeaderView& header() const noexcept { return hdr_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] uint64_t position() const noexcept { return pos_; }
  [[nodiscard]] uint64_t writer_position() const noexcept;
  [[nodiscard]] uint64_t lapped() const noexcept { return lapped_; }
  [[nodiscard]] uint64_t alive_stamp() const noexcept;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  // True while the file at path() is still the one we mapped and its writer lives.
  [[nodiscard]] bool current() const noexcept;
  // Start reading at the writer's current position (new subscribers do this).
  void seek_to_writer() noexcept { pos_ = writer_position(); }

  // Blocks until the writer moves past this reader's position, or timeout.
  // Returns false if this reader cannot block (no writable header or no free
  // reader slot): the caller then backs off instead.
  bool wait(uint64_t timeout_ns) noexcept;
  [[nodiscard]] bool can_block() const noexcept { return slot_ >= 0; }

 private:
  void skip_ahead() noexcept;
  void release_slot() noexcept;
  const std::byte* slot(uint64_t p) const noexcept {
    return mem_.data() + kRingHeaderSize + (p % slots_) * slot_size_;
  }

  std::string path_;
  MappedMemory mem_;   // the whole ring, read-only
  MappedMemory ctl_;   // the header page, writable when the file allows (blocking waits)
  int slot_ = -1;      // reader slot, -1: none
  RingHeaderView hdr_{};
  uint64_t ino_ = 0;
  size_t slot_size_ = 0;
  size_t slots_ = 0;
  size_t max_datagram_ = 0;
  uint64_t pos_ = 0;
  uint64_t lapped_ = 0;
};

// Publisher-side medium adapter: every datagram goes into the ring once.
class ShmSink {
 public:
  explicit ShmSink(RingWriter& w) noexcept : w_(w) {}
  SendResult send(std::span<const std::byte> d, uint64_t) noexcept {
    w_.write(d);
    return SendResult::kSent;
  }
  SendResult send_unsequenced(std::span<const std::byte> d) noexcept {
    w_.write(d);
    return SendResult::kSent;
  }

 private:
  RingWriter& w_;
};
static_assert(DatagramSink<ShmSink>);

}  // namespace mdcast::media::shm
