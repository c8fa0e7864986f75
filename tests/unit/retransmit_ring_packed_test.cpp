// RetransmitRing, packed layout (the shm medium's): records back to back,
// an index by sequence, a horizon raised before anything under it is
// written. What the writer holds must be exactly what is not reclaimed, and
// the words readers rely on must say what the layout promises.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "mdcast/history/retransmit_ring.hpp"
#include "ring_support.hpp"

namespace mdcast::test {
namespace {

using history::RetransmitRing;

constexpr size_t kMax = 1024;                                    // largest datagram
constexpr size_t kRecord = history::RetransmitRing::slot_size_for(kMax);  // 1088

struct Ring {
  explicit Ring(size_t data) : data_bytes(data), mem(std::make_unique<std::byte[]>(history::RetransmitRing::packed_memory_for(data) + 64)) {
    auto* p = mem.get();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    span = {p, history::RetransmitRing::packed_memory_for(data)};
    std::memset(span.data(), 0, span.size());
    history::RetransmitRing::format_packed(span, data, kMax);
    ring = history::RetransmitRing(span, kMax);
  }
  uint64_t horizon() const { return history::RetransmitRing::horizon_word(span.data()).load(); }
  uint64_t index(uint64_t seq) const {
    return history::RetransmitRing::index_word(span.data() + history::RetransmitRing::kControlSize +
                                      8 * (seq % history::RetransmitRing::packed_index_entries(data_bytes)))
        .load();
  }
  std::byte* record_at(uint64_t pos) const {
    return span.data() + history::RetransmitRing::packed_data_offset(data_bytes) + pos % data_bytes;
  }
  size_t data_bytes;
  std::unique_ptr<std::byte[]> mem;
  std::span<std::byte> span;
  history::RetransmitRing ring;
};

uint16_t len_of(uint64_t seq) { return static_cast<uint16_t>(40 + (seq * 97) % (kMax - 40)); }

TEST(PackedRing, GeometryAndAdoption) {
  Ring r(16 * kRecord);
  EXPECT_TRUE(r.ring.packed());
  EXPECT_EQ(r.ring.slots(), 16u) << "records of the largest size the data holds";
  EXPECT_EQ(r.ring.slot_size(), kRecord);
  EXPECT_EQ(history::RetransmitRing::packed_data_offset(16 * kRecord) % 4096, 64u) << "data page-aligned after the control line";
  // A record larger than the formatted one does not fit: formatted anew, fixed.
  history::RetransmitRing bigger(r.span, 2 * kMax);
  EXPECT_FALSE(bigger.packed());
}

TEST(PackedRing, RecordsArePackedBackToBack) {
  Ring r(16 * kRecord);
  put(r.ring, 1, 100);  // 16 + 100 -> 128
  put(r.ring, 2, 40);   // 16 + 40 -> 64
  put(r.ring, 3, 1024); // 1088
  EXPECT_EQ(r.index(1), 0u);
  EXPECT_EQ(r.index(2), 128u);
  EXPECT_EQ(r.index(3), 192u);
  EXPECT_EQ(r.ring.get(2).data(), r.record_at(128) + history::RetransmitRing::kSlotHeader);
  for (uint64_t s = 1; s <= 3; ++s) EXPECT_TRUE(holds(r.ring, s, s == 1 ? 100 : s == 2 ? 40 : 1024));
  // Where 4 will go says "not yet" before 3 is published.
  EXPECT_EQ(history::RetransmitRing::seq_word(r.record_at(192 + 1088)).load(), 0u);
}

TEST(PackedRing, ARecordNeverStraddlesTheEnd) {
  Ring r(4 * kRecord);
  // Four largest records fill the data exactly: the fifth starts lap 2 at 0.
  for (uint64_t s = 1; s <= 4; ++s) put(r.ring, s, 1024);
  put(r.ring, 5, 1024);
  EXPECT_EQ(r.index(5), 4u * kRecord) << "lap 2 starts at offset 0";
  Ring q(4 * kRecord + 64);
  for (uint64_t s = 1; s <= 4; ++s) put(q.ring, s, 1024);
  put(q.ring, 5, 40);  // 64 bytes are left before the end: less than a largest record
  EXPECT_EQ(q.index(5), 4u * kRecord + 64) << "skipped the tail that cannot hold a largest record";
  EXPECT_EQ(q.index(5) % (4 * kRecord + 64), 0u);
}

TEST(PackedRing, HoldsExactlyWhatIsNotReclaimed) {
  Ring r(16 * kRecord);
  std::vector<uint64_t> pos;
  pos.push_back(0);
  for (uint64_t s = 1; s <= 2000; ++s) {
    put(r.ring, s, len_of(s));
    const uint64_t oldest = r.ring.oldest();
    ASSERT_GT(oldest, 0u);
    ASSERT_TRUE(holds(r.ring, oldest, len_of(oldest))) << s;
    ASSERT_TRUE(holds(r.ring, s, len_of(s)));
    if (oldest > 1) {
      ASSERT_TRUE(r.ring.get(oldest - 1).empty()) << "reclaimed " << oldest - 1 << " at " << s;
    }
    // Every record under the horizon: nothing the writer may store next is above it.
    ASSERT_GE(r.horizon(), r.index(s) + history::RetransmitRing::record_span(len_of(s)) + kRecord);
  }
  // Smaller records than the largest: more held than slots().
  EXPECT_GT(r.ring.newest() - r.ring.oldest() + 1, r.ring.slots());
}

TEST(PackedRing, TheHorizonMovesRarely) {
  Ring r(64 * kRecord);
  uint64_t changes = 0, last = r.horizon();
  for (uint64_t s = 1; s <= 64 * 10; ++s) {
    put(r.ring, s, 1024);
    if (r.horizon() != last) ++changes;
    last = r.horizon();
  }
  // Ten laps, raised a sixteenth of a lap at a time: about 160 stores for 640 datagrams.
  EXPECT_LE(changes, 10u * 16 + 2);
  EXPECT_GE(changes, 10u * 16 / 2);
}

TEST(PackedRing, AnIndexReusedByALaterSequenceIsNotServed) {
  // Tiny records: the index (one entry per 64 bytes) bounds the history.
  Ring r(4 * kRecord);
  const uint64_t entries = history::RetransmitRing::packed_index_entries(4 * kRecord);
  for (uint64_t s = 1; s <= 3 * entries; ++s) put(r.ring, s, 40);
  const uint64_t newest = r.ring.newest();
  EXPECT_TRUE(r.ring.get(newest - entries).empty());
  EXPECT_GE(r.ring.oldest(), newest - entries + 1);
  EXPECT_TRUE(holds(r.ring, r.ring.oldest(), 40));
}

}  // namespace
}  // namespace mdcast::test
