// The packed layout's cold paths: adopting formatted memory, the horizon,
// random access by sequence (retransmits), the oldest datagram held.
#include "mdcast/history/retransmit_ring.hpp"

namespace mdcast::history {

bool RetransmitRing::adopt_packed(std::span<std::byte> mem, size_t max_datagram) noexcept {
  const size_t need = slot_size_for(max_datagram);
  const uint64_t max_record = load_le<uint64_t>(base_ + 8), data = load_le<uint64_t>(base_ + 16);
  const uint64_t entries = load_le<uint64_t>(base_ + 32), data_off = load_le<uint64_t>(base_ + 40);
  // The geometry format_packed() writes, for a record at least this large,
  // in the memory given: anything else is formatted as fixed slots.
  if (max_record < need || max_record % 64 != 0 || data % 64 != 0 || data < 4 * max_record ||
      entries != packed_index_entries(data) || data_off != packed_data_offset(data) ||
      packed_memory_for(data) > mem.size())
    return false;
  packed_ = true;
  max_len_ = max_datagram;
  slot_size_ = max_record;
  slots_ = data / max_record;
  data_bytes_ = data;
  entries_ = entries;
  index_ = base_ + kControlSize;
  idx_end_ = index_ + entries * 8;
  data_ = base_ + data_off;
  first_ = data_;
  end_ = data_ + data;
  pos_ = 0;
  off_ = 0;
  cursor_seq_ = 1;
  idx_ = index_ + 8 * (1 % entries_);
  last_ = data_;
  // The first record's reach, and its "not yet" word (memory reused by a
  // new session may hold an old one's records).
  reach_ = slot_size_;
  horizon_ = 0;
  raise_horizon();
  seq_word(data_).store(0, std::memory_order_relaxed);
  return true;
}

void RetransmitRing::raise_horizon() noexcept {
  // A sixteenth of the data past what is needed now: the word is stored about
  // sixteen times a lap, so readers that check it per datagram find its line
  // in their own cache. Readers treat a record within that distance of being
  // reclaimed as lost already: a reader that far behind is being lapped.
  const uint64_t step = (data_bytes_ / 16 + 63) & ~uint64_t{63};
  horizon_ = reach_ + step;
  horizon_word(base_).store(horizon_, std::memory_order_relaxed);
  // The horizon before any byte under it: a reader that copied a byte
  // stored after this sees the raised horizon on its check.
#if defined(__SANITIZE_THREAD__)
  std::atomic_signal_fence(std::memory_order_release);
#else
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

void RetransmitRing::seek_index(uint64_t seq) noexcept {
  cursor_seq_ = seq;
  idx_ = index_ + 8 * (seq % entries_);
}

const std::byte* RetransmitRing::held_record(uint64_t seq) const noexcept {
  if (newest_ - seq >= entries_) return nullptr;  // its index entry is reused
  const uint64_t pos = index_word(index_ + 8 * (seq % entries_)).load(std::memory_order_relaxed);
  // Reclaimed once the writer may store at pos + data_bytes or past it.
  if (pos + data_bytes_ < reach_ || pos >= reach_) return nullptr;
  // Only where the writer puts records (the index is shared memory).
  const size_t off = static_cast<size_t>(pos % data_bytes_);
  if (off % 64 != 0 || off + slot_size_ > data_bytes_) return nullptr;
  return data_ + off;
}

uint64_t RetransmitRing::oldest_packed() const noexcept {
  if (newest_ == 0) return 0;
  auto held = [&](uint64_t s) {
    const std::byte* r = s == newest_ ? last_ : held_record(s);
    return r != nullptr && seq_word(const_cast<std::byte*>(r)).load(std::memory_order_relaxed) == s;
  };
  // Held sequences are one run ending at the newest: the first held one, by
  // bisection from the last answer (the oldest only moves forward).
  uint64_t lo = newest_ >= entries_ ? newest_ - entries_ + 1 : 1;
  if (oldest_hint_ > lo && oldest_hint_ <= newest_) lo = oldest_hint_;
  uint64_t hi = newest_;
  if (!held(hi)) return 0;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (held(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  oldest_hint_ = lo;
  return lo;
}

}  // namespace mdcast::history
