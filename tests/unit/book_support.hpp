// Book test helpers: an independent recomputation of the checksum and the
// price levels, and a canonical dump of a BookSet for equality checks.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "mdcast/book/order_book.hpp"

namespace mdcast::test {

inline std::vector<book::Order> orders_of(const book::BookSet& b, uint32_t inst) {
  std::vector<book::Order> v;
  b.for_each_order(inst, [&](const book::Order& o) { v.push_back(o); });
  std::sort(v.begin(), v.end(), [](const book::Order& x, const book::Order& y) { return x.id < y.id; });
  return v;
}

inline uint64_t recomputed_checksum(const book::BookSet& b, uint32_t inst) {
  uint64_t c = book::BookSet::status_hash(inst, b.book(inst).status());
  for (const auto& o : orders_of(b, inst)) c += book::BookSet::order_hash(inst, o.id, o.price, o.quantity, o.side);
  return c;
}

// Levels as they must be: aggregated from the orders, best price last.
inline std::vector<book::Level> recomputed_levels(const book::BookSet& b, uint32_t inst, wire::Side side) {
  std::map<int64_t, book::Level> m;
  for (const auto& o : orders_of(b, inst)) {
    if (o.side != side) continue;
    auto& l = m[o.price];
    l.price = o.price;
    l.quantity += o.quantity;
    ++l.orders;
  }
  std::vector<book::Level> v;
  for (auto& [p, l] : m) v.push_back(l);
  if (side == wire::Side::kSell) std::reverse(v.begin(), v.end());  // asks descending
  return v;
}

inline std::string dump_levels(std::span<const book::Level> ls) {
  std::string s;
  for (const auto& l : ls) s += fmt::format("{}x{}/{} ", l.price, l.quantity, l.orders);
  return s;
}

// Everything observable about one instrument, canonically ordered.
inline std::string dump(const book::BookSet& b, uint32_t inst) {
  const auto& ob = b.book(inst);
  std::string s = fmt::format("inst {} iseq {} status {} count {} checksum {:x} defined {}\n", inst,
                              ob.instrument_seq(), static_cast<int>(ob.status()), ob.order_count(), ob.checksum(),
                              ob.defined());
  for (const auto& o : orders_of(b, inst))
    s += fmt::format("  order {} {} {} {}\n", o.id, o.price, o.quantity, static_cast<int>(o.side));
  s += "  bids " + dump_levels(ob.bids()) + "\n  asks " + dump_levels(ob.asks()) + "\n";
  return s;
}

inline std::string dump(const book::BookSet& b) {
  std::string s = fmt::format("orders {} global {:x}\n", b.order_count(), b.global_checksum());
  for (uint32_t i = 0; i < b.max_instruments(); ++i) s += dump(b, i);
  return s;
}

// The invariants every BookSet must hold after any sequence of calls.
inline void expect_consistent(const book::BookSet& b) {
  uint64_t global = 0;
  uint32_t total = 0;
  for (uint32_t i = 0; i < b.max_instruments(); ++i) {
    const auto& ob = b.book(i);
    ASSERT_EQ(ob.checksum(), recomputed_checksum(b, i)) << "instrument " << i;
    global += ob.checksum();
    const auto os = orders_of(b, i);
    ASSERT_EQ(os.size(), ob.order_count()) << "instrument " << i;
    total += ob.order_count();
    for (const auto& o : os) {
      const book::Order* f = b.find(o.id);
      ASSERT_NE(f, nullptr) << "order " << o.id << " not in the index";
      ASSERT_EQ(f->instrument, i);
    }
    ASSERT_EQ(dump_levels(ob.bids()), dump_levels(recomputed_levels(b, i, wire::Side::kBuy))) << "instrument " << i;
    ASSERT_EQ(dump_levels(ob.asks()), dump_levels(recomputed_levels(b, i, wire::Side::kSell))) << "instrument " << i;
    ASSERT_LE(ob.bids().size(), b.config().max_levels);
    ASSERT_LE(ob.asks().size(), b.config().max_levels);
  }
  ASSERT_EQ(b.global_checksum(), global);
  ASSERT_EQ(b.order_count(), total);
}

}  // namespace mdcast::test
