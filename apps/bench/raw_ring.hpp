// The raw baseline of the shared-memory medium: the least a single-writer
// ring in shared memory can do. No protocol, no header, no validation: one
// 64-byte message per cache line, its first word the sequence number, stored
// last with release; the reader spins on that word with acquire and copies
// the other 56 bytes out. mdcast over shm is reported against this ("how far
// from its own medium's limit").
//
// Unlike the mdcast ring it has flow control (the writer waits when the ring
// is full), so its throughput is the rate at which two cores can hand cache
// lines to each other, not a loss-limited rate. The reader publishes its
// position only every kPublishEvery messages (and when it finds the ring
// empty), and the writer re-reads it only when the ring looks full: neither
// side touches the other's counter line per message.
//
// Lives in memory shared by one writer and one reader process (or thread).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace mdcast::app::bench {

struct RawRing {
  static constexpr size_t kSlots = 16384;  // 1 MiB of 64-byte lines
  static constexpr uint64_t kMask = kSlots - 1;
  static constexpr uint64_t kPublishEvery = 64;
  static constexpr size_t kPayloadWords = 7;

  struct alignas(64) Slot {
    std::atomic<uint64_t> seq;  // position + 1 once written
    uint64_t payload[kPayloadWords];
  };
  static_assert(sizeof(Slot) == 64);

  alignas(128) std::atomic<uint64_t> read_pos{0};  // messages the reader has consumed
  alignas(128) Slot slots[kSlots]{};
};

class RawWriter {
 public:
  explicit RawWriter(RawRing& r) noexcept : r_(r) {}

  // False when the ring is full (the reader is kSlots behind): try again.
  bool try_write(const uint64_t (&payload)[RawRing::kPayloadWords]) noexcept {
    if (pos_ - cached_read_ >= RawRing::kSlots) {
      cached_read_ = r_.read_pos.load(std::memory_order_acquire);
      if (pos_ - cached_read_ >= RawRing::kSlots) return false;
    }
    RawRing::Slot& s = r_.slots[pos_ & RawRing::kMask];
    // The reader released this slot (read_pos, acquired above or earlier):
    // plain stores cannot race with its copy.
    for (size_t i = 0; i < RawRing::kPayloadWords; ++i) s.payload[i] = payload[i];
    s.seq.store(++pos_, std::memory_order_release);
    return true;
  }
  [[nodiscard]] uint64_t position() const noexcept { return pos_; }

 private:
  RawRing& r_;
  uint64_t pos_ = 0;
  uint64_t cached_read_ = 0;
};

class RawReader {
 public:
  explicit RawReader(RawRing& r) noexcept : r_(r) {}

  // False when nothing new is there (it then publishes its position, so a
  // writer waiting on a full ring is released).
  bool try_read(uint64_t (&out)[RawRing::kPayloadWords]) noexcept {
    const RawRing::Slot& s = r_.slots[pos_ & RawRing::kMask];
    if (s.seq.load(std::memory_order_acquire) != pos_ + 1) {
      if (published_ != pos_) publish();
      return false;
    }
    for (size_t i = 0; i < RawRing::kPayloadWords; ++i) out[i] = s.payload[i];
    ++pos_;
    if ((pos_ & (RawRing::kPublishEvery - 1)) == 0) publish();
    return true;
  }
  [[nodiscard]] uint64_t position() const noexcept { return pos_; }

 private:
  void publish() noexcept {
    published_ = pos_;
    r_.read_pos.store(pos_, std::memory_order_release);
  }
  RawRing& r_;
  uint64_t pos_ = 0;
  uint64_t published_ = 0;
};

}  // namespace mdcast::app::bench
