// The term log's cold paths: formatting and adopting, the horizon, random
// access by sequence (retransmits), the oldest datagram held.
#include "mdcast/history/term_log.hpp"

#include "mdcast/core/bytes.hpp"

namespace mdcast::history {

void TermLog::format(std::span<std::byte> mem, size_t data_bytes, size_t max_datagram) noexcept {
  store_le<uint64_t>(mem.data() + 8, record_size_for(max_datagram));
  store_le<uint64_t>(mem.data() + 16, data_bytes);
  store_le<uint64_t>(mem.data() + 24, kMagic);
  store_le<uint64_t>(mem.data() + 32, index_entries(data_bytes));
  store_le<uint64_t>(mem.data() + 40, data_offset(data_bytes));
}

bool TermLog::adoptable(std::span<const std::byte> mem, size_t max_datagram) noexcept {
  if (mem.size() < kControlSize) return false;
  const std::byte* b = mem.data();
  const uint64_t max_record = load_le<uint64_t>(b + 8), data = load_le<uint64_t>(b + 16);
  const uint64_t entries = load_le<uint64_t>(b + 32), data_off = load_le<uint64_t>(b + 40);
  return load_le<uint64_t>(b + 24) == kMagic && max_record >= record_size_for(max_datagram) &&
         max_record % 64 == 0 && data % 64 == 0 && data / 4 >= max_record && entries == index_entries(data) &&
         data_off == data_offset(data) && memory_for(data) <= mem.size();
}

TermLog::TermLog(std::span<std::byte> mem, size_t max_datagram) noexcept : base_(mem.data()) {
  max_record_ = load_le<uint64_t>(base_ + 8);
  data_bytes_ = load_le<uint64_t>(base_ + 16);
  entries_ = load_le<uint64_t>(base_ + 32);
  max_len_ = max_datagram;
  index_ = base_ + kControlSize;
  idx_end_ = index_ + entries_ * 8;
  data_ = base_ + load_le<uint64_t>(base_ + 40);
  pos_ = 0;
  off_ = 0;
  cursor_seq_ = 1;
  idx_ = index_ + 8 * (1 % entries_);
  last_ = data_;
  // The first record's reach, and its "not yet" word.
  reach_ = max_record_;
  horizon_ = 0;
  raise_horizon();
  record::seq_word(data_).store(0, std::memory_order_relaxed);
}

void TermLog::raise_horizon() noexcept {
  // A sixteenth of the data past what is needed now: the word is stored about
  // sixteen times a lap, so readers that check it per datagram find its line
  // in their own cache. Readers treat a record within that distance of being
  // reclaimed as lost already: a reader that far behind is being lapped.
  const uint64_t step = (data_bytes_ / 16 + 63) & ~uint64_t{63};
  horizon_ = reach_ + step;
  record::word(base_).store(horizon_, std::memory_order_relaxed);
  // The horizon before any byte under it: a reader that copied a byte
  // stored after this sees the raised horizon on its check.
  record::claim_fence();
}

void TermLog::seek_index(uint64_t seq) noexcept {
  cursor_seq_ = seq;
  idx_ = index_ + 8 * (seq % entries_);
}

const std::byte* TermLog::held_record(uint64_t seq) const noexcept {
  if (newest_ - seq >= entries_) return nullptr;  // its index entry is reused
  const uint64_t pos = record::word(index_ + 8 * (seq % entries_)).load(std::memory_order_relaxed);
  // Reclaimed once the writer may store at pos + data_bytes or past it.
  if (pos + data_bytes_ < reach_ || pos >= reach_) return nullptr;
  // Only where the writer puts records (the index is shared memory).
  const size_t off = static_cast<size_t>(pos % data_bytes_);
  if (off % 64 != 0 || off + max_record_ > data_bytes_) return nullptr;
  return data_ + off;
}

uint64_t TermLog::oldest() const noexcept {
  if (newest_ == 0) return 0;
  auto held = [&](uint64_t s) {
    const std::byte* r = s == newest_ ? last_ : held_record(s);
    return r != nullptr && record::seq_word(r).load(std::memory_order_relaxed) == s;
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
