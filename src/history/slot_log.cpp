// Setting up fixed slots: adopting a formatted control block or writing one.
#include "mdcast/history/slot_log.hpp"

#include "mdcast/core/bytes.hpp"

namespace mdcast::history {

void SlotLog::format(std::span<std::byte> mem, size_t slot_size) noexcept {
  store_le<uint64_t>(mem.data() + 8, slot_size);
  store_le<uint64_t>(mem.data() + 16, (mem.size() - kControlSize) / slot_size);
  store_le<uint64_t>(mem.data() + 24, kMagic);
}

SlotLog::SlotLog(std::span<std::byte> mem, size_t max_datagram) noexcept : base_(mem.data()) {
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

}  // namespace mdcast::history
