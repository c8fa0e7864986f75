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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mdcast/core/bytes.hpp"

namespace mdcast::feed {

class RetransmitRing {
 public:
  static constexpr size_t kControlSize = 64;
  static constexpr size_t kSlotHeader = 16;
  static constexpr uint64_t kMagic = 0x676e6972'7473646dull;  // "mdstring"
  static constexpr uint64_t kClaimed = uint64_t{1} << 63;     // seq word of a slot being written

  static constexpr size_t slot_size_for(size_t max_datagram) noexcept {
    return (kSlotHeader + max_datagram + 63) / 64 * 64;
  }
  // Bytes of memory for a ring of at least `budget` bytes of slots.
  static constexpr size_t memory_for(size_t budget, size_t max_datagram) noexcept {
    const size_t s = slot_size_for(max_datagram);
    const size_t n = budget / s < 4 ? 4 : budget / s;
    return kControlSize + n * s;
  }

  RetransmitRing() = default;
  // mem must be 64-byte aligned and hold at least memory_for(0, max_datagram).
  // Memory a medium already formatted (format(), magic present) with slots
  // large enough for max_datagram keeps its geometry: readers attached to
  // it read that layout. Anything else is formatted for max_datagram.
  RetransmitRing(std::span<std::byte> mem, size_t max_datagram) noexcept : base_(mem.data()) {
    const size_t need = slot_size_for(max_datagram);
    const uint64_t have = load_le<uint64_t>(base_ + 8), n = load_le<uint64_t>(base_ + 16);
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
    if (seq == 0 || seq < oldest_ || seq > newest_) return {};
    // The newest is what the publisher hands its medium after each commit:
    // the slot behind the cursor. Older ones (retransmits) are computed.
    std::byte* s = seq + 1 == cursor_seq_ ? (cursor_ == first_ ? end_ : cursor_) - slot_size_ : slot(seq);
    if (seq_word(s).load(std::memory_order_relaxed) != seq) return {};
    return {s + kSlotHeader, len_word(s).load(std::memory_order_relaxed)};
  }
  [[nodiscard]] uint64_t oldest() const noexcept { return oldest_; }
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  [[nodiscard]] size_t slots() const noexcept { return slots_; }
  [[nodiscard]] size_t slot_size() const noexcept { return slot_size_; }
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
};

}  // namespace mdcast::feed
