// Fixed slots indexed by sequence, so a datagram's address is computable
// from its number alone: what lets a verbs subscriber fetch a missing
// datagram with one RDMA READ (verbs), and the engine's own history where no
// reader shares the memory (UDP, the in-memory medium).
//
// Layout of the memory it is given (64-byte aligned, little-endian):
//   control block (64 B): u64 reserved_seq, u64 slot_size, u64 slots, u64 magic ("mdstring")
//   slot[i] (slot_size B): u64 seq, u32 length, u32 zero, datagram bytes (record.hpp)
// Datagram s lives in slot s % slots, at kControlSize + (s % slots) * slot_size.
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
// The cost is a whole slot per datagram: with 4 KiB slots a 100-byte
// datagram lands on a page of its own. A log whose readers read it live
// packs its records instead (term_log.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mdcast/history/record.hpp"

namespace mdcast::history {

class SlotLog {
 public:
  static constexpr size_t kControlSize = record::kControlSize;
  static constexpr size_t kSlotHeader = record::kHeader;
  static constexpr uint64_t kClaimed = record::kClaimed;
  static constexpr uint64_t kMagic = 0x676e6972'7473646dull;  // "mdstring"

  static constexpr size_t slot_size_for(size_t max_datagram) noexcept { return record::size_for(max_datagram); }
  // Bytes of memory for a log of at least `budget` bytes of slots (4 slots at least).
  static constexpr size_t memory_for(size_t budget, size_t max_datagram) noexcept {
    const size_t s = slot_size_for(max_datagram);
    const size_t n = budget / s < 4 ? 4 : budget / s;
    return kControlSize + n * s;
  }
  // Writes the control block for slots of slot_size (a multiple of 64) over mem.
  static void format(std::span<std::byte> mem, size_t slot_size) noexcept;

  SlotLog() = default;
  // mem must be 64-byte aligned and hold at least memory_for(0, max_datagram).
  // Memory already formatted (magic present) with slots large enough for
  // max_datagram keeps its geometry: readers attached to it read that
  // layout. Anything else is formatted for max_datagram.
  SlotLog(std::span<std::byte> mem, size_t max_datagram) noexcept;

  // Buffer for datagram `seq` (must be newest()+1). Invalidates seq - slots().
  [[nodiscard]] std::byte* claim(uint64_t seq) noexcept {
    std::byte* s = at_cursor(seq);
    reserved().store(seq, std::memory_order_relaxed);
    record::seq_word(s).store(seq | kClaimed, std::memory_order_relaxed);  // not valid until committed
    // Both stores above before any byte of the new datagram (RDMA READ
    // validation relies on it).
    record::claim_fence();
    // The slot held seq - slots(). Never below the first commit: a log
    // that began past 1 (RetransmitLog::begin_at) holds nothing before it.
    if (seq > slots_ && oldest_ != 0 && seq - slots_ + 1 > oldest_) oldest_ = seq - slots_ + 1;
    return s + kSlotHeader;
  }
  void commit(uint64_t seq, uint16_t len) noexcept {
    std::byte* s = at_cursor(seq);
    record::len_word(s).store(len, std::memory_order_relaxed);
    record::seq_word(s).store(seq, std::memory_order_release);  // last: the datagram is whole
    newest_ = seq;
    if (oldest_ == 0) oldest_ = seq;
    cursor_seq_ = seq + 1;
    s += slot_size_;
    cursor_ = s == end_ ? first_ : s;
  }
  // The committed datagram `seq`, or empty if it is not (or no longer) held.
  [[nodiscard]] std::span<const std::byte> get(uint64_t seq) const noexcept {
    if (seq == 0 || seq < oldest_ || seq > newest_) return {};
    // The newest is what the publisher hands its medium after each commit:
    // the slot behind the cursor. Older ones (retransmits) are computed.
    const std::byte* s = seq + 1 == cursor_seq_ ? (cursor_ == first_ ? end_ : cursor_) - slot_size_ : slot(seq);
    if (record::seq_word(s).load(std::memory_order_relaxed) != seq) return {};
    return {s + kSlotHeader, record::len_word(s).load(std::memory_order_relaxed)};
  }
  // The oldest datagram held (0: none).
  [[nodiscard]] uint64_t oldest() const noexcept { return oldest_; }
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  // Datagrams held.
  [[nodiscard]] size_t slots() const noexcept { return slots_; }
  [[nodiscard]] size_t slot_size() const noexcept { return slot_size_; }
  [[nodiscard]] std::byte* memory() const noexcept { return base_; }
  [[nodiscard]] size_t slot_offset(uint64_t seq) const noexcept { return kControlSize + (seq % slots_) * slot_size_; }

 private:
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
  std::atomic<uint64_t>& reserved() const noexcept { return record::word(base_); }

  std::byte* base_ = nullptr;
  std::byte* cursor_ = nullptr;  // slot of cursor_seq_
  uint64_t cursor_seq_ = 0;
  uint64_t oldest_ = 0;
  uint64_t newest_ = 0;
  std::byte* first_ = nullptr;  // slot 0
  std::byte* end_ = nullptr;    // one past the last slot
  size_t slot_size_ = 0;
  size_t slots_ = 0;
};

}  // namespace mdcast::history
