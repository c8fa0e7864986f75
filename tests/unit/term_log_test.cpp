// TermLog (the shm medium's): records back to back, an index by sequence, a
// horizon raised before anything under it is written. What the writer holds
// must be exactly what is not reclaimed, and the words readers rely on must
// say what the layout promises, byte for byte (readers of an older build
// read a newer writer's log). Also which log the engine's RetransmitLog
// adopts.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/history/retransmit_log.hpp"
#include "mdcast/history/term_log.hpp"
#include "ring_support.hpp"

namespace mdcast::test {
namespace {

using history::RetransmitLog;
using history::TermLog;

constexpr size_t kMax = 1024;                                    // largest datagram
constexpr size_t kRecord = TermLog::record_size_for(kMax);  // 1088

struct Ring {
  explicit Ring(size_t data) : data_bytes(data), mem(std::make_unique<std::byte[]>(TermLog::memory_for(data) + 64)) {
    auto* p = mem.get();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    span = {p, TermLog::memory_for(data)};
    std::memset(span.data(), 0, span.size());
    TermLog::format(span, data, kMax);
    ring = TermLog(span, kMax);
  }
  // The words as a reader of any build finds them.
  uint64_t horizon() const { return load_le<uint64_t>(span.data()); }
  uint64_t index(uint64_t seq) const {
    return load_le<uint64_t>(span.data() + 64 + 8 * (seq % (data_bytes / 64)));
  }
  std::byte* record_at(uint64_t pos) const { return span.data() + TermLog::data_offset(data_bytes) + pos % data_bytes; }
  size_t data_bytes;
  std::unique_ptr<std::byte[]> mem;
  std::span<std::byte> span;
  TermLog ring;
};

uint16_t len_of(uint64_t seq) { return static_cast<uint16_t>(40 + (seq * 97) % (kMax - 40)); }

TEST(TermLog, ControlBlockAndGeometry) {
  Ring r(16 * kRecord);
  const std::byte* b = r.span.data();
  EXPECT_EQ(load_le<uint64_t>(b + 8), kRecord);
  EXPECT_EQ(load_le<uint64_t>(b + 16), 16 * kRecord);
  EXPECT_EQ(load_le<uint64_t>(b + 24), 0x64656b63'6170646dull) << "\"mdpacked\"";
  EXPECT_EQ(load_le<uint64_t>(b + 32), 16 * kRecord / 64);
  EXPECT_EQ(load_le<uint64_t>(b + 40), 4096u + 64) << "control line, index padded to 4 KiB";
  EXPECT_EQ(TermLog::data_offset(16 * kRecord) % 4096, 64u) << "data page-aligned after the control line";
  EXPECT_EQ(TermLog::memory_for(16 * kRecord), 4096u + 64 + 16 * kRecord);
  EXPECT_EQ(r.ring.slots(), 16u) << "records of the largest size the data holds";
  EXPECT_EQ(r.ring.slot_size(), kRecord);
  EXPECT_EQ(r.ring.memory(), b);
  EXPECT_TRUE(TermLog::adoptable(r.span, kMax));
  EXPECT_TRUE(TermLog::adoptable(r.span, 40)) << "smaller datagrams fit the records";
  EXPECT_FALSE(TermLog::adoptable(r.span, 2 * kMax)) << "larger ones do not";
  EXPECT_FALSE(TermLog::adoptable(r.span.first(r.span.size() - 64), kMax)) << "memory shorter than its geometry";
}

// The engine adopts whichever log the medium formatted: a term log whose
// records fit its datagrams; anything else becomes fixed slots.
TEST(RetransmitLog, AdoptsTheLogTheMediumFormatted) {
  Ring r(16 * kRecord);
  RetransmitLog packed(r.span, kMax);
  EXPECT_EQ(packed.layout(), RetransmitLog::Layout::kTerm);
  EXPECT_EQ(packed.slots(), 16u);
  EXPECT_EQ(packed.slot_size(), kRecord);
  put(packed, 1, 100);
  put(packed, 2, 40);
  EXPECT_EQ(r.index(2), 128u) << "packed where TermLog packs";
  EXPECT_TRUE(holds(packed, 1, 100));
  EXPECT_EQ(packed.oldest(), 1u);
  EXPECT_EQ(packed.newest(), 2u);
  // A record larger than the formatted one does not fit: formatted anew, fixed.
  RetransmitLog bigger(r.span, 2 * kMax);
  EXPECT_EQ(bigger.layout(), RetransmitLog::Layout::kSlots);
  EXPECT_EQ(load_le<uint64_t>(r.span.data() + 24), 0x676e6972'7473646dull) << "\"mdstring\"";
  EXPECT_EQ(bigger.slot_size(), TermLog::record_size_for(2 * kMax));
  put(bigger, 1, 2000);
  EXPECT_TRUE(holds(bigger, 1, 2000));
  // Memory nobody formatted: the engine's own, fixed slots.
  std::vector<std::byte> zeros(RetransmitLog::memory_for(0, 256) + 64);
  auto* p = zeros.data() + (64 - reinterpret_cast<uintptr_t>(zeros.data()) % 64) % 64;
  RetransmitLog own({p, RetransmitLog::memory_for(0, 256)}, 256);
  EXPECT_EQ(own.layout(), RetransmitLog::Layout::kSlots);
  EXPECT_EQ(own.slots(), 4u);
  // Copies keep the log they hold (the engine assigns one at setup).
  RetransmitLog copy;
  copy = packed;
  EXPECT_EQ(copy.layout(), RetransmitLog::Layout::kTerm);
  EXPECT_TRUE(holds(copy, 2, 40));
}

TEST(TermLog, RecordsArePackedBackToBack) {
  Ring r(16 * kRecord);
  put(r.ring, 1, 100);  // 16 + 100 -> 128
  put(r.ring, 2, 40);   // 16 + 40 -> 64
  put(r.ring, 3, 1024); // 1088
  EXPECT_EQ(r.index(1), 0u);
  EXPECT_EQ(r.index(2), 128u);
  EXPECT_EQ(r.index(3), 192u);
  EXPECT_EQ(r.ring.get(2).data(), r.record_at(128) + TermLog::kRecordHeader);
  for (uint64_t s = 1; s <= 3; ++s) EXPECT_TRUE(holds(r.ring, s, s == 1 ? 100 : s == 2 ? 40 : 1024));
  // Where 4 will go says "not yet" before 3 is published.
  EXPECT_EQ(load_le<uint64_t>(r.record_at(192 + 1088)), 0u);
}

TEST(TermLog, ARecordNeverStraddlesTheEnd) {
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

TEST(TermLog, HoldsExactlyWhatIsNotReclaimed) {
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
    ASSERT_GE(r.horizon(), r.index(s) + (16 + len_of(s) + 63) / 64 * 64 + kRecord);
  }
  // Smaller records than the largest: more held than slots().
  EXPECT_GT(r.ring.newest() - r.ring.oldest() + 1, r.ring.slots());
}

TEST(TermLog, TheHorizonMovesRarely) {
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

TEST(TermLog, AnIndexReusedByALaterSequenceIsNotServed) {
  // Tiny records: the index (one entry per 64 bytes) bounds the history.
  Ring r(4 * kRecord);
  const uint64_t entries = TermLog::index_entries(4 * kRecord);
  for (uint64_t s = 1; s <= 3 * entries; ++s) put(r.ring, s, 40);
  const uint64_t newest = r.ring.newest();
  EXPECT_TRUE(r.ring.get(newest - entries).empty());
  EXPECT_GE(r.ring.oldest(), newest - entries + 1);
  EXPECT_TRUE(holds(r.ring, r.ring.oldest(), 40));
}

}  // namespace
}  // namespace mdcast::test
