// SlotLog: fixed slots addressed by sequence. A datagram is held
// until exactly `slots` later sequences have been claimed; the layout is what
// a remote RDMA reader computes from a sequence number alone.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "mdcast/core/bytes.hpp"
#include "mdcast/history/slot_log.hpp"
#include "support.hpp"
#include "ring_support.hpp"

namespace mdcast::test {
namespace {

using history::SlotLog;

struct alignas(64) Memory {
  explicit Memory(size_t n) : bytes(std::make_unique<std::byte[]>(n + 64)), size(n) {}
  std::span<std::byte> span() {
    auto* p = bytes.get();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    return {p, size};
  }
  std::unique_ptr<std::byte[]> bytes;
  size_t size;
};


TEST(SlotLog, Sizing) {
  EXPECT_EQ(SlotLog::slot_size_for(1472), 1536u);  // 16 + 1472 rounded up to 64
  EXPECT_EQ(SlotLog::slot_size_for(48), 64u);
  EXPECT_EQ(SlotLog::slot_size_for(49), 128u);
  EXPECT_EQ(SlotLog::memory_for(0, 1472), 64u + 4 * 1536) << "at least 4 slots";
  EXPECT_EQ(SlotLog::memory_for(10 * 1536 + 100, 1472), 64u + 10 * 1536);
}

TEST(SlotLog, ControlBlockAndSlotOffsets) {
  Memory m(SlotLog::memory_for(0, 256));
  SlotLog r(m.span(), 256);
  EXPECT_EQ(r.slots(), 4u);
  EXPECT_EQ(r.slot_size(), 320u);
  EXPECT_EQ(r.memory(), m.span().data());
  const std::byte* base = m.span().data();
  EXPECT_EQ(load_le<uint64_t>(base + 8), 320u);
  EXPECT_EQ(load_le<uint64_t>(base + 16), 4u);
  EXPECT_EQ(load_le<uint64_t>(base + 24), SlotLog::kMagic);
  for (uint64_t s = 1; s < 20; ++s) EXPECT_EQ(r.slot_offset(s), 64 + (s % 4) * 320);
  // claim() publishes the reserved sequence first; the slot header shows the
  // sequence and length only once committed.
  std::byte* p = r.claim(1);
  EXPECT_EQ(load_le<uint64_t>(base), 1u);
  EXPECT_EQ(p, base + r.slot_offset(1) + SlotLog::kSlotHeader);
  EXPECT_EQ(load_le<uint64_t>(base + r.slot_offset(1)), 1u | SlotLog::kClaimed) << "claimed, not yet valid";
  EXPECT_TRUE(r.get(1).empty());
  r.commit(1, 100);
  EXPECT_EQ(load_le<uint64_t>(base + r.slot_offset(1)), 1u);
  EXPECT_EQ(load_le<uint32_t>(base + r.slot_offset(1) + 8), 100u);
}

TEST(SlotLog, EmptyRingHoldsNothing) {
  Memory m(SlotLog::memory_for(0, 256));
  SlotLog r(m.span(), 256);
  EXPECT_EQ(r.oldest(), 0u);
  EXPECT_EQ(r.newest(), 0u);
  for (uint64_t s : {0, 1, 2, 100}) EXPECT_TRUE(r.get(s).empty()) << s;
}

TEST(SlotLog, ClaimCommitGet) {
  Memory m(SlotLog::memory_for(0, 256));
  SlotLog r(m.span(), 256);
  put(r, 1, 40);
  EXPECT_EQ(r.oldest(), 1u);
  EXPECT_EQ(r.newest(), 1u);
  EXPECT_TRUE(holds(r, 1, 40));
  // A claimed but uncommitted datagram is not served.
  std::byte* p = r.claim(2);
  std::memset(p, 0xaa, 50);
  EXPECT_TRUE(r.get(2).empty());
  EXPECT_EQ(r.newest(), 1u);
  r.commit(2, 50);
  EXPECT_EQ(r.get(2).size(), 50u);
  EXPECT_EQ(r.newest(), 2u);
  EXPECT_TRUE(r.get(0).empty());
  EXPECT_TRUE(r.get(3).empty());
}

TEST(SlotLog, WraparoundInvalidatesExactlyOneSlotPerClaim) {
  Memory m(SlotLog::memory_for(0, 256));
  SlotLog r(m.span(), 256);
  const uint64_t n = r.slots();
  for (uint64_t s = 1; s <= n; ++s) put(r, s, static_cast<uint16_t>(40 + s));
  for (uint64_t s = 1; s <= n; ++s) EXPECT_TRUE(holds(r, s, static_cast<uint16_t>(40 + s))) << s;
  EXPECT_EQ(r.oldest(), 1u);
  for (uint64_t next = n + 1; next <= 10 * n; ++next) {
    // Claiming `next` reuses the slot of next - n and nothing else.
    (void)r.claim(next);
    EXPECT_EQ(r.oldest(), next - n + 1);
    EXPECT_TRUE(r.get(next - n).empty()) << next;
    for (uint64_t s = next - n + 1; s < next; ++s)
      EXPECT_TRUE(holds(r, s, static_cast<uint16_t>(40 + s % 100))) << "lost " << s << " at " << next;
    std::byte* p = r.claim(next);  // claiming again is harmless
    for (uint16_t i = 0; i < 40 + next % 100; ++i) p[i] = std::byte(static_cast<uint8_t>(next * 31 + i));
    r.commit(next, static_cast<uint16_t>(40 + next % 100));
    EXPECT_EQ(r.newest(), next);
    EXPECT_TRUE(holds(r, next, static_cast<uint16_t>(40 + next % 100)));
  }
}

// The writer steps a cursor instead of dividing: every slot it hands out
// must still be the one slot_offset() names (what RDMA and shm readers
// compute), across laps of a ring whose slot count is no power of two, and
// after a claim out of turn.
TEST(SlotLog, RunningCursorLandsWhereTheSequenceSays) {
  const size_t slot = SlotLog::slot_size_for(256);
  Memory m(SlotLog::kControlSize + 7 * slot);
  SlotLog r(m.span(), 256);
  ASSERT_EQ(r.slots(), 7u);
  std::byte* const base = m.span().data();
  auto expect_at = [&](uint64_t seq, const std::byte* p) {
    EXPECT_EQ(p, base + SlotLog::kControlSize + (seq % 7) * slot + SlotLog::kSlotHeader)
        << "seq " << seq;
  };
  for (uint64_t s = 1; s <= 5 * 7 + 3; ++s) {
    std::byte* p = r.claim(s);
    expect_at(s, p);
    p[0] = std::byte{static_cast<uint8_t>(s)};
    r.commit(s, 1);
    ASSERT_EQ(r.get(s).size(), 1u);
    EXPECT_EQ(r.get(s)[0], std::byte{static_cast<uint8_t>(s)});
    EXPECT_EQ(load_le<uint64_t>(base + r.slot_offset(s)), s) << "the seq word sits in seq's slot";
  }
  // Out of turn (a writer that skipped ahead): computed, and the cursor
  // follows from there.
  for (uint64_t s : {100u, 101u, 102u, 250u, 251u}) {
    std::byte* p = r.claim(s);
    expect_at(s, p);
    r.commit(s, 2);
    EXPECT_EQ(r.get(s).size(), 2u) << s;
  }
  // Claimed, then claimed again before the commit: the same slot.
  expect_at(252, r.claim(252));
  expect_at(252, r.claim(252));
  r.commit(252, 3);
  EXPECT_EQ(r.get(252).size(), 3u);
  expect_at(253, r.claim(253));
}

TEST(SlotLog, SlotHeaderGuardsAgainstStaleReads) {
  // A slot whose header names another sequence is not served even if the
  // range check passes (a torn or recycled slot).
  Memory m(SlotLog::memory_for(0, 256));
  SlotLog r(m.span(), 256);
  for (uint64_t s = 1; s <= 3; ++s) put(r, s, 10);
  store_le<uint64_t>(m.span().data() + r.slot_offset(2), 6);
  EXPECT_TRUE(r.get(2).empty());
  EXPECT_TRUE(holds(r, 3, 10));
}

// Memory already formatted keeps its geometry when its slots are large
// enough (readers attached to it compute addresses from it); slots too small
// for the datagrams are formatted anew.
TEST(SlotLog, AdoptsAFormattedGeometryOnlyIfItsSlotsFit) {
  Memory m(SlotLog::memory_for(8 * 1024, 256));
  SlotLog::format(m.span(), 1024);
  SlotLog big(m.span(), 256);
  EXPECT_EQ(big.slot_size(), 1024u);
  EXPECT_EQ(big.slots(), (m.size - 64) / 1024);
  SlotLog small(m.span(), 2000);
  EXPECT_EQ(small.slot_size(), SlotLog::slot_size_for(2000));
  EXPECT_EQ(load_le<uint64_t>(m.span().data() + 8), SlotLog::slot_size_for(2000)) << "formatted anew";
  EXPECT_EQ(load_le<uint64_t>(m.span().data() + 24), SlotLog::kMagic);
}

}  // namespace
}  // namespace mdcast::test
