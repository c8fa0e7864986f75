// The fault interceptor (media/fault): each fault kind does what the profile
// says, decisions repeat for a seed, heartbeats can be spared, and the hold
// pool is sized so that it never fills and never allocates while polling.
#include "mdcast/media/fault/fault.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "mdcast/wire/protocol.hpp"

// Counts allocations on this thread while armed: proves the data path of the
// interceptor allocates nothing (the test's own bookkeeping is set up before).
namespace {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;
}  // namespace
// Out of line: inlined into a caller, GCC pairs the malloc and free below
// with the `new` it sees there and warns of a mismatch that is not one.
[[gnu::noinline]] void* operator new(size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace mdcast::media::fault {
namespace {

using Bytes = std::vector<std::byte>;

// A datagram with a real header's sequence and flags (what the interceptor
// looks at) and a payload that names it.
Bytes datagram(uint64_t id, bool unsequenced = false, size_t size = 200) {
  Bytes b(size);
  for (size_t i = 0; i < size; ++i) b[i] = std::byte{static_cast<uint8_t>(id * 31 + i)};
  b[wire::dgram::kFlags] = unsequenced ? std::byte{wire::kFlagUnsequenced} : std::byte{0};
  std::memcpy(&b[wire::dgram::kSequence], &id, sizeof id);
  return b;
}
uint64_t id_of(std::span<const std::byte> d) {
  uint64_t id = 0;
  if (d.size() >= wire::dgram::kSequence + sizeof id) std::memcpy(&id, &d[wire::dgram::kSequence], sizeof id);
  return id;
}

// Hands out a prepared list; datagram i arrives at time 1000 + i, on rail
// rails[i] (rail A where rails is shorter).
struct ListSource {
  std::vector<Bytes> items;
  std::vector<RailId> rails;
  size_t next = 0;
  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    size_t n = 0;
    for (; n < budget && next < items.size(); ++n, ++next)
      hand_datagram(fn, std::span<const std::byte>(items[next]), 1000 + next,
                    next < rails.size() ? rails[next] : RailId::kA);
    return n;
  }
  bool block(uint64_t) noexcept { return false; }
};
static_assert(DatagramSource<ListSource>);
static_assert(DatagramSource<FaultySource<ListSource>>);

ListSource numbered(uint64_t n, uint64_t heartbeat_every = 0) {
  ListSource s;
  for (uint64_t i = 1; i <= n; ++i) s.items.push_back(datagram(i, heartbeat_every && i % heartbeat_every == 0));
  return s;
}

struct Got {
  uint64_t id;
  uint64_t rx;
  Bytes bytes;
};

// Everything the interceptor hands over, with whatever it still holds at the end.
std::vector<Got> drain(FaultySource<ListSource>& f, size_t budget = 7) {
  std::vector<Got> out;
  auto fn = [&](std::span<const std::byte> d, uint64_t rx) noexcept { out.push_back({id_of(d), rx, Bytes(d.begin(), d.end())}); };
  while (f.poll(fn, budget) > 0) {}
  f.flush_held(fn, 1'000'000);
  return out;
}

// Each copy keeps the rail it came on, whatever the profile does to it (held
// back, duplicated, altered): an A/B subscriber behind the interceptor counts
// which rail gave each first copy as it would without it.
TEST(Fault, EveryCopyKeepsItsRail) {
  ListSource src;
  for (uint64_t i = 1; i <= 20'000; ++i) {
    // Sequence i on both rails; which one arrives first alternates.
    const bool a_first = (i / 3) % 2 == 0;
    src.items.push_back(datagram(i * 2 + (a_first ? 0 : 1)));
    src.rails.push_back(a_first ? RailId::kA : RailId::kB);
    src.items.push_back(datagram(i * 2 + (a_first ? 1 : 0)));
    src.rails.push_back(a_first ? RailId::kB : RailId::kA);
  }
  FaultProfile p;
  p.reorder = 0.2;
  p.duplicate = 0.1;
  p.loss = 0.05;
  FaultySource f(src, p);
  size_t got = 0, on_b = 0;
  auto fn = [&](std::span<const std::byte> d, uint64_t, RailId rail) noexcept {
    ++got;
    // Id 2i is the rail A copy of sequence i, 2i + 1 the rail B copy.
    EXPECT_EQ(rail, id_of(d) % 2 == 0 ? RailId::kA : RailId::kB) << "copy " << id_of(d);
    on_b += rail == RailId::kB;
  };
  while (f.poll(fn, 7) > 0) {}
  f.flush_held(fn, 1'000'000);
  const auto& c = f.counters();
  EXPECT_GT(c.reordered.get(), 0u);
  EXPECT_GT(c.duplicated.get(), 0u);
  EXPECT_EQ(got, 40'000u - injected_losses(c) + c.duplicated.get());
  EXPECT_NEAR(static_cast<double>(on_b), got / 2.0, got * 0.02) << "both rails' copies came through";
}

TEST(Fault, InactiveProfilePassesTheSourcesOwnBytes) {
  ListSource src = numbered(100);
  FaultySource f(src, FaultProfile{});
  std::vector<const std::byte*> seen;
  while (f.poll([&](std::span<const std::byte> d, uint64_t) noexcept { seen.push_back(d.data()); }, 10) > 0) {}
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], src.items[i].data()) << "no copy when idle";
  EXPECT_EQ(f.counters().offered.get(), 0u) << "not even counted: the fast path is the inner poll";
  EXPECT_EQ(f.hold_pool(), 0u);
}

TEST(Fault, RandomLossLosesThatShare) {
  ListSource src = numbered(100'000);
  FaultProfile p;
  p.loss = 0.1;
  FaultySource f(src, p);
  const auto got = drain(f);
  const auto& c = f.counters();
  EXPECT_EQ(c.offered.get(), 100'000u);
  EXPECT_EQ(got.size() + c.lost.get(), 100'000u);
  EXPECT_NEAR(static_cast<double>(c.lost.get()), 10'000.0, 400.0);
  for (size_t i = 1; i < got.size(); ++i) ASSERT_LT(got[i - 1].id, got[i].id) << "loss alone keeps the order";
}

TEST(Fault, DropEveryNthIsExact) {
  ListSource src = numbered(1000);
  FaultProfile p;
  p.drop_every = 10;
  FaultySource f(src, p);
  const auto got = drain(f);
  EXPECT_EQ(f.counters().every_lost.get(), 100u);
  ASSERT_EQ(got.size(), 900u);
  for (const auto& g : got) EXPECT_NE(g.id % 10, 0u);
}

TEST(Fault, OneBurstRightAfterItsStart) {
  ListSource src = numbered(1000);
  FaultProfile p;
  p.burst_start = 100;
  p.burst_length = 50;
  FaultySource f(src, p);
  const auto got = drain(f);
  EXPECT_EQ(f.counters().burst_lost.get(), 50u);
  ASSERT_EQ(got.size(), 950u);
  for (const auto& g : got) EXPECT_TRUE(g.id <= 100 || g.id > 150) << g.id;
}

TEST(Fault, RepeatedBursts) {
  ListSource src = numbered(10'000);
  FaultProfile p;
  p.burst_start = 1000;
  p.burst_every = 3000;
  p.burst_length = 200;
  FaultySource f(src, p);
  const auto got = drain(f);
  // A burst begins at every datagram burst_start + k * burst_every: 4000,
  // 7000, and 10000 (the last one, so that burst is one datagram long).
  EXPECT_EQ(f.counters().burst_lost.get(), 401u);
  ASSERT_EQ(got.size(), 10'000u - 401u);
  for (const auto& g : got) EXPECT_FALSE((g.id >= 4000 && g.id < 4200) || (g.id >= 7000 && g.id < 7200)) << g.id;
  EXPECT_EQ(got.back().id, 9999u);
}

TEST(Fault, ReorderHoldsEachBackByAtMostItsDepthAndLosesNothing) {
  ListSource src = numbered(20'000);
  FaultProfile p;
  p.reorder = 0.3;
  p.reorder_depth = 6;
  FaultySource f(src, p);
  const auto got = drain(f);
  ASSERT_EQ(got.size(), 20'000u);
  std::vector<int> seen(20'001, 0);
  size_t late = 0;
  for (size_t pos = 0; pos < got.size(); ++pos) {
    const uint64_t id = got[pos].id;
    ++seen[id];
    // Held for k later arrivals, it comes after them: k places late at most.
    EXPECT_LE(pos + 1, id + p.reorder_depth) << id;
    if (pos + 1 > id) ++late;
  }
  for (uint64_t id = 1; id <= 20'000; ++id) ASSERT_EQ(seen[id], 1) << id;
  EXPECT_NEAR(static_cast<double>(f.counters().reordered.get()), 6000.0, 400.0);
  EXPECT_GT(late, 0u);
  EXPECT_EQ(f.counters().hold_pool_full.get(), 0u);
  EXPECT_EQ(f.held(), 0u);
}

TEST(Fault, ReleasedDatagramsCarryTheReleasingArrivalsTime) {
  ListSource src = numbered(2000);
  FaultProfile p;
  p.reorder = 0.5;
  FaultySource f(src, p);
  const auto got = drain(f);
  uint64_t last = 0;
  for (const auto& g : got) {
    EXPECT_GE(g.rx, last) << "receive times never run backwards";
    last = g.rx;
  }
}

TEST(Fault, LostArrivalsReleaseHeldOnes) {
  ListSource src = numbered(10);
  FaultProfile p;
  p.reorder = 1.0;      // every datagram that passes is held ...
  p.reorder_depth = 1;  // ... for exactly one later arrival
  p.burst_start = 1;    // and datagrams 2-6 are lost
  p.burst_length = 5;
  FaultySource f(src, p);
  std::vector<uint64_t> ids;
  std::vector<uint64_t> rx;
  auto fn = [&](std::span<const std::byte> d, uint64_t t) noexcept {
    ids.push_back(id_of(d));
    rx.push_back(t);
  };
  EXPECT_EQ(f.poll(fn, 1), 1u);
  EXPECT_TRUE(ids.empty()) << "datagram 1 is held";
  EXPECT_EQ(f.poll(fn, 1), 1u);
  ASSERT_EQ(ids, std::vector<uint64_t>{1}) << "the lost datagram 2 released it";
  EXPECT_EQ(rx[0], 1001u) << "at datagram 2's arrival";
  EXPECT_EQ(f.counters().burst_lost.get(), 1u);
}

TEST(Fault, FlushHandsOverWhatIsHeldOldestFirst) {
  ListSource src = numbered(3);
  FaultProfile p;
  p.reorder = 1.0;
  p.reorder_depth = 100;
  FaultySource f(src, p);
  std::vector<uint64_t> ids;
  auto fn = [&](std::span<const std::byte> d, uint64_t t) noexcept {
    ids.push_back(id_of(d));
    EXPECT_EQ(t, 5u);
  };
  while (f.poll(fn, 10) > 0) {}
  // Each is held for up to 100 arrivals: some may have been released by the others.
  const size_t held = f.held();
  EXPECT_EQ(f.flush_held(fn, 5), held);
  EXPECT_EQ(f.held(), 0u);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(f.flush_held(fn, 5), 0u);
}

TEST(Fault, DuplicatesAreExtraCopies) {
  ListSource src = numbered(10'000);
  FaultProfile p;
  p.duplicate = 0.2;
  FaultySource f(src, p);
  const auto got = drain(f);
  EXPECT_EQ(got.size(), 10'000u + f.counters().duplicated.get());
  EXPECT_NEAR(static_cast<double>(f.counters().duplicated.get()), 2000.0, 200.0);
  size_t twice = 0;
  for (size_t i = 1; i < got.size(); ++i) twice += got[i].id == got[i - 1].id && got[i].bytes == got[i - 1].bytes;
  EXPECT_EQ(twice, f.counters().duplicated.get()) << "the copy follows the original at once";
}

TEST(Fault, TruncationKeepsAPrefix) {
  ListSource src = numbered(5000);
  FaultProfile p;
  p.truncate = 0.1;
  FaultySource f(src, p);
  const auto got = drain(f);
  ASSERT_EQ(got.size(), 5000u);
  size_t cut = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Bytes& orig = src.items[i];
    ASSERT_LE(got[i].bytes.size(), orig.size());
    if (got[i].bytes.size() < orig.size()) ++cut;
    EXPECT_TRUE(std::equal(got[i].bytes.begin(), got[i].bytes.end(), orig.begin()));
  }
  EXPECT_EQ(cut, f.counters().truncated.get());
  EXPECT_NEAR(static_cast<double>(cut), 500.0, 100.0);
}

TEST(Fault, CorruptionFlipsOneByte) {
  ListSource src = numbered(5000);
  FaultProfile p;
  p.corrupt = 0.1;
  FaultySource f(src, p);
  const auto got = drain(f);
  ASSERT_EQ(got.size(), 5000u);
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Bytes& orig = src.items[i];
    ASSERT_EQ(got[i].bytes.size(), orig.size());
    size_t diff = 0;
    for (size_t k = 0; k < orig.size(); ++k) diff += got[i].bytes[k] != orig[k];
    ASSERT_LE(diff, 1u);
    bad += diff;
  }
  EXPECT_EQ(bad, f.counters().corrupted.get());
  EXPECT_NEAR(static_cast<double>(bad), 500.0, 100.0);
}

FaultProfile everything(uint64_t seed) {
  FaultProfile p;
  p.seed = seed;
  p.loss = 0.05;
  p.burst_start = 300;
  p.burst_every = 1000;
  p.burst_length = 20;
  p.reorder = 0.1;
  p.duplicate = 0.05;
  p.truncate = 0.02;
  p.corrupt = 0.02;
  return p;
}

TEST(Fault, SameSeedSameRunWhateverTheBudget) {
  ListSource a = numbered(5000, 50), b = numbered(5000, 50), c = numbered(5000, 50);
  FaultySource fa(a, everything(42)), fb(b, everything(42)), fc(c, everything(43));
  const auto ga = drain(fa, 1), gb = drain(fb, 64), gc = drain(fc, 64);
  ASSERT_EQ(ga.size(), gb.size());
  for (size_t i = 0; i < ga.size(); ++i) {
    ASSERT_EQ(ga[i].id, gb[i].id) << i;
    ASSERT_EQ(ga[i].bytes, gb[i].bytes) << i;
  }
  for (size_t i = 0; i < FaultCounters::kCount; ++i) EXPECT_EQ(fa.counters().at(i).get(), fb.counters().at(i).get());
  bool differs = ga.size() != gc.size();
  for (size_t i = 0; !differs && i < ga.size(); ++i) differs = ga[i].id != gc[i].id || ga[i].bytes != gc[i].bytes;
  EXPECT_TRUE(differs) << "another seed, another run";
}

TEST(Fault, SequencedOnlySparesHeartbeats) {
  FaultProfile p;
  p.loss = 1.0;
  p.corrupt = 1.0;
  p.sequenced_only = true;
  ListSource src = numbered(1000, 10);
  FaultySource f(src, p);
  const auto got = drain(f);
  ASSERT_EQ(got.size(), 100u) << "every heartbeat and nothing else";
  for (const auto& g : got) {
    EXPECT_EQ(g.id % 10, 0u);
    EXPECT_EQ(g.bytes, src.items[g.id - 1]) << "untouched";
  }
  EXPECT_EQ(f.counters().offered.get(), 1000u);
  EXPECT_EQ(f.counters().lost.get(), 900u);
  EXPECT_EQ(f.counters().corrupted.get(), 0u);

  // Without it heartbeats are datagrams like any other.
  p.sequenced_only = false;
  ListSource all = numbered(1000, 10);
  FaultySource g(all, p);
  EXPECT_TRUE(drain(g).empty());
  EXPECT_EQ(g.counters().lost.get(), 1000u);
}

TEST(Fault, HoldPoolNeverFillsAndPollingNeverAllocates) {
  for (uint32_t depth : {1u, 3u, 8u, 32u}) {
    FaultProfile p;
    p.reorder = 1.0;  // the worst case: every datagram held, for as long as the depth allows
    p.reorder_depth = depth;
    p.loss = 0.1;
    p.duplicate = 0.1;
    p.corrupt = 0.1;
    ListSource src = numbered(20'000, 7);
    FaultySource f(src, p);
    EXPECT_EQ(f.hold_pool(), depth + 1u);
    size_t handed = 0;
    size_t most_held = 0;
    auto fn = [&](std::span<const std::byte>, uint64_t) noexcept { ++handed; };
    g_allocations = 0;
    g_counting = true;
    while (f.poll(fn, 16) > 0) most_held = std::max(most_held, f.held());
    f.flush_held(fn, 0);
    g_counting = false;
    EXPECT_EQ(g_allocations, 0u) << "depth " << depth;
    EXPECT_EQ(f.counters().hold_pool_full.get(), 0u) << "depth " << depth;
    EXPECT_LE(most_held, depth + 1u);
    EXPECT_EQ(handed + injected_losses(f.counters()), 20'000u + f.counters().duplicated.get());
  }
}

TEST(Fault, AFullPoolPassesDatagramsInOrderAndSaysSo) {
  FaultProfile p;
  p.reorder = 1.0;
  p.reorder_depth = 16;
  ListSource src = numbered(1000);
  FaultySource f(src, p, wire::kMaxDatagram, /*pool=*/2);
  const auto got = drain(f);
  EXPECT_EQ(got.size(), 1000u) << "nothing lost for want of a slot";
  EXPECT_GT(f.counters().hold_pool_full.get(), 0u);
  EXPECT_EQ(f.counters().reordered.get() + f.counters().hold_pool_full.get(), 1000u);
}

TEST(Fault, DatagramsAboveTheSlotPassUnaltered) {
  FaultProfile p;
  p.corrupt = 1.0;
  ListSource src;
  src.items.push_back(datagram(1, false, 300));
  src.items.push_back(datagram(2, false, 100));
  FaultySource f(src, p, /*max_datagram=*/256);
  const auto got = drain(f);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].bytes, src.items[0]);
  EXPECT_NE(got[1].bytes, src.items[1]);
  EXPECT_EQ(f.counters().too_large.get(), 1u);
  EXPECT_EQ(f.counters().corrupted.get(), 1u);
}

}  // namespace
}  // namespace mdcast::media::fault
