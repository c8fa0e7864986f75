// fuzz_snapshot_apply: arbitrary message runs applied to a BookSet the way a
// subscriber applies them - snapshot chunks (clear on chunk 0, add every
// order, set status and sequence) and live market data (BookSet::apply) -
// with small capacities so the index, the level arrays and the pools run
// full. After every message the book must still agree with itself:
// checksums and levels recomputed from the orders, the index finding every
// order, refused messages changing nothing.
//
// Input: a message run (validated with validate_message_run, as snapshot
// data frames are); byte 0 picks the capacities.
#include "fuzz_support.hpp"
#include "mdcast/wire/datagram.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const uint8_t sel = in.u8();
  const book::BookConfig cfg{4, sel & 1 ? 3u : 64u, sel & 2 ? 1u : 8u};
  book::BookSet b(cfg);
  const auto run = in.rest();
  if (validate_message_run(run.data(), run.size()) < 0) return 0;
  MessageCursor cur(run.data(), run.size());
  MessageView v;
  int steps = 0;
  while (cur.next(v)) {
    const MessageCheck c = validate_message(v.data(), v.size());
    if (c != MessageCheck::kOk) continue;  // unknown types are skipped
    if (!is_market_data(v.type())) continue;
    const uint32_t inst = v.instrument();
    if (!b.valid_instrument(inst)) continue;
    if (v.type() == MsgType::kSnapshotChunk) {
      const SnapshotChunkView ch(v);
      if (ch.chunk_index() == 0) b.clear(inst);
      for (uint16_t i = 0; i < ch.order_count(); ++i) {
        const auto e = ch.order(i);
        const uint64_t before = b.global_checksum();
        const uint32_t count = b.order_count();
        if (b.add_order(inst, e.order_id, e.price, e.quantity, e.side) != book::ApplyResult::kOk) {
          FUZZ_CHECK(b.global_checksum() == before && b.order_count() == count, "refused add changed the book");
        }
      }
      b.set_status(inst, ch.status());
      b.set_instrument_seq(inst, ch.instrument_seq());
    } else {
      const Message m = decode(v);
      const uint64_t before = b.global_checksum();
      const uint32_t count = b.order_count();
      const book::ApplyResult predicted = b.check(m);
      FUZZ_CHECK(b.global_checksum() == before && b.order_count() == count, "check() changed the book");
      const book::ApplyResult r = b.apply(m);
      FUZZ_CHECK(r == predicted, "check() said %d, apply() %d", static_cast<int>(predicted), static_cast<int>(r));
      if (r != book::ApplyResult::kOk) {
        FUZZ_CHECK(b.global_checksum() == before && b.order_count() == count, "refused message changed the book");
      }
    }
    // Full recomputation is O(orders); keep long runs fast.
    if (++steps % 8 == 0) check_books(b);
  }
  check_books(b);
  return 0;
}
