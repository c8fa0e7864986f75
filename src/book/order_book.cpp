#include "mdcast/book/order_book.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>

#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"

namespace mdcast::book {
namespace {

uint64_t mix(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Bids ascending, asks descending: the best price is at the back.
bool before(wire::Side s, int64_t a, int64_t b) noexcept {
  return s == wire::Side::kBuy ? a < b : a > b;
}

}  // namespace

uint64_t BookSet::order_hash(uint32_t inst, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept {
  uint64_t h = mix(id ^ 0x9e3779b97f4a7c15ull);
  h = mix(h ^ static_cast<uint64_t>(price));
  h = mix(h ^ (uint64_t{qty} << 8) ^ static_cast<uint64_t>(side) ^ (uint64_t{inst} << 40));
  return h;
}

uint64_t BookSet::status_hash(uint32_t inst, wire::TradingStatus st) noexcept {
  return mix((uint64_t{inst} << 8) ^ static_cast<uint64_t>(st) ^ 0x5bd1e9955bd1e995ull);
}

std::string_view to_string(ApplyResult r) noexcept {
  switch (r) {
    case ApplyResult::kOk: return "ok";
    case ApplyResult::kBadInstrument: return "instrument id out of range";
    case ApplyResult::kDuplicateOrder: return "duplicate order id";
    case ApplyResult::kUnknownOrder: return "unknown order id";
    case ApplyResult::kBadQuantity: return "bad quantity";
    case ApplyResult::kBadOrderId: return "order id 0";
    case ApplyResult::kOrdersFull: return "order capacity reached";
    case ApplyResult::kLevelsFull: return "price-level capacity reached";
    case ApplyResult::kIgnored: return "not a book message";
    case ApplyResult::kBadField: return "field out of range (side or trading status)";
    case ApplyResult::kNotPublishable: return "message type not publishable by applications";
  }
  return "?";
}

BookSet::BookSet(const BookConfig& cfg) : cfg_(cfg) {
  if (cfg.max_instruments == 0 || cfg.max_orders == 0 || cfg.max_levels == 0)
    fail("book capacities must be positive (instruments {}, orders {}, levels {})", cfg.max_instruments,
         cfg.max_orders, cfg.max_levels);
  if (cfg.max_orders >= (1u << 30)) fail("max_orders {} too large (limit 2^30)", cfg.max_orders);
  const uint64_t cap = std::bit_ceil(uint64_t{cfg.max_orders} * 2);
  try {
    books_ = std::make_unique<OrderBook[]>(cfg.max_instruments);
    // Default-initialised (not zeroed): clear_all() sets what must be set, and
    // a level is read only below its side's count. Zeroing would touch every
    // page up front: feed.max_levels 65536 on 1024 instruments is 3.2 GB of
    // page faults (33 s here) for books that use a few levels each, where the
    // untouched pages now cost nothing until a book grows into them.
    levels_ = std::make_unique_for_overwrite<Level[]>(size_t{cfg.max_instruments} * 2 * cfg.max_levels);
    pool_ = std::make_unique_for_overwrite<Order[]>(cfg.max_orders);
    links_ = std::make_unique_for_overwrite<Link[]>(cfg.max_orders);
    index_ = std::make_unique_for_overwrite<Slot[]>(cap);
  } catch (const std::bad_alloc&) {
    fail("cannot allocate {} for books of {} instruments, {} orders, {} levels per side: out of memory",
         format_bytes(footprint(cfg)), cfg.max_instruments, cfg.max_orders, cfg.max_levels);
  }
  index_mask_ = cap - 1;
  for (uint32_t i = 0; i < cfg.max_instruments; ++i) {
    OrderBook& b = books_[i];
    b.instrument_ = i;
    b.bids_ = &levels_[size_t{i} * 2 * cfg.max_levels];
    b.asks_ = b.bids_ + cfg.max_levels;
    b.checksum_ = status_hash(i, b.status_);
    global_checksum_ += b.checksum_;
  }
  clear_all();
}

uint64_t BookSet::footprint(const BookConfig& cfg) noexcept {
  const uint64_t inst = cfg.max_instruments, orders = cfg.max_orders;
  return inst * sizeof(OrderBook) + inst * 2 * cfg.max_levels * sizeof(Level) + orders * (sizeof(Order) + sizeof(Link)) +
         std::bit_ceil(orders * 2) * sizeof(Slot);
}

void BookSet::clear_all() noexcept {
  for (uint32_t i = 0; i < cfg_.max_orders; ++i) links_[i] = {kNil, i + 1 < cfg_.max_orders ? i + 1 : kNil};
  free_head_ = 0;
  live_orders_ = 0;
  std::memset(static_cast<void*>(index_.get()), 0, (index_mask_ + 1) * sizeof(Slot));
  global_checksum_ = 0;
  for (uint32_t i = 0; i < cfg_.max_instruments; ++i) {
    OrderBook& b = books_[i];
    b.head_ = kNil;
    b.order_count_ = 0;
    b.bid_count_ = b.ask_count_ = 0;
    b.iseq_ = 0;
    b.defined_ = false;
    b.def_ = {};
    b.status_ = wire::TradingStatus::kPreOpen;
    b.checksum_ = status_hash(i, b.status_);
    global_checksum_ += b.checksum_;
  }
}

uint32_t BookSet::lookup(uint64_t id) const noexcept {
  for (uint64_t h = mix(id) & index_mask_;; h = (h + 1) & index_mask_) {
    const Slot& s = index_[h];
    if (s.id == id) return s.idx;
    if (s.id == 0) return kNil;
  }
}

const Order* BookSet::find(uint64_t id) const noexcept {
  if (id == 0) return nullptr;
  const uint32_t i = lookup(id);
  return i == kNil ? nullptr : &pool_[i];
}

void BookSet::index_insert(uint64_t id, uint32_t idx) noexcept {
  uint64_t h = mix(id) & index_mask_;
  while (index_[h].id != 0) h = (h + 1) & index_mask_;
  index_[h] = {id, idx};
}

void BookSet::index_erase(uint64_t id) noexcept {
  uint64_t h = mix(id) & index_mask_;
  while (index_[h].id != id) h = (h + 1) & index_mask_;
  // Backward-shift deletion keeps probe chains intact without tombstones.
  uint64_t hole = h;
  for (uint64_t j = (hole + 1) & index_mask_; index_[j].id != 0; j = (j + 1) & index_mask_) {
    const uint64_t home = mix(index_[j].id) & index_mask_;
    // Move j into the hole unless its home lies cyclically in (hole, j].
    const bool home_in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!home_in_range) {
      index_[hole] = index_[j];
      hole = j;
    }
  }
  index_[hole] = {0, 0};
}

bool BookSet::level_room(const OrderBook& b, wire::Side s, int64_t price) const noexcept {
  const Level* arr = s == wire::Side::kBuy ? b.bids_ : b.asks_;
  const uint32_t n = s == wire::Side::kBuy ? b.bid_count_ : b.ask_count_;
  if (n < cfg_.max_levels) return true;
  // Full: room only if the price already has a level.
  const Level* it = std::lower_bound(arr, arr + n, price, [s](const Level& l, int64_t p) { return before(s, l.price, p); });
  return it != arr + n && it->price == price;
}

void BookSet::level_add(OrderBook& b, wire::Side s, int64_t price, uint64_t qty) noexcept {
  Level* arr = s == wire::Side::kBuy ? b.bids_ : b.asks_;
  uint32_t& n = s == wire::Side::kBuy ? b.bid_count_ : b.ask_count_;
  Level* it = std::lower_bound(arr, arr + n, price, [s](const Level& l, int64_t p) { return before(s, l.price, p); });
  if (it != arr + n && it->price == price) {
    it->quantity += qty;
    ++it->orders;
    return;
  }
  std::memmove(it + 1, it, static_cast<size_t>(arr + n - it) * sizeof(Level));
  *it = {price, qty, 1};
  ++n;
}

void BookSet::level_sub(OrderBook& b, wire::Side s, int64_t price, uint64_t qty, bool remove_order) noexcept {
  Level* arr = s == wire::Side::kBuy ? b.bids_ : b.asks_;
  uint32_t& n = s == wire::Side::kBuy ? b.bid_count_ : b.ask_count_;
  Level* it = std::lower_bound(arr, arr + n, price, [s](const Level& l, int64_t p) { return before(s, l.price, p); });
  it->quantity -= qty;
  if (remove_order) --it->orders;
  if (it->orders == 0) {
    std::memmove(it, it + 1, static_cast<size_t>(arr + n - it - 1) * sizeof(Level));
    --n;
  }
}

void BookSet::set_checksum(OrderBook& b, uint64_t value) noexcept {
  global_checksum_ += value - b.checksum_;
  b.checksum_ = value;
}

void BookSet::insert_order(OrderBook& b, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept {
  const uint32_t idx = free_head_;
  free_head_ = links_[idx].next;
  pool_[idx] = {id, price, qty, b.instrument_, side};
  links_[idx] = {kNil, b.head_};
  if (b.head_ != kNil) links_[b.head_].prev = idx;
  b.head_ = idx;
  ++b.order_count_;
  ++live_orders_;
  index_insert(id, idx);
  level_add(b, side, price, qty);
  set_checksum(b, b.checksum_ + order_hash(b.instrument_, id, price, qty, side));
}

void BookSet::erase_order(OrderBook& b, uint32_t idx) noexcept {
  const Order& o = pool_[idx];
  level_sub(b, o.side, o.price, o.quantity, true);
  set_checksum(b, b.checksum_ - order_hash(b.instrument_, o.id, o.price, o.quantity, o.side));
  index_erase(o.id);
  const Link l = links_[idx];
  if (l.prev != kNil) links_[l.prev].next = l.next; else b.head_ = l.next;
  if (l.next != kNil) links_[l.next].prev = l.prev;
  links_[idx] = {kNil, free_head_};
  free_head_ = idx;
  --b.order_count_;
  --live_orders_;
}

inline BookSet::Checked BookSet::validate_impl(const wire::Message& m) const noexcept {
  using R = ApplyResult;
  if (m.instrument >= cfg_.max_instruments) return {R::kBadInstrument};
  const OrderBook& b = books_[m.instrument];
  switch (m.type) {
    case wire::MsgType::kAddOrder: {
      if (static_cast<uint8_t>(m.add.side) > static_cast<uint8_t>(wire::Side::kSell)) return {R::kBadField};
      if (m.add.order_id == 0) return {R::kBadOrderId};
      if (m.add.quantity == 0) return {R::kBadQuantity};
      if (lookup(m.add.order_id) != kNil) return {R::kDuplicateOrder};
      if (free_head_ == kNil) return {R::kOrdersFull};
      if (!level_room(b, m.add.side, m.add.price)) return {R::kLevelsFull};
      return {R::kOk};
    }
    case wire::MsgType::kModifyOrder: {
      const uint32_t i = m.modify.order_id ? lookup(m.modify.order_id) : kNil;
      if (i == kNil || pool_[i].instrument != m.instrument) return {R::kUnknownOrder};
      if (m.modify.quantity == 0) return {R::kBadQuantity};
      const Order& o = pool_[i];
      if (o.price != m.modify.price && !level_room(b, o.side, m.modify.price)) {
        // The order's own level may vanish and make room; only then is it full.
        const Level* arr = o.side == wire::Side::kBuy ? b.bids_ : b.asks_;
        const uint32_t n = o.side == wire::Side::kBuy ? b.bid_count_ : b.ask_count_;
        const Level* it = std::lower_bound(arr, arr + n, o.price,
                                           [s = o.side](const Level& l, int64_t p) { return before(s, l.price, p); });
        if (it->orders > 1) return {R::kLevelsFull};
      }
      return {R::kOk, i};
    }
    case wire::MsgType::kDeleteOrder: {
      const uint32_t i = m.del.order_id ? lookup(m.del.order_id) : kNil;
      if (i == kNil || pool_[i].instrument != m.instrument) return {R::kUnknownOrder};
      return {R::kOk, i};
    }
    case wire::MsgType::kExecuteOrder: {
      const uint32_t i = m.execute.order_id ? lookup(m.execute.order_id) : kNil;
      if (i == kNil || pool_[i].instrument != m.instrument) return {R::kUnknownOrder};
      if (m.execute.quantity == 0 || m.execute.quantity > pool_[i].quantity) return {R::kBadQuantity};
      return {R::kOk, i};
    }
    case wire::MsgType::kTradingStatus:
      return {static_cast<uint8_t>(m.status.status) <= static_cast<uint8_t>(wire::TradingStatus::kClosed)
                  ? R::kOk
                  : R::kBadField};
    case wire::MsgType::kInstrumentDefinition:
      return {R::kOk};
    case wire::MsgType::kOpaque:
    case wire::MsgType::kSnapshotChunk:
    case wire::MsgType::kHeartbeat:
    case wire::MsgType::kFragment:
      return {R::kIgnored};
  }
  return {R::kIgnored};
}

inline void BookSet::apply_impl(const wire::Message& m, const Checked& c) noexcept {
  if (c.result != ApplyResult::kOk) return;
  OrderBook& b = books_[m.instrument];
  switch (m.type) {
    case wire::MsgType::kAddOrder:
      insert_order(b, m.add.order_id, m.add.price, m.add.quantity, m.add.side);
      break;
    case wire::MsgType::kModifyOrder: {
      Order& o = pool_[c.order];
      const uint64_t old_h = order_hash(b.instrument_, o.id, o.price, o.quantity, o.side);
      if (o.price == m.modify.price) {
        Level* arr = o.side == wire::Side::kBuy ? b.bids_ : b.asks_;
        const uint32_t n = o.side == wire::Side::kBuy ? b.bid_count_ : b.ask_count_;
        Level* it = std::lower_bound(arr, arr + n, o.price,
                                     [s = o.side](const Level& l, int64_t p) { return before(s, l.price, p); });
        it->quantity = it->quantity - o.quantity + m.modify.quantity;
      } else {
        level_sub(b, o.side, o.price, o.quantity, true);
        level_add(b, o.side, m.modify.price, m.modify.quantity);
      }
      o.price = m.modify.price;
      o.quantity = m.modify.quantity;
      set_checksum(b, b.checksum_ - old_h + order_hash(b.instrument_, o.id, o.price, o.quantity, o.side));
      break;
    }
    case wire::MsgType::kDeleteOrder:
      erase_order(b, c.order);
      break;
    case wire::MsgType::kExecuteOrder: {
      const uint32_t i = c.order;
      Order& o = pool_[i];
      if (m.execute.quantity == o.quantity) {
        erase_order(b, i);
      } else {
        const uint64_t old_h = order_hash(b.instrument_, o.id, o.price, o.quantity, o.side);
        level_sub(b, o.side, o.price, m.execute.quantity, false);
        o.quantity -= m.execute.quantity;
        set_checksum(b, b.checksum_ - old_h + order_hash(b.instrument_, o.id, o.price, o.quantity, o.side));
      }
      break;
    }
    case wire::MsgType::kTradingStatus:
      set_status(m.instrument, m.status.status);
      break;
    case wire::MsgType::kInstrumentDefinition:
      set_definition(m.instrument, m.definition);
      break;
    default:
      break;
  }
}

BookSet::Checked BookSet::validate(const wire::Message& m) const noexcept { return validate_impl(m); }

void BookSet::apply(const wire::Message& m, const Checked& c) noexcept { apply_impl(m, c); }

ApplyResult BookSet::apply(const wire::Message& m) noexcept {
  const Checked c = validate_impl(m);
  apply_impl(m, c);
  return c.result;
}

void BookSet::clear(uint32_t inst) noexcept {
  OrderBook& b = books_[inst];
  while (b.head_ != kNil) erase_order(b, b.head_);
  b.bid_count_ = b.ask_count_ = 0;
  b.iseq_ = 0;
  b.status_ = wire::TradingStatus::kPreOpen;
  set_checksum(b, status_hash(inst, b.status_));
}

ApplyResult BookSet::assign(const BookSet& other) noexcept {
  clear_all();
  for (uint32_t i = 0; i < other.cfg_.max_instruments; ++i) {
    const OrderBook& b = other.books_[i];
    if (!b.defined_ && b.head_ == kNil && b.iseq_ == 0 && b.status_ == wire::TradingStatus::kPreOpen) continue;
    if (!valid_instrument(i)) return ApplyResult::kBadInstrument;
    if (b.defined_) set_definition(i, b.def_);
    // Orders while the book is pre-open (as a snapshot is applied), then its status.
    for (uint32_t k = b.head_; k != kNil; k = other.links_[k].next) {
      const Order& o = other.pool_[k];
      if (const ApplyResult r = add_order(i, o.id, o.price, o.quantity, o.side); r != ApplyResult::kOk) return r;
    }
    set_status(i, b.status_);
    set_instrument_seq(i, b.iseq_);
  }
  return ApplyResult::kOk;
}

ApplyResult BookSet::add_order(uint32_t inst, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept {
  return apply(wire::Message::make_add(inst, id, price, qty, side));
}

void BookSet::set_status(uint32_t inst, wire::TradingStatus st) noexcept {
  OrderBook& b = books_[inst];
  set_checksum(b, b.checksum_ - status_hash(inst, b.status_) + status_hash(inst, st));
  b.status_ = st;
}

void BookSet::set_definition(uint32_t inst, const wire::InstrumentDefinition& d) noexcept {
  books_[inst].def_ = d;
  books_[inst].defined_ = true;
}

std::string BookSet::diff(uint32_t inst, const BookSet& other) const {
  const OrderBook& a = books_[inst];
  const OrderBook& b = other.books_[inst];
  if (a.iseq_ != b.iseq_) return fmt::format("instrument {}: sequence {} vs {}", inst, a.iseq_, b.iseq_);
  if (a.status_ != b.status_)
    return fmt::format("instrument {}: status {} vs {}", inst, static_cast<int>(a.status_), static_cast<int>(b.status_));
  if (a.order_count_ != b.order_count_)
    return fmt::format("instrument {}: {} orders vs {}", inst, a.order_count_, b.order_count_);
  for (uint32_t i = a.head_; i != kNil; i = links_[i].next) {
    const Order& o = pool_[i];
    const Order* p = other.find(o.id);
    if (!p || p->instrument != inst || p->price != o.price || p->quantity != o.quantity || p->side != o.side)
      return fmt::format("instrument {}: order {} differs", inst, o.id);
  }
  auto levels_equal = [](std::span<const Level> x, std::span<const Level> y) {
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](const Level& l, const Level& r) {
             return l.price == r.price && l.quantity == r.quantity && l.orders == r.orders;
           });
  };
  if (!levels_equal(a.bids(), b.bids()) || !levels_equal(a.asks(), b.asks()))
    return fmt::format("instrument {}: price levels differ", inst);
  if (a.checksum_ != b.checksum_) return fmt::format("instrument {}: checksum differs", inst);
  return {};
}

}  // namespace mdcast::book
