// What the two logs share: a 64-byte control block in front, and the record
// header every datagram carries, whether it sits in a fixed slot
// (slot_log.hpp) or back to back with the others (term_log.hpp):
//
//   {u64 seq, u32 length, u32 0, datagram bytes}, rounded up to 64 bytes
//
// The sequence word tells a reader what it may take: s, the datagram of
// sequence s, whole; s | kClaimed, s being written; anything else, not s.
// Readers race the writer on these words by design (other threads, other
// processes, a NIC executing an RDMA READ), hence the atomics over memory
// that is otherwise plain bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "mdcast/core/fence.hpp"

namespace mdcast::history::record {

inline constexpr size_t kControlSize = 64;
inline constexpr size_t kHeader = 16;
inline constexpr uint64_t kClaimed = uint64_t{1} << 63;

// A record's bytes for a datagram of len bytes (the largest: a slot).
[[nodiscard]] constexpr size_t size_for(size_t len) noexcept { return (kHeader + len + 63) & ~size_t{63}; }

inline std::atomic<uint64_t>& seq_word(std::byte* r) noexcept { return *reinterpret_cast<std::atomic<uint64_t>*>(r); }
inline const std::atomic<uint64_t>& seq_word(const std::byte* r) noexcept {
  return *reinterpret_cast<const std::atomic<uint64_t>*>(r);
}
inline std::atomic<uint32_t>& len_word(std::byte* r) noexcept {
  return *reinterpret_cast<std::atomic<uint32_t>*>(r + 8);
}
inline const std::atomic<uint32_t>& len_word(const std::byte* r) noexcept {
  return *reinterpret_cast<const std::atomic<uint32_t>*>(r + 8);
}
// A control-block or index word.
inline std::atomic<uint64_t>& word(std::byte* p) noexcept { return *reinterpret_cast<std::atomic<uint64_t>*>(p); }
inline const std::atomic<uint64_t>& word(const std::byte* p) noexcept {
  return *reinterpret_cast<const std::atomic<uint64_t>*>(p);
}

// The claim's stores before any byte of the datagram: a reader that sees new
// bytes sees the record reclaimed. A fence, because the datagram is written
// by ordinary stores (the engine's encoder) after the claim returns.
// ThreadSanitizer models no fences (GCC refuses them there): its builds keep
// the compiler barrier, which is what the fence is on x86, and check the
// copying writer, whose payload stores are release stores themselves
// (media/shm's copy_in).
inline void claim_fence() noexcept { release_fence(); }

}  // namespace mdcast::history::record
