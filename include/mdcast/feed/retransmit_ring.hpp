// The publisher's bounded retransmit ring: fixed slots indexed by sequence,
// so a datagram's address is computable from its number alone. That is what
// lets a verbs subscriber fetch a missing datagram with one RDMA READ.
//
// Layout of the memory it is given (64-byte aligned):
//   control block (64 B): u64 reserved_seq, u64 slot_size, u64 slots, u64 magic
//   slot[i] (slot_size B): u64 seq, u32 length, u32 zero, datagram bytes
// A slot is claimed (reserved_seq published) before it is overwritten, so a
// remote reader that copies slot s and then sees reserved_seq < s + slots
// knows the copy was not torn by a wrap.
//
// Single writer; get() is for the writer's thread (the control service runs
// there). The datagram being built lives in its slot: committing it is free.
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
  RetransmitRing(std::span<std::byte> mem, size_t max_datagram) noexcept
      : base_(mem.data()), slot_size_(slot_size_for(max_datagram)),
        slots_((mem.size() - kControlSize) / slot_size_for(max_datagram)) {
    store_le<uint64_t>(base_ + 8, slot_size_);
    store_le<uint64_t>(base_ + 16, slots_);
    store_le<uint64_t>(base_ + 24, kMagic);
    reserved().store(0, std::memory_order_relaxed);
  }

  // Buffer for datagram `seq` (must be newest()+1). Invalidates seq - slots().
  [[nodiscard]] std::byte* claim(uint64_t seq) noexcept {
    reserved().store(seq, std::memory_order_release);
    std::byte* s = slot(seq);
    store_le<uint64_t>(s, 0);  // not valid until committed
    if (seq > slots_) oldest_ = seq - slots_ + 1;
    return s + kSlotHeader;
  }
  void commit(uint64_t seq, uint16_t len) noexcept {
    std::byte* s = slot(seq);
    store_le<uint32_t>(s + 8, len);
    store_le<uint32_t>(s + 12, 0);
    store_le<uint64_t>(s, seq);
    newest_ = seq;
    if (oldest_ == 0) oldest_ = seq;
  }
  // The committed datagram `seq`, or empty if it is not (or no longer) held.
  [[nodiscard]] std::span<const std::byte> get(uint64_t seq) const noexcept {
    if (seq == 0 || seq < oldest_ || seq > newest_) return {};
    const std::byte* s = slot(seq);
    if (load_le<uint64_t>(s) != seq) return {};
    return {s + kSlotHeader, load_le<uint32_t>(s + 8)};
  }
  [[nodiscard]] uint64_t oldest() const noexcept { return oldest_; }
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  [[nodiscard]] size_t slots() const noexcept { return slots_; }
  [[nodiscard]] size_t slot_size() const noexcept { return slot_size_; }
  [[nodiscard]] std::byte* memory() const noexcept { return base_; }
  [[nodiscard]] size_t slot_offset(uint64_t seq) const noexcept { return kControlSize + (seq % slots_) * slot_size_; }

 private:
  std::byte* slot(uint64_t seq) const noexcept { return base_ + slot_offset(seq); }
  std::atomic<uint64_t>& reserved() const noexcept { return *reinterpret_cast<std::atomic<uint64_t>*>(base_); }

  std::byte* base_ = nullptr;
  size_t slot_size_ = 0;
  size_t slots_ = 0;
  uint64_t oldest_ = 0;
  uint64_t newest_ = 0;
};

}  // namespace mdcast::feed
