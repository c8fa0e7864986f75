#include "mdcast/feed/reassembler.hpp"

#include <cstring>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::feed {

Reassembler::Reassembler(uint32_t slots, size_t max_message)
    : n_(slots), max_message_(max_message), slots_(std::make_unique<Slot[]>(slots)),
      mem_(std::make_unique<std::byte[]>(size_t{slots} * max_message)) {
  if (slots == 0) fail("max_reassemblies must be at least 1");
  for (uint32_t i = 0; i < n_; ++i) slots_[i].buf = mem_.get() + size_t{i} * max_message_;
}

void Reassembler::reset() noexcept {
  for (uint32_t i = 0; i < n_; ++i) slots_[i].used = false;
}

uint32_t Reassembler::open() const noexcept {
  uint32_t k = 0;
  for (uint32_t i = 0; i < n_; ++i) k += slots_[i].used;
  return k;
}

Reassembler::Result Reassembler::add(const wire::FragmentView& f, std::span<const std::byte>& out) noexcept {
  const auto piece = f.payload();
  if (f.index() == 0) {
    if (f.total_length() > max_message_) return Result::kDropped;
    // Evict the oldest open reassembly if all slots are busy.
    Slot* s = nullptr;
    for (uint32_t i = 0; i < n_; ++i) {
      Slot& c = slots_[i];
      if (c.used && c.message_id == f.message_id()) c.used = false;  // restarted id: drop the stale one
      if (!c.used) {
        if (!s) s = &c;
      }
    }
    bool evicted = false;
    if (!s) {
      s = &slots_[0];
      for (uint32_t i = 1; i < n_; ++i)
        if (slots_[i].age < s->age) s = &slots_[i];
      evicted = true;
    }
    *s = Slot{true, f.message_id(), 0, f.count(), f.total_length(), 0, ++clock_, s->buf};
    if (piece.size() > s->total) {
      s->used = false;
      return Result::kDropped;
    }
    std::memcpy(s->buf, piece.data(), piece.size());
    s->have = static_cast<uint32_t>(piece.size());
    s->next_index = 1;
    return evicted ? Result::kDropped : Result::kIncomplete;
  }
  for (uint32_t i = 0; i < n_; ++i) {
    Slot& s = slots_[i];
    if (!s.used || s.message_id != f.message_id()) continue;
    if (f.index() != s.next_index || f.count() != s.count || f.total_length() != s.total ||
        piece.size() > s.total - s.have) {
      s.used = false;
      return Result::kDropped;
    }
    std::memcpy(s.buf + s.have, piece.data(), piece.size());
    s.have += static_cast<uint32_t>(piece.size());
    ++s.next_index;
    if (s.next_index < s.count) return Result::kIncomplete;
    s.used = false;
    if (s.have != s.total) return Result::kDropped;
    out = {s.buf, s.total};
    return Result::kComplete;
  }
  return Result::kDropped;  // orphan: its first fragment was never seen
}

Reassembler::Result Reassembler::add_checked(const wire::FragmentView& f, wire::MessageView& whole) noexcept {
  std::span<const std::byte> bytes;
  const Result r = add(f, bytes);
  if (r != Result::kComplete) return r;
  const uint16_t len = bytes.size() >= 2 ? load_le<uint16_t>(bytes.data()) : uint16_t{0};
  if (len != bytes.size() || wire::validate_message(bytes.data(), len) != wire::MessageCheck::kOk ||
      !wire::is_market_data(static_cast<wire::MsgType>(bytes[wire::msg::kType])) ||
      bytes[wire::msg::kType] == std::byte{static_cast<uint8_t>(wire::MsgType::kSnapshotChunk)})
    return Result::kDropped;
  whole = wire::MessageView(bytes.data(), len);
  return Result::kComplete;
}

}  // namespace mdcast::feed
