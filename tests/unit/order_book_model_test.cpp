// Randomised model test: hundreds of thousands of random operations on a
// BookSet and on a plain std::map reference, compared result by result and
// state by state. Small capacities force the open-addressing index into long
// probe chains, wraparound at the end of the table and constant
// backward-shift deletion; full sides and full pools exercise every error.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <optional>
#include <set>

#include "book_support.hpp"
#include "mdcast/book/order_book.hpp"
#include "mdcast/core/rng.hpp"

namespace mdcast::test {
namespace {

using book::ApplyResult;
using wire::Message;
using wire::MsgType;
using wire::Side;
using wire::TradingStatus;

// The obvious implementation of the BookSet contract.
class Model {
 public:
  explicit Model(const book::BookConfig& c) : cfg_(c), status_(c.max_instruments, TradingStatus::kPreOpen) {}

  ApplyResult apply(const Message& m) {
    if (m.instrument >= cfg_.max_instruments) return ApplyResult::kBadInstrument;
    switch (m.type) {
      case MsgType::kAddOrder: {
        const auto& a = m.add;
        if (a.order_id == 0) return ApplyResult::kBadOrderId;
        if (a.quantity == 0) return ApplyResult::kBadQuantity;
        if (orders_.count(a.order_id)) return ApplyResult::kDuplicateOrder;
        if (orders_.size() == cfg_.max_orders) return ApplyResult::kOrdersFull;
        if (!has_level(m.instrument, a.side, a.price) && levels(m.instrument, a.side) == cfg_.max_levels)
          return ApplyResult::kLevelsFull;
        orders_[a.order_id] = {m.instrument, a.price, a.quantity, a.side};
        return ApplyResult::kOk;
      }
      case MsgType::kModifyOrder: {
        auto it = find(m.instrument, m.modify.order_id);
        if (it == orders_.end()) return ApplyResult::kUnknownOrder;
        if (m.modify.quantity == 0) return ApplyResult::kBadQuantity;
        O& o = it->second;
        if (o.price != m.modify.price && !has_level(m.instrument, o.side, m.modify.price) &&
            levels(m.instrument, o.side) == cfg_.max_levels && orders_at(m.instrument, o.side, o.price) > 1)
          return ApplyResult::kLevelsFull;
        o.price = m.modify.price;
        o.qty = m.modify.quantity;
        return ApplyResult::kOk;
      }
      case MsgType::kDeleteOrder: {
        auto it = find(m.instrument, m.del.order_id);
        if (it == orders_.end()) return ApplyResult::kUnknownOrder;
        orders_.erase(it);
        return ApplyResult::kOk;
      }
      case MsgType::kExecuteOrder: {
        auto it = find(m.instrument, m.execute.order_id);
        if (it == orders_.end()) return ApplyResult::kUnknownOrder;
        if (m.execute.quantity == 0 || m.execute.quantity > it->second.qty) return ApplyResult::kBadQuantity;
        it->second.qty -= m.execute.quantity;
        if (it->second.qty == 0) orders_.erase(it);
        return ApplyResult::kOk;
      }
      case MsgType::kTradingStatus:
        status_[m.instrument] = m.status.status;
        return ApplyResult::kOk;
      default:
        return ApplyResult::kIgnored;
    }
  }

  void clear(uint32_t inst) {
    std::erase_if(orders_, [&](const auto& kv) { return kv.second.inst == inst; });
    status_[inst] = TradingStatus::kPreOpen;
  }

  // Compares everything observable with b (gtest failures on mismatch).
  void compare(const book::BookSet& b, const std::vector<uint64_t>& probe_ids) const {
    ASSERT_EQ(b.order_count(), orders_.size());
    uint64_t global = 0;
    for (uint32_t i = 0; i < cfg_.max_instruments; ++i) {
      uint64_t c = book::BookSet::status_hash(i, status_[i]);
      std::string want;
      for (const auto& [id, o] : orders_)
        if (o.inst == i) {
          c += book::BookSet::order_hash(i, id, o.price, o.qty, o.side);
          want += fmt::format("  order {} {} {} {}\n", id, o.price, o.qty, static_cast<int>(o.side));
        }
      ASSERT_EQ(b.book(i).checksum(), c) << "instrument " << i;
      ASSERT_EQ(b.book(i).status(), status_[i]);
      std::string got;
      for (const auto& o : orders_of(b, i))
        got += fmt::format("  order {} {} {} {}\n", o.id, o.price, o.quantity, static_cast<int>(o.side));
      ASSERT_EQ(got, want) << "instrument " << i;
      ASSERT_EQ(dump_levels(b.book(i).bids()), dump_levels(model_levels(i, Side::kBuy))) << "instrument " << i;
      ASSERT_EQ(dump_levels(b.book(i).asks()), dump_levels(model_levels(i, Side::kSell))) << "instrument " << i;
      global += c;
    }
    ASSERT_EQ(b.global_checksum(), global);
    // The index answers for present and absent ids alike.
    for (uint64_t id : probe_ids) {
      const auto it = orders_.find(id);
      const book::Order* f = b.find(id);
      if (it == orders_.end()) {
        ASSERT_EQ(f, nullptr) << "id " << id << " should be absent";
      } else {
        ASSERT_NE(f, nullptr) << "id " << id << " should be present";
        ASSERT_EQ(f->id, id);
        ASSERT_EQ(f->instrument, it->second.inst);
        ASSERT_EQ(f->price, it->second.price);
        ASSERT_EQ(f->quantity, it->second.qty);
      }
    }
  }

  uint64_t checksum(uint32_t inst) const {
    uint64_t c = book::BookSet::status_hash(inst, status_[inst]);
    for (const auto& [id, o] : orders_)
      if (o.inst == inst) c += book::BookSet::order_hash(inst, id, o.price, o.qty, o.side);
    return c;
  }

  size_t size() const { return orders_.size(); }
  // Any resting id, for operations that should usually hit.
  uint64_t pick(Rng& r) const {
    if (orders_.empty()) return 0;
    auto it = orders_.begin();
    std::advance(it, static_cast<ptrdiff_t>(r.below(orders_.size())));
    return it->first;
  }
  std::optional<uint32_t> inst_of(uint64_t id) const {
    const auto it = orders_.find(id);
    return it == orders_.end() ? std::nullopt : std::optional<uint32_t>(it->second.inst);
  }
  uint32_t qty_of(uint64_t id) const { return orders_.at(id).qty; }

 private:
  struct O {
    uint32_t inst;
    int64_t price;
    uint32_t qty;
    Side side;
  };
  std::map<uint64_t, O>::iterator find(uint32_t inst, uint64_t id) {
    auto it = orders_.find(id);
    return it != orders_.end() && it->second.inst == inst ? it : orders_.end();
  }
  bool has_level(uint32_t inst, Side s, int64_t price) const { return orders_at(inst, s, price) > 0; }
  uint32_t orders_at(uint32_t inst, Side s, int64_t price) const {
    uint32_t n = 0;
    for (const auto& [id, o] : orders_) n += o.inst == inst && o.side == s && o.price == price;
    return n;
  }
  uint32_t levels(uint32_t inst, Side s) const {
    std::set<int64_t> p;
    for (const auto& [id, o] : orders_)
      if (o.inst == inst && o.side == s) p.insert(o.price);
    return static_cast<uint32_t>(p.size());
  }
  std::vector<book::Level> model_levels(uint32_t inst, Side s) const {
    std::map<int64_t, book::Level> m;
    for (const auto& [id, o] : orders_) {
      if (o.inst != inst || o.side != s) continue;
      auto& l = m[o.price];
      l.price = o.price;
      l.quantity += o.qty;
      ++l.orders;
    }
    std::vector<book::Level> v;
    for (auto& [p, l] : m) v.push_back(l);
    if (s == Side::kSell) std::reverse(v.begin(), v.end());
    return v;
  }

  book::BookConfig cfg_;
  std::map<uint64_t, O> orders_;
  std::vector<TradingStatus> status_;
};

// The index's home-slot hash (murmur3 fmix64, as in order_book.cpp). Only
// used to choose ids that collide on purpose: if the implementation changes
// its hash the test still runs, it just collides less.
uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

struct Scenario {
  const char* name;
  book::BookConfig cfg;
  uint64_t ops;
  std::vector<uint64_t> ids;  // the id universe (ids are drawn from it, plus 0)
  uint32_t prices;            // distinct prices per side
  bool every_result = true;   // false where a capacity makes some result impossible
};

std::vector<uint64_t> sequential_ids(uint64_t n) {
  std::vector<uint64_t> v;
  for (uint64_t i = 1; i <= n; ++i) v.push_back(i);
  return v;
}

// Ids whose home slot is one of the last two or first two of a table of
// `table` slots: every probe chain crosses the wraparound point.
std::vector<uint64_t> colliding_ids(uint64_t table, size_t n) {
  std::vector<uint64_t> v;
  for (uint64_t id = 1; v.size() < n; ++id) {
    const uint64_t h = fmix64(id) & (table - 1);
    if (h >= table - 2 || h < 2) v.push_back(id);
  }
  return v;
}

std::vector<uint64_t> random_wide_ids(uint64_t seed, size_t n) {
  Rng r(seed);
  std::vector<uint64_t> v;
  while (v.size() < n) {
    const uint64_t id = r.next();
    if (id) v.push_back(id);
  }
  return v;
}

void run(const Scenario& sc, uint64_t seed) {
  SCOPED_TRACE(sc.name);
  book::BookSet b(sc.cfg);
  Model model(sc.cfg);
  Rng r(seed);
  const uint32_t n_inst = sc.cfg.max_instruments;
  std::vector<uint64_t> probe = sc.ids;
  probe.push_back(0);
  std::array<uint64_t, static_cast<size_t>(ApplyResult::kIgnored) + 1> seen{};

  auto any_id = [&]() -> uint64_t {
    const uint64_t u = r.below(100);
    if (u < 2) return 0;
    if (u < 50 && model.size()) return model.pick(r);
    return sc.ids[r.below(sc.ids.size())];
  };
  auto price = [&](Side s) {
    const auto k = static_cast<int64_t>(r.below(sc.prices));
    return s == Side::kBuy ? 1000 - k : 1001 + k;
  };
  for (uint64_t op = 0; op < sc.ops; ++op) {
    // Instrument: mostly in range, sometimes the order's own, rarely out of range.
    auto inst = static_cast<uint32_t>(r.below(n_inst));
    if (r.chance(0.005)) inst = n_inst + static_cast<uint32_t>(r.below(3));
    Message m;
    // Alternate filling and draining phases so the pool both runs full
    // (kOrdersFull, dense index) and empties (long backward-shift runs).
    const bool filling = (op / 3000) % 2 == 0;
    const uint64_t u = r.below(1000);
    const uint64_t add_end = filling ? 700 : 250;
    const uint64_t modify_end = add_end + 150;
    const uint64_t delete_end = filling ? modify_end + 50 : 800;
    if (u < add_end) {
      const Side s = r.chance(0.5) ? Side::kBuy : Side::kSell;
      m = Message::make_add(inst, any_id(), price(s), r.chance(0.02) ? 0 : 1 + static_cast<uint32_t>(r.below(500)), s);
    } else if (u < modify_end) {
      const uint64_t id = any_id();
      // Usually the order's own instrument, so the modify can succeed.
      if (const auto own = model.inst_of(id); own && r.chance(0.9) && inst < n_inst) inst = *own;
      const Side s = r.chance(0.5) ? Side::kBuy : Side::kSell;
      m = Message::make_modify(inst, id, price(s), r.chance(0.02) ? 0 : 1 + static_cast<uint32_t>(r.below(500)));
    } else if (u < delete_end) {
      const uint64_t id = any_id();
      if (const auto own = model.inst_of(id); own && r.chance(0.9) && inst < n_inst) inst = *own;
      m = Message::make_delete(inst, id);
    } else if (u < 960) {
      const uint64_t id = any_id();
      uint32_t q = 1 + static_cast<uint32_t>(r.below(500));
      if (const auto own = model.inst_of(id); own && inst < n_inst) {
        inst = *own;
        const uint32_t have = model.qty_of(id);
        const uint64_t k = r.below(10);
        q = k < 4 ? have : k < 8 ? 1 + static_cast<uint32_t>(r.below(have)) : k < 9 ? have + 1 : 0;
      }
      m = Message::make_execute(inst, id, 1, q, op);
    } else if (u < 985) {
      m = Message::make_status(inst, static_cast<TradingStatus>(r.below(4)));
    } else if (u < 990) {
      const std::byte payload[1]{};
      m = Message::make_opaque(inst, payload);
    } else if (u < 992) {
      const uint32_t ci = static_cast<uint32_t>(r.below(n_inst));
      b.clear(ci);
      model.clear(ci);
      continue;
    } else {
      // A check() must predict apply() and change nothing.
      const Side s = r.chance(0.5) ? Side::kBuy : Side::kSell;
      m = Message::make_add(inst < n_inst ? inst : 0, any_id(), price(s), 1, s);
      const uint64_t before = b.global_checksum();
      const uint32_t count = b.order_count();
      const ApplyResult c = b.check(m);
      ASSERT_EQ(b.global_checksum(), before);
      ASSERT_EQ(b.order_count(), count);
      ASSERT_EQ(c, b.apply(m)) << "check() disagrees with apply() at op " << op;
      ASSERT_EQ(c, model.apply(m)) << "op " << op;
      continue;
    }
    const ApplyResult want = model.apply(m);
    // Every other message the publisher's way: validate, then apply the verdict.
    ApplyResult got;
    if (op % 2) {
      const book::BookSet::Checked c = b.validate(m);
      b.apply(m, c);
      got = c.result;
    } else {
      got = b.apply(m);
    }
    ASSERT_EQ(got, want) << "op " << op << " type " << to_string(m.type) << " inst " << m.instrument << ": "
                         << book::to_string(got) << " vs model " << book::to_string(want);
    ++seen[static_cast<size_t>(got)];
    if (m.instrument < n_inst) {
      ASSERT_EQ(b.book(m.instrument).checksum(), model.checksum(m.instrument)) << "op " << op;
    }
    if (op % 257 == 0) {
      model.compare(b, probe);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  model.compare(b, probe);
  // The scenario must actually have reached every outcome, or it proves little.
  if (!sc.every_result) return;
  for (auto res : {ApplyResult::kOk, ApplyResult::kBadInstrument, ApplyResult::kDuplicateOrder,
                   ApplyResult::kUnknownOrder, ApplyResult::kBadQuantity, ApplyResult::kBadOrderId,
                   ApplyResult::kOrdersFull, ApplyResult::kLevelsFull, ApplyResult::kIgnored})
    EXPECT_GT(seen[static_cast<size_t>(res)], 0u) << "never produced " << book::to_string(res);
}

TEST(OrderBookModel, SmallPoolManyIds) {
  run({"pool 64, 150 sequential ids", {3, 64, 4}, 200'000, sequential_ids(150), 6}, 1);
}

TEST(OrderBookModel, CollisionsAcrossTableWrap) {
  // 48 orders in a 128-slot table, every id homed in slots 126..1.
  run({"pool 48, colliding ids", {2, 48, 4}, 60'000, colliding_ids(128, 80), 5}, 2);
}

TEST(OrderBookModel, WideRandomIds) {
  run({"pool 32, 64-bit ids", {4, 32, 3}, 40'000, random_wide_ids(77, 60), 4}, 3);
}

TEST(OrderBookModel, TinyTable) {
  // max_orders 1: a 2-slot table, the smallest there is.
  // (A full side needs a second order, which a pool of one cannot hold.)
  run({"pool 1", {1, 1, 1}, 10'000, sequential_ids(3), 2, false}, 4);
  run({"pool 3", {2, 3, 1}, 10'000, colliding_ids(8, 6), 2}, 5);
}

}  // namespace
}  // namespace mdcast::test
