// A term log reader's moves other than by one record. Each is backed by what
// the records themselves hold - an index entry and the header it points at
// agreeing - since any word of the shared memory may be corrupt or forged.
#include "mdcast/history/term_reader.hpp"

namespace mdcast::history {

// Where the writer put a record only: 64-byte aligned, whole before the end,
// claimed under the horizon.
const std::byte* TermReader::indexed(uint64_t seq, uint64_t& pos) const noexcept {
  pos = record::word(index_ + 8 * (seq % entries_)).load(std::memory_order_acquire);
  const size_t off = static_cast<size_t>(pos % data_bytes_);
  if (off % 64 != 0 || off + max_record_ > data_bytes_) return nullptr;
  if (pos >= horizon_word().load(std::memory_order_acquire)) return nullptr;
  return data_ + off;
}

bool TermReader::locate(uint64_t seq, uint64_t& pos) const noexcept {
  const std::byte* r = indexed(seq, pos);
  if (r == nullptr || record::seq_word(r).load(std::memory_order_acquire) != seq) return false;
  // Acquire, so that the horizon is read after the whole header.
  if (record::len_word(r).load(std::memory_order_acquire) > max_datagram_) return false;
  // Not reclaimed (the header just read might be a later lap's bytes).
  return horizon_word().load(std::memory_order_relaxed) <= pos + data_bytes_;
}

bool TermReader::reached(uint64_t seq) const noexcept {
  uint64_t pos = 0;
  const std::byte* r = indexed(seq, pos);
  if (r == nullptr) return false;
  const uint64_t s = record::seq_word(r).load(std::memory_order_acquire) & ~record::kClaimed;
  return s >= seq && (s - seq) % entries_ == 0;
}

uint64_t TermReader::newest_indexed() const noexcept {
  uint64_t best = 0;
  for (size_t i = 0; i < entries_; ++i) {
    uint64_t pos = 0;
    const std::byte* r = indexed(i, pos);
    if (r == nullptr) continue;
    const uint64_t q = record::seq_word(r).load(std::memory_order_acquire);
    if (q != 0 && (q & record::kClaimed) == 0 && q % entries_ == i && q > best) best = q;
  }
  return best;
}

bool TermReader::seek_after(uint64_t seq) noexcept {
  if (seq == 0) {
    seek(1, 0);
    return true;
  }
  uint64_t pos = 0;
  if (!locate(seq, pos)) return false;
  const size_t len = record::len_word(data_ + pos % data_bytes_).load(std::memory_order_relaxed);
  seek(seq, pos);
  advance(len);
  return true;
}

bool TermReader::resume_point(uint64_t lo, uint64_t hi, uint64_t& seq, uint64_t& pos) const noexcept {
  if (hi < lo) return false;
  if (hi - lo >= entries_) lo = hi - entries_ + 1;
  // Far enough from being reclaimed that the writer will not lap us again at
  // once (an eighth of a lap), near enough to lose little.
  const uint64_t h = horizon_word().load(std::memory_order_acquire);
  const uint64_t keep = data_bytes_ - data_bytes_ / 8;
  const uint64_t floor = h > keep ? h - keep : 0;
  auto ok = [&](uint64_t t, uint64_t& at) { return locate(t, at) && at >= floor; };
  uint64_t at = 0;
  if (!ok(hi, at)) return false;  // not even the newest: nothing here proves where the writer is
  seq = hi;
  pos = at;
  // Positions grow with sequences: the first one far enough ahead, by bisection.
  while (lo < seq) {
    const uint64_t mid = lo + (seq - lo) / 2;
    if (ok(mid, at)) {
      seq = mid;
      pos = at;
    } else {
      lo = mid + 1;
    }
  }
  return true;
}

}  // namespace mdcast::history
