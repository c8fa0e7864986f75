// The channel map (which channel an instrument is on), the split of channels
// over publishing threads, and the CPU placement check.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "mdcast/core/affinity.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/channels.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::test {
namespace {

using feed::ChannelMap;
using feed::ChannelRange;

TEST(ChannelMap, OneChannelHoldsEverything) {
  const ChannelMap m;
  EXPECT_EQ(m.count(), 1u);
  for (uint32_t i : {0u, 7u, 1u << 30}) EXPECT_EQ(m.of(i), 0u);
}

// The hash is part of the protocol (docs/protocol.md): a foreign subscriber
// computes the same channel. Pinned values catch an accidental change.
TEST(ChannelMap, TheHashIsStableAndSpreadsConsecutiveIds) {
  EXPECT_EQ(ChannelMap::channel_hash(0, 4), 0u);
  EXPECT_EQ(ChannelMap::channel_hash(1, 4), 0x514E28B7u % 4);
  EXPECT_EQ(ChannelMap::channel_hash(2, 16), 0x30F4C306u % 16);
  const ChannelMap m(4, 1024);
  std::array<uint32_t, 4> per{};
  for (uint32_t i = 0; i < 1024; ++i) {
    ASSERT_LT(m.of(i), 4u);
    EXPECT_EQ(m.of(i), ChannelMap::channel_hash(i, 4));
    ++per[m.of(i)];
  }
  for (uint32_t n : per) EXPECT_NEAR(n, 256, 40) << "consecutive ids spread evenly";
  // Beyond the table the hash still answers.
  EXPECT_EQ(m.of(5000), ChannelMap::channel_hash(5000, 4));
}

TEST(ChannelMap, RangesOverrideTheHash) {
  const auto ranges = ChannelMap::parse_ranges("0-9:3,20:1,100-199:2");
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ChannelMap::format_ranges(ranges), "0-9:3,20:1,100-199:2");
  const ChannelMap m(4, 256, ranges);
  for (uint32_t i = 0; i <= 9; ++i) EXPECT_EQ(m.of(i), 3u);
  EXPECT_EQ(m.of(20), 1u);
  EXPECT_EQ(m.of(150), 2u);
  EXPECT_EQ(m.of(10), ChannelMap::channel_hash(10, 4));
  // instruments(), select() and channels_of() agree with of().
  std::set<uint32_t> all;
  for (uint32_t k = 0; k < 4; ++k)
    for (uint32_t i : m.instruments(k)) {
      EXPECT_EQ(m.of(i), k);
      EXPECT_TRUE(all.insert(i).second);
    }
  EXPECT_EQ(all.size(), 256u);
  const std::vector<uint32_t> ids{150, 20, 3, 4};
  EXPECT_EQ(m.select(ids, 3), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(m.channels_of(ids), (std::vector<uint32_t>{1, 2, 3}));
}

TEST(ChannelMap, RefusesWhatCannotBeRight) {
  EXPECT_THROW(ChannelMap(0, 10), Error);
  EXPECT_THROW(ChannelMap(17, 10), Error);
  EXPECT_NO_THROW(ChannelMap(16, 10));
  const ChannelRange past[] = {{5, 10, 0}};
  EXPECT_THROW(ChannelMap(2, 10, past), Error) << "instrument 10 is past max_instruments 10";
  const ChannelRange bad_channel[] = {{0, 1, 2}};
  EXPECT_THROW(ChannelMap(2, 10, bad_channel), Error);
  const ChannelRange overlap[] = {{0, 5, 0}, {5, 6, 1}};
  EXPECT_THROW(ChannelMap(2, 10, overlap), Error);
  const ChannelRange empty[] = {{6, 5, 0}};
  EXPECT_THROW(ChannelMap(2, 10, empty), Error);
  for (const char* text : {"5", "a-b:1", "1-:0", "1:x", ":1", "1-2:3:4", "-1:0"})
    EXPECT_THROW((void)ChannelMap::parse_ranges(text), Error) << text;
  EXPECT_TRUE(ChannelMap::parse_ranges("").empty());
}

TEST(ChannelsPerThread, RoundRobinAndEveryThreadBusy) {
  const auto t = feed::channels_per_thread(5, 2);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0], (std::vector<uint32_t>{0, 2, 4}));
  EXPECT_EQ(t[1], (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(feed::channels_per_thread(4, 4).size(), 4u);
  EXPECT_THROW((void)feed::channels_per_thread(2, 3), Error);
  EXPECT_THROW((void)feed::channels_per_thread(2, 0), Error);
}

TEST(Affinity, CpuListsParseAndFormat) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int c = allowed.front();
  EXPECT_EQ(parse_cpu_list(std::to_string(c)), std::vector<int>{c});
  EXPECT_EQ(format_cpu_list({0, 2, 3}), "0,2,3");
  EXPECT_THROW((void)parse_cpu_list("x"), Error);
  EXPECT_THROW((void)parse_cpu_list("0,,1"), Error);
  EXPECT_THROW((void)parse_cpu_list("100000"), Error) << "not a CPU of this process";
}

TEST(Affinity, PlacementWarnsWhenBusyThreadsShare) {
  const std::vector<int> allowed = allowed_cpus();
  const int c = allowed.front();
  const BusyThread same[] = {{"publisher channel 1", c}, {"subscriber", c}};
  const auto w = placement_warnings(same);
  ASSERT_FALSE(w.empty());
  EXPECT_NE(w.front().find("same CPU " + std::to_string(c)), std::string::npos) << w.front();
  EXPECT_NE(w.front().find("publisher channel 1"), std::string::npos);
  const BusyThread one[] = {{"alone", c}};
  EXPECT_TRUE(placement_warnings(one).empty());
  // More busy threads than CPUs, none pinned.
  std::vector<BusyThread> many(allowed.size() + 1, BusyThread{"t", -1});
  EXPECT_FALSE(placement_warnings(many).empty());
  if (allowed.size() >= 2 && core_of(allowed[0]) != core_of(allowed[1])) {
    const BusyThread apart[] = {{"a", allowed[0]}, {"b", allowed[1]}};
    EXPECT_TRUE(placement_warnings(apart).empty());
  }
}

TEST(Affinity, PinningToAnAllowedCpuWorks) {
  const int c = allowed_cpus().back();
  EXPECT_NO_THROW(pin_this_thread(c));
  EXPECT_EQ(allowed_cpus(), std::vector<int>{c});
}

}  // namespace
}  // namespace mdcast::test

namespace mdcast::feed {
namespace {
TEST(ChannelIds, ReadAsAnOperatorWould) {
  EXPECT_EQ(wire::format_channel_ids({}), "none");
  const std::vector<uint16_t> one{3}, run{1, 2, 3, 4}, gaps{1, 5, 9};
  EXPECT_EQ(wire::format_channel_ids(one), "3");
  EXPECT_EQ(wire::format_channel_ids(run), "1 to 4");
  EXPECT_EQ(wire::format_channel_ids(gaps), "1, 5, 9");
}
}  // namespace
}  // namespace mdcast::feed
