// BookSet semantics: what each message does to orders and levels, every
// ApplyResult error (each leaving the book unchanged), the incremental
// checksum, clear() and diff().
#include <gtest/gtest.h>

#include "book_support.hpp"
#include "mdcast/book/order_book.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::test {
namespace {

using book::ApplyResult;
using book::BookSet;
using wire::Message;
using wire::Side;
using wire::TradingStatus;

constexpr book::BookConfig kSmall{4, 32, 4};

// Applies m, expects `want`, and checks the book is consistent and (on an
// error) unchanged, and that check() predicted the result without mutating.
void apply_expect(BookSet& b, const Message& m, ApplyResult want, std::string_view note = {}) {
  SCOPED_TRACE(note);
  const std::string before = dump(b);
  EXPECT_EQ(b.check(m), want);
  ASSERT_EQ(dump(b), before) << "check() mutated the book";
  const BookSet::Checked c = b.validate(m);
  EXPECT_EQ(c.result, want);
  if (want != ApplyResult::kOk) {
    b.apply(m, c);  // the publisher's two-step path: a refused verdict applies nothing
    ASSERT_EQ(dump(b), before) << "applying a refused verdict changed the book";
  }
  EXPECT_EQ(b.apply(m), want) << book::to_string(want);
  if (want != ApplyResult::kOk) {
    EXPECT_EQ(dump(b), before) << "a refused message changed the book";
  }
  expect_consistent(b);
}

TEST(OrderBook, StartsEmptyAndPreOpen) {
  BookSet b(kSmall);
  EXPECT_EQ(b.max_instruments(), 4u);
  EXPECT_EQ(b.order_count(), 0u);
  for (uint32_t i = 0; i < 4; ++i) {
    const auto& ob = b.book(i);
    EXPECT_EQ(ob.instrument(), i);
    EXPECT_EQ(ob.status(), TradingStatus::kPreOpen);
    EXPECT_EQ(ob.instrument_seq(), 0u);
    EXPECT_FALSE(ob.defined());
    EXPECT_EQ(ob.best_bid(), nullptr);
    EXPECT_EQ(ob.best_ask(), nullptr);
    EXPECT_EQ(ob.checksum(), BookSet::status_hash(i, TradingStatus::kPreOpen));
  }
  expect_consistent(b);
}

TEST(OrderBook, RefusesBadCapacities) {
  EXPECT_THROW(BookSet({0, 1, 1}), Error);
  EXPECT_THROW(BookSet({1, 0, 1}), Error);
  EXPECT_THROW(BookSet({1, 1, 0}), Error);
  EXPECT_THROW(BookSet({1, 1u << 30, 1}), Error);
  EXPECT_NO_THROW(BookSet({1, 1, 1}));
}

TEST(OrderBook, AddAggregatesLevelsBestAtBack) {
  BookSet b(kSmall);
  apply_expect(b, Message::make_add(1, 10, 100, 5, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 11, 105, 7, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 12, 95, 1, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 13, 100, 2, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 20, 110, 3, Side::kSell), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 21, 108, 4, Side::kSell), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 22, 120, 6, Side::kSell), ApplyResult::kOk);
  const auto& ob = b.book(1);
  EXPECT_EQ(dump_levels(ob.bids()), "95x1/1 100x7/2 105x7/1 ");
  EXPECT_EQ(dump_levels(ob.asks()), "120x6/1 110x3/1 108x4/1 ");
  ASSERT_NE(ob.best_bid(), nullptr);
  EXPECT_EQ(ob.best_bid()->price, 105);
  EXPECT_EQ(ob.best_ask()->price, 108);
  EXPECT_EQ(ob.order_count(), 7u);
  EXPECT_EQ(b.order_count(), 7u);
  EXPECT_EQ(b.book(0).order_count(), 0u) << "other instruments untouched";
  const book::Order* o = b.find(13);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->instrument, 1u);
  EXPECT_EQ(o->price, 100);
  EXPECT_EQ(o->quantity, 2u);
  EXPECT_EQ(o->side, Side::kBuy);
  EXPECT_EQ(b.find(14), nullptr);
  EXPECT_EQ(b.find(0), nullptr);
}

TEST(OrderBook, ModifyInPlaceAndAcrossLevels) {
  BookSet b(kSmall);
  apply_expect(b, Message::make_add(0, 1, 100, 5, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 2, 100, 3, Side::kBuy), ApplyResult::kOk);
  // Same price: the level keeps its order count, its quantity follows.
  apply_expect(b, Message::make_modify(0, 1, 100, 9), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "100x12/2 ");
  // New price: leaves its level, joins or creates the new one.
  apply_expect(b, Message::make_modify(0, 1, 101, 9), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "100x3/1 101x9/1 ");
  apply_expect(b, Message::make_modify(0, 2, 101, 1), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "101x10/2 ");
  EXPECT_EQ(b.find(2)->price, 101);
  EXPECT_EQ(b.find(2)->quantity, 1u);
}

TEST(OrderBook, DeleteAndExecute) {
  BookSet b(kSmall);
  apply_expect(b, Message::make_add(2, 1, 50, 10, Side::kSell), ApplyResult::kOk);
  apply_expect(b, Message::make_add(2, 2, 50, 4, Side::kSell), ApplyResult::kOk);
  apply_expect(b, Message::make_execute(2, 1, 50, 3, 1), ApplyResult::kOk);
  EXPECT_EQ(b.find(1)->quantity, 7u);
  EXPECT_EQ(dump_levels(b.book(2).asks()), "50x11/2 ");
  // An execution at another price than the order's still fills the order.
  apply_expect(b, Message::make_execute(2, 1, 49, 7, 2), ApplyResult::kOk);
  EXPECT_EQ(b.find(1), nullptr) << "a full fill removes the order";
  EXPECT_EQ(dump_levels(b.book(2).asks()), "50x4/1 ");
  apply_expect(b, Message::make_delete(2, 2), ApplyResult::kOk);
  EXPECT_TRUE(b.book(2).asks().empty());
  EXPECT_EQ(b.order_count(), 0u);
  EXPECT_EQ(b.book(2).checksum(), BookSet::status_hash(2, TradingStatus::kPreOpen)) << "an emptied book has the checksum of an empty book";
}

TEST(OrderBook, StatusDefinitionAndIgnored) {
  BookSet b(kSmall);
  const uint64_t c0 = b.book(3).checksum();
  apply_expect(b, Message::make_status(3, TradingStatus::kHalted), ApplyResult::kOk);
  EXPECT_EQ(b.book(3).status(), TradingStatus::kHalted);
  EXPECT_NE(b.book(3).checksum(), c0);
  apply_expect(b, Message::make_status(3, TradingStatus::kPreOpen), ApplyResult::kOk);
  EXPECT_EQ(b.book(3).checksum(), c0);

  apply_expect(b, Message::make_definition(3, "ZZZ", 10, -2), ApplyResult::kOk);
  EXPECT_TRUE(b.book(3).defined());
  EXPECT_EQ(b.book(3).definition().symbol_view(), "ZZZ");
  EXPECT_EQ(b.book(3).definition().lot_size, 10u);
  EXPECT_EQ(b.book(3).checksum(), c0) << "definitions are not part of the checksum";

  const std::byte payload[3]{};
  apply_expect(b, Message::make_opaque(3, payload), ApplyResult::kIgnored);
}

TEST(OrderBook, ApplyLeavesInstrumentSequenceAlone) {
  BookSet b(kSmall);
  Message m = Message::make_add(0, 1, 1, 1, Side::kBuy);
  m.instrument_seq = 77;
  ASSERT_EQ(b.apply(m), ApplyResult::kOk);
  EXPECT_EQ(b.book(0).instrument_seq(), 0u);
  b.set_instrument_seq(0, 5);
  EXPECT_EQ(b.book(0).instrument_seq(), 5u);
}

TEST(OrderBook, ErrorPaths) {
  BookSet b(kSmall);
  apply_expect(b, Message::make_add(0, 1, 100, 5, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(1, 2, 100, 5, Side::kSell), ApplyResult::kOk);

  apply_expect(b, Message::make_add(4, 3, 1, 1, Side::kBuy), ApplyResult::kBadInstrument);
  apply_expect(b, Message::make_delete(UINT32_MAX, 1), ApplyResult::kBadInstrument);
  apply_expect(b, Message::make_status(4, TradingStatus::kHalted), ApplyResult::kBadInstrument);

  apply_expect(b, Message::make_add(0, 1, 100, 5, Side::kBuy), ApplyResult::kDuplicateOrder);
  apply_expect(b, Message::make_add(2, 1, 7, 1, Side::kSell), ApplyResult::kDuplicateOrder, "ids are unique across instruments");

  apply_expect(b, Message::make_add(0, 0, 100, 5, Side::kBuy), ApplyResult::kBadOrderId);
  apply_expect(b, Message::make_add(0, 0, 100, 0, Side::kBuy), ApplyResult::kBadOrderId, "id checked first");
  apply_expect(b, Message::make_add(0, 3, 100, 0, Side::kBuy), ApplyResult::kBadQuantity);

  for (uint64_t id : {uint64_t{0}, uint64_t{99}}) {
    apply_expect(b, Message::make_modify(0, id, 1, 1), ApplyResult::kUnknownOrder);
    apply_expect(b, Message::make_delete(0, id), ApplyResult::kUnknownOrder);
    apply_expect(b, Message::make_execute(0, id, 1, 1, 1), ApplyResult::kUnknownOrder);
  }
  // Order 2 rests on instrument 1: instrument 0 does not know it.
  apply_expect(b, Message::make_modify(0, 2, 1, 1), ApplyResult::kUnknownOrder);
  apply_expect(b, Message::make_delete(0, 2), ApplyResult::kUnknownOrder);
  apply_expect(b, Message::make_execute(0, 2, 1, 1, 1), ApplyResult::kUnknownOrder);

  apply_expect(b, Message::make_modify(0, 1, 100, 0), ApplyResult::kBadQuantity);
  apply_expect(b, Message::make_execute(0, 1, 100, 0, 1), ApplyResult::kBadQuantity);
  apply_expect(b, Message::make_execute(0, 1, 100, 6, 1), ApplyResult::kBadQuantity, "above resting");
  apply_expect(b, Message::make_execute(0, 1, 100, 5, 1), ApplyResult::kOk, "exactly resting");
}

TEST(OrderBook, OrdersFull) {
  BookSet b({2, 3, 8});
  for (uint64_t id = 1; id <= 3; ++id)
    apply_expect(b, Message::make_add(static_cast<uint32_t>(id % 2), id, 10, 1, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 4, 10, 1, Side::kBuy), ApplyResult::kOrdersFull);
  apply_expect(b, Message::make_add(0, 1, 10, 1, Side::kBuy), ApplyResult::kDuplicateOrder, "checked before full");
  apply_expect(b, Message::make_delete(1, 1), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 4, 10, 1, Side::kBuy), ApplyResult::kOk, "a freed slot is reused");
  apply_expect(b, Message::make_execute(0, 2, 10, 1, 1), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 5, 10, 1, Side::kBuy), ApplyResult::kOk);
}

TEST(OrderBook, LevelsFull) {
  BookSet b({1, 32, 2});
  apply_expect(b, Message::make_add(0, 1, 100, 1, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 2, 101, 1, Side::kBuy), ApplyResult::kOk);
  apply_expect(b, Message::make_add(0, 3, 102, 1, Side::kBuy), ApplyResult::kLevelsFull);
  apply_expect(b, Message::make_add(0, 3, 99, 1, Side::kBuy), ApplyResult::kLevelsFull);
  apply_expect(b, Message::make_add(0, 3, 101, 1, Side::kBuy), ApplyResult::kOk, "an existing level has room");
  apply_expect(b, Message::make_add(0, 4, 102, 1, Side::kSell), ApplyResult::kOk, "the other side is separate");

  // Order 3 shares level 101 with order 2: moving it to a new price needs a new level.
  apply_expect(b, Message::make_modify(0, 3, 105, 1), ApplyResult::kLevelsFull);
  // Order 1 is alone at 100: moving it frees its level first, so it fits.
  apply_expect(b, Message::make_modify(0, 1, 105, 7), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "101x2/2 105x7/1 ");
  // Moving to an existing level never needs room.
  apply_expect(b, Message::make_modify(0, 3, 105, 1), ApplyResult::kOk);
  // Same price, full side: quantity change only.
  apply_expect(b, Message::make_modify(0, 2, 101, 9), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "101x9/1 105x8/2 ");
}

TEST(OrderBook, ChecksumIsOrderIndependent) {
  BookSet a(kSmall), b(kSmall);
  const Message ms[] = {Message::make_add(0, 1, 100, 5, Side::kBuy), Message::make_add(0, 2, 101, 6, Side::kSell),
                        Message::make_add(0, 3, 99, 7, Side::kBuy), Message::make_status(0, TradingStatus::kTrading)};
  for (const auto& m : ms) ASSERT_EQ(a.apply(m), ApplyResult::kOk);
  for (int i = 3; i >= 0; --i) ASSERT_EQ(b.apply(ms[i]), ApplyResult::kOk);
  EXPECT_EQ(a.book(0).checksum(), b.book(0).checksum());
  EXPECT_EQ(a.global_checksum(), b.global_checksum());
  EXPECT_EQ(a.diff(0, b), "");
  // Any field of any order changes it.
  BookSet c(kSmall);
  for (const auto& m : ms) ASSERT_EQ(c.apply(m), ApplyResult::kOk);
  ASSERT_EQ(c.apply(Message::make_modify(0, 1, 100, 4)), ApplyResult::kOk);
  EXPECT_NE(c.book(0).checksum(), a.book(0).checksum());
  // The same order on another instrument hashes differently.
  EXPECT_NE(BookSet::order_hash(0, 1, 100, 5, Side::kBuy), BookSet::order_hash(1, 1, 100, 5, Side::kBuy));
  EXPECT_NE(BookSet::order_hash(0, 1, 100, 5, Side::kBuy), BookSet::order_hash(0, 1, 100, 5, Side::kSell));
  EXPECT_NE(BookSet::status_hash(0, TradingStatus::kHalted), BookSet::status_hash(1, TradingStatus::kHalted));
}

TEST(OrderBook, ClearOneInstrument) {
  BookSet b(kSmall);
  for (uint64_t id = 1; id <= 10; ++id)
    ASSERT_EQ(b.apply(Message::make_add(static_cast<uint32_t>(id % 2), id, static_cast<int64_t>(id % 4), 1,
                                        id % 3 ? Side::kBuy : Side::kSell)),
              ApplyResult::kOk);
  ASSERT_EQ(b.apply(Message::make_status(1, TradingStatus::kHalted)), ApplyResult::kOk);
  ASSERT_EQ(b.apply(Message::make_definition(1, "ONE", 1, 0)), ApplyResult::kOk);
  b.set_instrument_seq(1, 40);
  b.set_instrument_seq(0, 30);
  const std::string other = dump(b, 0);
  b.clear(1);
  expect_consistent(b);
  EXPECT_EQ(dump(b, 0), other) << "clear(1) touched instrument 0";
  const auto& ob = b.book(1);
  EXPECT_EQ(ob.order_count(), 0u);
  EXPECT_TRUE(ob.bids().empty());
  EXPECT_TRUE(ob.asks().empty());
  EXPECT_EQ(ob.instrument_seq(), 0u);
  EXPECT_EQ(ob.status(), TradingStatus::kPreOpen);
  EXPECT_EQ(ob.checksum(), BookSet::status_hash(1, TradingStatus::kPreOpen));
  EXPECT_EQ(b.order_count(), 5u);
  for (uint64_t id = 1; id <= 10; id += 2) EXPECT_EQ(b.find(id), nullptr) << id;
  // Its ids are free again.
  EXPECT_EQ(b.apply(Message::make_add(1, 1, 5, 5, Side::kSell)), ApplyResult::kOk);
  expect_consistent(b);
}

TEST(OrderBook, ClearAll) {
  BookSet b(kSmall);
  BookSet fresh(kSmall);
  for (uint64_t id = 1; id <= 20; ++id)
    ASSERT_EQ(b.apply(Message::make_add(static_cast<uint32_t>(id % 4), id, 1, 1, Side::kBuy)), ApplyResult::kOk);
  ASSERT_EQ(b.apply(Message::make_status(2, TradingStatus::kClosed)), ApplyResult::kOk);
  ASSERT_EQ(b.apply(Message::make_definition(2, "X", 1, 0)), ApplyResult::kOk);
  b.set_instrument_seq(2, 9);
  b.clear_all();
  expect_consistent(b);
  EXPECT_EQ(dump(b), dump(fresh));
  // Full capacity is available again.
  for (uint64_t id = 1; id <= 32; ++id)
    ASSERT_EQ(b.apply(Message::make_add(0, id + 100, static_cast<int64_t>(id % 4), 1, Side::kBuy)), ApplyResult::kOk);
  EXPECT_EQ(b.apply(Message::make_add(0, 1, 1, 1, Side::kBuy)), ApplyResult::kOrdersFull);
}

TEST(OrderBook, DiffFindsEachKindOfDifference) {
  auto make = [] {
    BookSet b(kSmall);
    EXPECT_EQ(b.apply(Message::make_add(0, 1, 100, 5, Side::kBuy)), ApplyResult::kOk);
    EXPECT_EQ(b.apply(Message::make_add(0, 2, 101, 5, Side::kSell)), ApplyResult::kOk);
    b.set_instrument_seq(0, 2);
    return b;
  };
  BookSet a = make();
  {
    BookSet b = make();
    EXPECT_EQ(a.diff(0, b), "");
    EXPECT_EQ(b.diff(0, a), "");
  }
  {
    BookSet b = make();
    b.set_instrument_seq(0, 3);
    EXPECT_NE(a.diff(0, b).find("sequence"), std::string::npos) << a.diff(0, b);
  }
  {
    BookSet b = make();
    b.set_status(0, TradingStatus::kHalted);
    EXPECT_NE(a.diff(0, b).find("status"), std::string::npos) << a.diff(0, b);
  }
  {
    BookSet b = make();
    ASSERT_EQ(b.apply(Message::make_delete(0, 2)), ApplyResult::kOk);
    EXPECT_NE(a.diff(0, b).find("orders"), std::string::npos) << a.diff(0, b);
  }
  {
    BookSet b = make();
    ASSERT_EQ(b.apply(Message::make_modify(0, 2, 101, 6)), ApplyResult::kOk);
    EXPECT_NE(a.diff(0, b).find("order 2"), std::string::npos) << a.diff(0, b);
  }
  {
    // Same ids, the order moved to another instrument.
    BookSet b(kSmall);
    ASSERT_EQ(b.apply(Message::make_add(0, 1, 100, 5, Side::kBuy)), ApplyResult::kOk);
    ASSERT_EQ(b.apply(Message::make_add(1, 2, 101, 5, Side::kSell)), ApplyResult::kOk);
    ASSERT_EQ(b.apply(Message::make_add(0, 3, 101, 5, Side::kSell)), ApplyResult::kOk);
    b.set_instrument_seq(0, 2);
    EXPECT_FALSE(a.diff(0, b).empty());
  }
}

TEST(OrderBook, MoveKeepsLevelsValid) {
  BookSet a(kSmall);
  ASSERT_EQ(a.apply(Message::make_add(0, 1, 100, 5, Side::kBuy)), ApplyResult::kOk);
  BookSet b = std::move(a);
  ASSERT_EQ(b.apply(Message::make_add(0, 2, 100, 5, Side::kBuy)), ApplyResult::kOk);
  EXPECT_EQ(dump_levels(b.book(0).bids()), "100x10/2 ");
  expect_consistent(b);
}

TEST(OrderBook, ToStringCoversEveryResult) {
  for (int r = 0; r <= static_cast<int>(ApplyResult::kIgnored); ++r)
    EXPECT_NE(book::to_string(static_cast<ApplyResult>(r)), "?") << r;
}

// A relay that begins from its upstream's snapshot takes the books over
// whole: orders, levels, definitions, statuses, sequences, checksums.
TEST(OrderBook, AssignCopiesEverythingIntoTheCapacitiesItHas) {
  BookSet a(kSmall);
  wire::InstrumentDefinition def{};
  def.lot_size = 25;
  a.set_definition(1, def);
  ASSERT_EQ(a.apply(Message::make_add(1, 10, 100, 5, Side::kBuy)), ApplyResult::kOk);
  ASSERT_EQ(a.apply(Message::make_add(1, 11, 100, 7, Side::kBuy)), ApplyResult::kOk);
  ASSERT_EQ(a.apply(Message::make_add(1, 12, 104, 3, Side::kSell)), ApplyResult::kOk);
  ASSERT_EQ(a.apply(Message::make_add(3, 13, 90, 1, Side::kSell)), ApplyResult::kOk);
  a.set_status(3, TradingStatus::kHalted);
  a.set_instrument_seq(1, 41);
  a.set_instrument_seq(3, 7);

  BookSet b(kSmall);
  ASSERT_EQ(b.apply(Message::make_add(2, 99, 50, 1, Side::kBuy)), ApplyResult::kOk);  // what b held goes
  ASSERT_EQ(b.assign(a), ApplyResult::kOk);
  for (uint32_t i = 0; i < kSmall.max_instruments; ++i) {
    EXPECT_EQ(a.diff(i, b), "") << "instrument " << i;
    EXPECT_EQ(a.book(i).checksum(), b.book(i).checksum()) << "instrument " << i;
    EXPECT_EQ(a.book(i).defined(), b.book(i).defined()) << "instrument " << i;
  }
  EXPECT_EQ(b.book(1).definition().lot_size, 25u);
  EXPECT_EQ(b.global_checksum(), a.global_checksum());
  EXPECT_EQ(b.order_count(), 4u);
  EXPECT_EQ(b.find(99), nullptr);
  expect_consistent(b);

  BookSet tiny({4, 2, 4});  // two orders' room
  EXPECT_EQ(tiny.assign(a), ApplyResult::kOrdersFull);
}

}  // namespace
}  // namespace mdcast::test
