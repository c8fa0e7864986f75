// The publisher's bounded retransmit ring: fixed slots indexed by sequence,
// so a datagram's address is computable from its number alone. That is what
// lets a verbs subscriber fetch a missing datagram with one RDMA READ, and
// what the shm medium's readers read live (the ring is the medium's ring
// there: one copy of each datagram, built in place).
//
// Layout of the memory it is given (64-byte aligned):
//   control block (64 B): u64 reserved_seq, u64 slot_size, u64 slots, u64 magic
//   slot[i] (slot_size B): u64 seq, u32 length, u32 zero, datagram bytes
// A slot is claimed (reserved_seq published, its seq word set to
// s | kClaimed) before it is overwritten, and its seq word is stored last,
// with release, when the datagram is complete. So a reader - another
// process, or a NIC executing an RDMA READ - that finds seq == s before and
// after copying slot s, or that copies it and then sees reserved_seq <
// s + slots, knows the copy is whole; one that finds s | kClaimed knows s is
// being written, without looking at reserved_seq (a line the writer stores to
// on every claim: a reader spinning on it would cost the writer a cache miss
// per datagram).
//
// Single writer; get() is for the writer's thread (the control service runs
// there). The datagram being built lives in its slot: committing it is free.
//
// The writer only ever claims newest()+1, so it keeps that slot's address
// and steps it by one slot with a compare-and-wrap per commit: a 64-bit
// `seq % slots` (a division, ~25-40 cycles) on every claim, commit and get
// is then a compare instead. get() of the newest (the datagram just
// committed, which the publisher sends next) is the slot behind the cursor;
// any other sequence (retransmits, a caller that claims out of turn) still
// takes the division.
//
// Packed layout (what the shm medium uses: its readers read the ring live).
// Fixed slots cost a whole slot per datagram: with 4 KiB slots a 100-byte
// datagram lands on a page of its own, for the writer and every reader.
// Packed, records are {u64 seq, u32 length, u32 0, datagram} rounded up to
// 64 bytes and laid back to back, as a term buffer is:
//   control block (64 B): u64 horizon, u64 max_record, u64 data_bytes,
//                         u64 packed magic, u64 index_entries, u64 data_offset
//   index (index_entries x u64, padded to 4 KiB): the byte position of record
//                         seq in entry seq % index_entries (random access:
//                         retransmits, a reader that repositions)
//   data (data_bytes):    records; a record always fits whole: where fewer
//                         than max_record bytes are left before the end, the
//                         next one starts the next lap at offset 0
// Positions are 64-bit byte counts that never wrap; a record at position P
// lives at offset P % data_bytes. Its bytes are gone once the writer claims
// anything at or past P + data_bytes. The horizon word says how far the
// writer may have claimed: it is raised (rarely: a sixteenth of the data at a
// time) before any byte under it is written, so a reader that copied record P
// and then finds horizon <= P + data_bytes knows its copy is whole, reading a
// line that is almost never written instead of one the writer stores to per
// datagram. Before the writer publishes record s it zeroes the sequence word
// where s + 1 will go, so a reader that read s and steps on finds 0 ("not
// yet"), s + 1 | kClaimed, s + 1, or, lapped, whatever a later lap put there:
// never stale bytes of an earlier lap that could look like s + 1.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mdcast/core/bytes.hpp"

namespace mdcast::history {

class RetransmitRing {
 public:
  static constexpr size_t kControlSize = 64;
  static constexpr size_t kSlotHeader = 16;
  static constexpr uint64_t kMagic = 0x676e6972'7473646dull;  // "mdstring"
  static constexpr uint64_t kPackedMagic = 0x64656b63'6170646dull;  // "mdpacked"
  static constexpr uint64_t kClaimed = uint64_t{1} << 63;     // seq word of a slot being written
  static constexpr size_t kIndexAlign = 4096;  // the data starts on a page of its own
  static constexpr size_t kMinRecord = 64;     // header + the smallest datagram, rounded up

  static constexpr size_t slot_size_for(size_t max_datagram) noexcept {
    return (kSlotHeader + max_datagram + 63) / 64 * 64;
  }
  // Bytes of memory for a ring of at least `budget` bytes of slots.
  static constexpr size_t memory_for(size_t budget, size_t max_datagram) noexcept {
    const size_t s = slot_size_for(max_datagram);
    const size_t n = budget / s < 4 ? 4 : budget / s;
    return kControlSize + n * s;
  }

  // Packed: index entries for data_bytes of data (one per smallest record,
  // so the index never limits what the data holds), and the memory it all
  // takes, control block included.
  static constexpr size_t packed_index_entries(size_t data_bytes) noexcept { return data_bytes / kMinRecord; }
  static constexpr size_t packed_data_offset(size_t data_bytes) noexcept {
    return kControlSize + (packed_index_entries(data_bytes) * 8 + kIndexAlign - 1) / kIndexAlign * kIndexAlign;
  }
  static constexpr size_t packed_memory_for(size_t data_bytes) noexcept {
    return packed_data_offset(data_bytes) + data_bytes;
  }
  // Writes a packed control block for data_bytes of data (a multiple of 64,
  // at least 4 records of max_datagram) over mem (packed_memory_for(data_bytes)).
  static void format_packed(std::span<std::byte> mem, size_t data_bytes, size_t max_datagram) noexcept {
    store_le<uint64_t>(mem.data() + 8, slot_size_for(max_datagram));
    store_le<uint64_t>(mem.data() + 16, data_bytes);
    store_le<uint64_t>(mem.data() + 24, kPackedMagic);
    store_le<uint64_t>(mem.data() + 32, packed_index_entries(data_bytes));
    store_le<uint64_t>(mem.data() + 40, packed_data_offset(data_bytes));
  }
  // A record's bytes: header and datagram, rounded up to 64.
  static constexpr size_t record_span(size_t len) noexcept { return (kSlotHeader + len + 63) & ~size_t{63}; }

  RetransmitRing() = default;
  // mem must be 64-byte aligned and hold at least memory_for(0, max_datagram).
  // Memory a medium already formatted (format(), magic present) with slots
  // large enough for max_datagram keeps its geometry: readers attached to
  // it read that layout. Anything else is formatted for max_datagram.
  RetransmitRing(std::span<std::byte> mem, size_t max_datagram) noexcept : base_(mem.data()) {
    const size_t need = slot_size_for(max_datagram);
    const uint64_t have = load_le<uint64_t>(base_ + 8), n = load_le<uint64_t>(base_ + 16);
    if (load_le<uint64_t>(base_ + 24) == kPackedMagic && adopt_packed(mem, max_datagram)) return;
    if (load_le<uint64_t>(base_ + 24) == kMagic && have >= need && have % 64 == 0 && n >= 4 &&
        kControlSize + n * have <= mem.size()) {
      slot_size_ = have;
      slots_ = n;
    } else {
      slot_size_ = need;
      slots_ = (mem.size() - kControlSize) / need;
      format(mem, need);
    }
    first_ = base_ + kControlSize;
    end_ = first_ + slots_ * slot_size_;
    cursor_seq_ = 1;
    cursor_ = slots_ ? slot(1) : first_;  // no slots: memory below the precondition, never claimed
    reserved().store(0, std::memory_order_relaxed);
  }
  // Writes the control block for slots of slot_size (a multiple of 64) over mem.
  static void format(std::span<std::byte> mem, size_t slot_size) noexcept {
    store_le<uint64_t>(mem.data() + 8, slot_size);
    store_le<uint64_t>(mem.data() + 16, (mem.size() - kControlSize) / slot_size);
    store_le<uint64_t>(mem.data() + 24, kMagic);
  }

  // Buffer for datagram `seq` (must be newest()+1). Invalidates seq - slots().
  [[nodiscard]] std::byte* claim(uint64_t seq) noexcept {
    if (packed_) return claim_packed(seq);
    std::byte* s = at_cursor(seq);
    reserved().store(seq, std::memory_order_relaxed);
    seq_word(s).store(seq | kClaimed, std::memory_order_relaxed);  // not valid until committed
    // Both stores above before any byte of the new datagram: a reader that
    // sees new bytes sees the slot reclaimed (RDMA READ validation and the
    // shm reader rely on it). A fence, because the datagram is written by
    // ordinary stores (encode) after this returns. ThreadSanitizer models no
    // fences (GCC refuses them there): its builds keep the compiler barrier,
    // which is what the fence is on x86, and check the copying writer, whose
    // payload stores are release stores themselves (shm::copy_in).
#if defined(__SANITIZE_THREAD__)
    std::atomic_signal_fence(std::memory_order_release);
#else
    std::atomic_thread_fence(std::memory_order_release);
#endif
    if (seq > slots_) oldest_ = seq - slots_ + 1;
    return s + kSlotHeader;
  }
  void commit(uint64_t seq, uint16_t len) noexcept {
    if (packed_) return commit_packed(seq, len);
    std::byte* s = at_cursor(seq);
    len_word(s).store(len, std::memory_order_relaxed);
    seq_word(s).store(seq, std::memory_order_release);  // last: the datagram is whole
    newest_ = seq;
    if (oldest_ == 0) oldest_ = seq;
    cursor_seq_ = seq + 1;
    s += slot_size_;
    cursor_ = s == end_ ? first_ : s;
  }
  // The committed datagram `seq`, or empty if it is not (or no longer) held.
  [[nodiscard]] std::span<const std::byte> get(uint64_t seq) const noexcept {
    if (packed_) return get_packed(seq);
    if (seq == 0 || seq < oldest_ || seq > newest_) return {};
    // The newest is what the publisher hands its medium after each commit:
    // the slot behind the cursor. Older ones (retransmits) are computed.
    std::byte* s = seq + 1 == cursor_seq_ ? (cursor_ == first_ ? end_ : cursor_) - slot_size_ : slot(seq);
    if (seq_word(s).load(std::memory_order_relaxed) != seq) return {};
    return {s + kSlotHeader, len_word(s).load(std::memory_order_relaxed)};
  }
  // The oldest datagram held (0: none). Packed, found by a binary search
  // over the index: the control service asks per request, not per datagram.
  [[nodiscard]] uint64_t oldest() const noexcept { return packed_ ? oldest_packed() : oldest_; }
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  // Datagrams held at least (all of the largest size); packed holds more of smaller ones.
  [[nodiscard]] size_t slots() const noexcept { return slots_; }
  // A slot's bytes; packed: the largest record's.
  [[nodiscard]] size_t slot_size() const noexcept { return slot_size_; }
  [[nodiscard]] bool packed() const noexcept { return packed_; }
  [[nodiscard]] std::byte* memory() const noexcept { return base_; }
  [[nodiscard]] size_t slot_offset(uint64_t seq) const noexcept { return kControlSize + (seq % slots_) * slot_size_; }

  // The slot header words, as atomics: readers in other threads, processes
  // or on the NIC race the writer on them by design.
  static std::atomic<uint64_t>& seq_word(std::byte* slot) noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(slot);
  }
  static std::atomic<uint32_t>& len_word(std::byte* slot) noexcept {
    return *reinterpret_cast<std::atomic<uint32_t>*>(slot + 8);
  }
  static std::atomic<uint64_t>& reserved_word(std::byte* base) noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(base);
  }

  static std::atomic<uint64_t>& horizon_word(std::byte* base) noexcept { return reserved_word(base); }
  static std::atomic<uint64_t>& index_word(std::byte* entry) noexcept {
    return *reinterpret_cast<std::atomic<uint64_t>*>(entry);
  }

 private:
  bool adopt_packed(std::span<std::byte> mem, size_t max_datagram) noexcept;
  [[nodiscard]] std::byte* claim_packed(uint64_t seq) noexcept {
    if (seq != cursor_seq_) [[unlikely]] seek_index(seq);
    std::byte* r = data_ + off_;
    index_word(idx_).store(pos_, std::memory_order_relaxed);
    seq_word(r).store(seq | kClaimed, std::memory_order_relaxed);
    // As for fixed slots: the claim before any byte of the datagram. The
    // horizon already covers this record (raised by the commit before).
#if defined(__SANITIZE_THREAD__)
    std::atomic_signal_fence(std::memory_order_release);
#else
    std::atomic_thread_fence(std::memory_order_release);
#endif
    return r + kSlotHeader;
  }
  void commit_packed(uint64_t seq, uint16_t len) noexcept {
    if (seq != cursor_seq_) [[unlikely]] seek_index(seq);
    std::byte* r = data_ + off_;
    len_word(r).store(len, std::memory_order_relaxed);
    // Where the next record goes: right behind, or the next lap's start.
    const size_t span = record_span(len);
    uint64_t npos = pos_ + span;
    size_t noff = off_ + span;
    if (noff + slot_size_ > data_bytes_) {
      npos += data_bytes_ - noff;
      noff = 0;
    }
    // What the next record may overwrite is under the horizon before any
    // byte of it is stored, the "not yet" word below included.
    reach_ = npos + slot_size_;
    if (reach_ > horizon_) [[unlikely]] raise_horizon();
    seq_word(data_ + noff).store(0, std::memory_order_relaxed);
    seq_word(r).store(seq, std::memory_order_release);  // last: the datagram is whole
    last_ = r;
    newest_ = seq;
    pos_ = npos;
    off_ = noff;
    cursor_seq_ = seq + 1;
    idx_ += 8;
    if (idx_ == idx_end_) idx_ = index_;
  }
  [[nodiscard]] std::span<const std::byte> get_packed(uint64_t seq) const noexcept {
    if (seq == 0 || seq > newest_) return {};
    const std::byte* r = last_;
    if (seq != newest_) {
      r = held_record(seq);
      if (r == nullptr) return {};
    }
    if (seq_word(const_cast<std::byte*>(r)).load(std::memory_order_relaxed) != seq) return {};
    // The memory is shared with readers (and writable by the publisher's
    // user): a length no record can have is not served.
    const uint32_t len = len_word(const_cast<std::byte*>(r)).load(std::memory_order_relaxed);
    if (len > max_len_) return {};
    return {r + kSlotHeader, len};
  }
  // Record seq if the writer has not reclaimed its bytes (its header is not
  // checked here); null otherwise.
  const std::byte* held_record(uint64_t seq) const noexcept;
  uint64_t oldest_packed() const noexcept;
  void seek_index(uint64_t seq) noexcept;
  void raise_horizon() noexcept;

  std::byte* slot(uint64_t seq) const noexcept { return base_ + slot_offset(seq); }
  // Slot of seq: the cursor's when seq is the next one (always, for a
  // writer that claims in order), else computed.
  std::byte* at_cursor(uint64_t seq) noexcept {
    if (seq != cursor_seq_) [[unlikely]] {
      cursor_seq_ = seq;
      cursor_ = slot(seq);
    }
    return cursor_;
  }
  std::atomic<uint64_t>& reserved() const noexcept { return reserved_word(base_); }

  std::byte* base_ = nullptr;
  size_t slot_size_ = 0;
  size_t slots_ = 0;
  uint64_t oldest_ = 0;
  uint64_t newest_ = 0;
  std::byte* first_ = nullptr;  // slot 0
  std::byte* end_ = nullptr;    // one past the last slot
  std::byte* cursor_ = nullptr; // slot of cursor_seq_
  uint64_t cursor_seq_ = 0;
  // Packed only.
  bool packed_ = false;
  std::byte* data_ = nullptr;
  std::byte* index_ = nullptr;
  std::byte* idx_ = nullptr;       // index entry of cursor_seq_
  std::byte* idx_end_ = nullptr;
  std::byte* last_ = nullptr;      // the newest record
  size_t data_bytes_ = 0;
  size_t max_len_ = 0;             // the largest datagram the engine builds
  size_t entries_ = 0;
  size_t off_ = 0;                 // offset of pos_
  uint64_t pos_ = 0;               // position of the next record
  uint64_t reach_ = 0;             // how far the writer may store before its next commit
  uint64_t horizon_ = 0;           // the horizon word's value
  mutable uint64_t oldest_hint_ = 0;
};

}  // namespace mdcast::history
