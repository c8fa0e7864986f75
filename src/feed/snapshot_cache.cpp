#include "mdcast/feed/snapshot_cache.hpp"

#include <algorithm>
#include <cstring>

#include "mdcast/wire/messages.hpp"

namespace mdcast::feed {

using namespace wire;

namespace {

bool has_history(const book::OrderBook& b) noexcept { return b.instrument_seq() > 0 || b.defined(); }

uint32_t chunks_for(uint32_t orders) noexcept {
  return orders == 0 ? 1 : (orders + SnapshotCache::kMaxOrdersPerChunk - 1) / SnapshotCache::kMaxOrdersPerChunk;
}

}  // namespace

size_t SnapshotCache::run_size(const book::OrderBook& b) noexcept {
  if (!has_history(b)) return 0;
  return (b.defined() ? instrument_def::kSize : 0) + size_t{chunks_for(b.order_count())} * snapshot_chunk::kOrders +
         size_t{b.order_count()} * snapshot_chunk::kEntrySize;
}

std::shared_ptr<const SnapshotCache> SnapshotCache::build(const book::BookSet& books, uint32_t first, uint32_t count,
                                                          uint64_t snapshot_seq, Session session, uint64_t built_ns) {
  // make_shared needs a public constructor; the copy is only ever made here.
  std::shared_ptr<SnapshotCache> k(new SnapshotCache());
  k->seq_ = snapshot_seq;
  k->session_ = session;
  k->built_ns_ = built_ns;
  k->first_ = first;
  k->entries_.resize(count);
  // Sized exactly first: one allocation, no copy while the runs are written.
  size_t total = 0;
  for (uint32_t j = 0; j < count; ++j) total += run_size(books.book(first + j));
  k->data_.resize(total);

  std::byte* const base = k->data_.data();
  size_t at = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const uint32_t i = first + j;
    const book::OrderBook& ob = books.book(i);
    Entry& e = k->entries_[j];
    e.offset = at;
    e.iseq = ob.instrument_seq();
    if (!has_history(ob)) continue;
    if (ob.defined()) {
      Message d;
      d.type = MsgType::kInstrumentDefinition;
      d.instrument = i;
      d.instrument_seq = ob.instrument_seq();
      d.definition = ob.definition();
      encode(d, base + at);
      at += instrument_def::kSize;
    }
    const uint32_t n = ob.order_count();
    const auto chunks = static_cast<uint16_t>(chunks_for(n));
    uint32_t remaining = n;
    uint16_t chunk = 0;
    size_t in_chunk = 0;
    std::byte* cur = nullptr;
    auto start_chunk = [&] {
      const auto orders = static_cast<uint16_t>(std::min(remaining, kMaxOrdersPerChunk));
      cur = base + at;
      // (returns the whole chunk's length; its orders are counted as they are written)
      write_snapshot_chunk_header(cur, i, ob.instrument_seq(), snapshot_seq, chunk, chunks, orders, ob.status());
      at += snapshot_chunk::kOrders;
      in_chunk = 0;
    };
    start_chunk();
    books.for_each_order(i, [&](const book::Order& o) {
      if (in_chunk == kMaxOrdersPerChunk) {
        at += in_chunk * snapshot_chunk::kEntrySize;  // the next chunk follows this one's orders
        ++chunk;
        start_chunk();
      }
      write_snapshot_entry(cur, in_chunk++, {o.id, o.price, o.quantity, o.side});
      --remaining;
    });
    at += in_chunk * snapshot_chunk::kEntrySize;
    e.length = static_cast<uint32_t>(at - e.offset);
  }
  return k;
}

void SnapshotCache::write_empty_chunk(std::byte* out, uint32_t inst) const noexcept {
  // A book with no history is in its initial state: empty, pre-open.
  write_snapshot_chunk_header(out, inst, 0, seq_, 0, 1, 0, TradingStatus::kPreOpen);
}

size_t SnapshotCache::append(SnapshotDataBuilder& b, std::span<const std::byte> run, size_t offset,
                             size_t frame_bytes) {
  // Messages are length-prefixed (u16): walk them, then copy the batch at once.
  size_t end = offset;
  while (end + 2 <= run.size()) {
    const size_t len = load_le<uint16_t>(run.data() + end);
    const bool first = b.empty() && end == offset;
    if (!first && b.size() + (end - offset) + len > frame_bytes) break;
    end += len;
  }
  if (end > offset) std::memcpy(b.reserve(end - offset), run.data() + offset, end - offset);
  return end;
}

}  // namespace mdcast::feed
