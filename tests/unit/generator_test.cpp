// The synthetic order-flow generator: deterministic per seed, every message
// valid for a book that applied the earlier ones, activity Zipf-skewed.
#include <gtest/gtest.h>

#include <algorithm>

#include "book_support.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/error.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using book::Generator;
using book::GeneratorConfig;

Bytes stream(const GeneratorConfig& c, size_t n) {
  Generator g(c);
  Bytes out;
  wire::Message m;
  for (size_t i = 0; i < n; ++i) {
    g.next(m);
    const Bytes b = encode_msg(m);
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

TEST(Generator, SameSeedSameStream) {
  GeneratorConfig c;
  c.seed = 42;
  c.halt_probability = 0.01;
  const Bytes a = stream(c, 20'000);
  EXPECT_EQ(a, stream(c, 20'000));
  c.seed = 43;
  const Bytes b = stream(c, 20'000);
  EXPECT_NE(a, b);
}

TEST(Generator, DefinesThenOpensEveryInstrumentFirst) {
  GeneratorConfig c;
  c.instruments = 37;
  Generator g(c);
  wire::Message m;
  for (uint32_t i = 0; i < c.instruments; ++i) {
    g.next(m);
    ASSERT_EQ(m.type, wire::MsgType::kInstrumentDefinition);
    EXPECT_EQ(m.instrument, i);
    EXPECT_EQ(m.instrument_seq, 0u) << "the publisher assigns sequences";
    EXPECT_EQ(m.definition.symbol_view(), fmt::format("SYM{:05}", i));
  }
  for (uint32_t i = 0; i < c.instruments; ++i) {
    g.next(m);
    ASSERT_EQ(m.type, wire::MsgType::kTradingStatus);
    EXPECT_EQ(m.instrument, i);
    EXPECT_EQ(m.status.status, wire::TradingStatus::kTrading);
  }
  EXPECT_EQ(g.produced(), 2u * c.instruments);
}

// A channel's flow: only its instrument ids, each defined under its own
// symbol, every message valid for a book of the whole id space.
TEST(Generator, ASubsetOfIdsGetsTheirFlowOnly) {
  GeneratorConfig c;
  c.ids = {3, 17, 18, 40};
  Generator g(c);
  EXPECT_EQ(g.config().instruments, 4u);
  book::BookSet b({64, 1u << 16, 256});
  wire::Message m;
  for (size_t i = 0; i < 20'000; ++i) {
    g.next(m);
    ASSERT_NE(std::find(c.ids.begin(), c.ids.end(), m.instrument), c.ids.end()) << m.instrument;
    if (i < 4) {
      EXPECT_EQ(m.instrument, c.ids[i]);
      EXPECT_EQ(m.definition.symbol_view(), fmt::format("SYM{:05}", c.ids[i]));
    }
    ASSERT_EQ(b.apply(m), book::ApplyResult::kOk) << "message " << i;
  }
  for (uint32_t id : c.ids) EXPECT_GT(b.book(id).order_count(), 0u);
}

// Applies n messages to a fresh book; every one must be accepted.
void apply_all(const GeneratorConfig& c, size_t n) {
  Generator g(c);
  book::BookSet b({c.instruments, 1u << 17, 256});
  wire::Message m;
  std::array<uint64_t, 11> by_type{};
  for (size_t i = 0; i < n; ++i) {
    g.next(m);
    ASSERT_LT(m.instrument, c.instruments);
    const auto r = b.apply(m);
    ASSERT_EQ(r, book::ApplyResult::kOk) << "message " << i << " (" << wire::to_string(m.type)
                                         << ") refused: " << book::to_string(r);
    ++by_type[static_cast<size_t>(m.type)];
  }
  expect_consistent(b);
  for (uint32_t i = 0; i < c.instruments; ++i) EXPECT_LE(b.book(i).order_count(), c.max_orders);
  for (auto t : {wire::MsgType::kAddOrder, wire::MsgType::kModifyOrder, wire::MsgType::kDeleteOrder,
                 wire::MsgType::kExecuteOrder})
    EXPECT_GT(by_type[static_cast<size_t>(t)], n / 50) << wire::to_string(t);
}

TEST(Generator, EveryMessageAppliesDefaultConfig) {
  GeneratorConfig c;
  apply_all(c, 500'000);
}

TEST(Generator, EveryMessageAppliesTightCaps) {
  // Few orders per instrument: the flow keeps hitting the hard cap.
  GeneratorConfig c;
  c.seed = 7;
  c.instruments = 5;
  c.target_orders = 4;
  c.max_orders = 4;
  c.price_band_ticks = 1;
  c.halt_probability = 0.01;
  apply_all(c, 500'000);
}

TEST(Generator, EveryMessageAppliesManyInstrumentsFlatSkew) {
  GeneratorConfig c;
  c.seed = 99;
  c.instruments = 1000;
  c.zipf_exponent = 0.0;
  c.target_orders = 60;
  c.max_orders = 200;
  c.tick = 1;
  c.execute_weight = 0.5;
  apply_all(c, 500'000);
}

TEST(Generator, ZipfSkewIsVisible) {
  GeneratorConfig c;
  c.instruments = 200;
  c.zipf_exponent = 1.2;
  c.halt_probability = 0;
  Generator g(c);
  std::vector<uint64_t> per(c.instruments);
  wire::Message m;
  for (int i = 0; i < 200'000; ++i) {
    g.next(m);
    if (g.produced() > 2u * c.instruments) ++per[m.instrument];
  }
  std::vector<uint64_t> sorted = per;
  std::sort(sorted.begin(), sorted.end());
  const uint64_t median = sorted[sorted.size() / 2];
  const uint64_t hottest = sorted.back();
  EXPECT_GT(hottest, 20 * std::max<uint64_t>(median, 1)) << "hottest " << hottest << " median " << median;
  // Rank 0 maps to instrument 0 ((0 * 7919) % n): it is the hottest.
  EXPECT_EQ(per[0], hottest);
  // With no skew, no instrument stands out.
  c.zipf_exponent = 0;
  Generator flat(c);
  std::fill(per.begin(), per.end(), 0);
  for (int i = 0; i < 200'000; ++i) {
    flat.next(m);
    if (flat.produced() > 2u * c.instruments) ++per[m.instrument];
  }
  std::sort(per.begin(), per.end());
  EXPECT_LT(per.back(), 2 * per[per.size() / 2]);
}

TEST(Generator, RefusesInvalidConfigs) {
  GeneratorConfig c;
  c.instruments = 0;
  EXPECT_THROW(Generator{c}, Error);
  c = {};
  c.max_orders = 3;
  EXPECT_THROW(Generator{c}, Error);
  c = {};
  c.target_orders = c.max_orders + 1;
  EXPECT_THROW(Generator{c}, Error);
  c = {};
  c.target_orders = 0;
  EXPECT_THROW(Generator{c}, Error);
  c = {};
  c.price_band_ticks = 0;
  EXPECT_THROW(Generator{c}, Error);
  c = {};
  c.tick = 0;
  EXPECT_THROW(Generator{c}, Error);
}

}  // namespace
}  // namespace mdcast::test
