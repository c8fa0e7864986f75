// Order books for many instruments: per-order state (L3) and aggregated price
// levels (L2), with an incrementally maintained state checksum.
//
// Everything is preallocated from BookConfig at construction: applying a
// message never allocates. Order ids are unique within a session across all
// instruments (as on ITCH-style feeds), so one index serves every instrument.
//
// The checksum is a sum of per-order hashes plus a per-instrument status term:
// independent of insertion order, O(1) to update, and equal on two books iff
// (with overwhelming probability) they hold the same orders and status. The
// publisher puts it in heartbeats; subscribers compare (mdcast/feed).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "mdcast/wire/messages.hpp"

namespace mdcast::book {

struct BookConfig {
  uint32_t max_instruments = 1024;  // instrument ids are 0 .. max_instruments-1
  uint32_t max_orders = 1u << 20;   // resting orders across all instruments
  uint32_t max_levels = 256;        // price levels per side per instrument
};

enum class ApplyResult : uint8_t {
  kOk,
  kBadInstrument,   // id >= max_instruments
  kDuplicateOrder,  // add of an id already resting
  kUnknownOrder,    // modify/delete/execute of an id not resting (or on another instrument)
  kBadQuantity,     // zero quantity, or execute above the resting quantity
  kBadOrderId,      // order id 0 (reserved)
  kOrdersFull,      // max_orders reached
  kLevelsFull,      // max_levels reached on that side
  kIgnored,         // a message type that does not change a book (opaque, ...)
  kBadField,        // an enum field out of range (side, trading status)
  kNotPublishable,  // a type only the protocol itself sends (heartbeat, fragment, snapshot chunk)
};
[[nodiscard]] std::string_view to_string(ApplyResult r) noexcept;

struct Level {
  int64_t price;
  uint64_t quantity;
  uint32_t orders;
};

struct Order {
  uint64_t id;
  int64_t price;
  uint32_t quantity;
  uint32_t instrument;
  wire::Side side;
};

class BookSet;

// One instrument's book. Levels are kept with the best price at the back of
// each array (bids ascending, asks descending): activity clusters at the top
// of book, so inserts and removals there move few elements.
class OrderBook {
 public:
  [[nodiscard]] uint32_t instrument() const noexcept { return instrument_; }
  [[nodiscard]] uint32_t instrument_seq() const noexcept { return iseq_; }
  [[nodiscard]] wire::TradingStatus status() const noexcept { return status_; }
  [[nodiscard]] uint64_t checksum() const noexcept { return checksum_; }
  [[nodiscard]] uint32_t order_count() const noexcept { return order_count_; }
  [[nodiscard]] bool defined() const noexcept { return defined_; }
  [[nodiscard]] const wire::InstrumentDefinition& definition() const noexcept { return def_; }
  [[nodiscard]] std::span<const Level> bids() const noexcept { return {bids_, bid_count_}; }
  [[nodiscard]] std::span<const Level> asks() const noexcept { return {asks_, ask_count_}; }
  [[nodiscard]] const Level* best_bid() const noexcept { return bid_count_ ? &bids_[bid_count_ - 1] : nullptr; }
  [[nodiscard]] const Level* best_ask() const noexcept { return ask_count_ ? &asks_[ask_count_ - 1] : nullptr; }

 private:
  friend class BookSet;
  uint32_t instrument_ = 0;
  uint32_t iseq_ = 0;
  uint32_t order_count_ = 0;
  uint32_t head_ = UINT32_MAX;  // first order in this instrument's list (pool index)
  uint64_t checksum_ = 0;
  wire::TradingStatus status_ = wire::TradingStatus::kPreOpen;
  bool defined_ = false;
  wire::InstrumentDefinition def_{};
  Level* bids_ = nullptr;
  Level* asks_ = nullptr;
  uint32_t bid_count_ = 0;
  uint32_t ask_count_ = 0;
};

class BookSet {
 public:
  // Throws Error naming the capacities and the bytes when they cannot be
  // allocated (never a bare std::bad_alloc).
  explicit BookSet(const BookConfig& cfg);
  // What a BookSet of cfg allocates, in bytes: asked before building one, so
  // that capacities the host cannot hold are refused with numbers.
  [[nodiscard]] static uint64_t footprint(const BookConfig& cfg) noexcept;
  BookSet(BookSet&&) noexcept = default;
  BookSet& operator=(BookSet&&) noexcept = default;
  BookSet(const BookSet&) = delete;
  BookSet& operator=(const BookSet&) = delete;

  // What validating m against the book found: the verdict, and the resting
  // order it names (modify, delete, execute), so that applying it repeats
  // neither the checks nor the index lookup.
  struct Checked {
    ApplyResult result = ApplyResult::kIgnored;
    uint32_t order = UINT32_MAX;  // pool index of the order m names, if any
  };

  // Validates m against the book and applies it only if valid: on any error
  // the state is unchanged. Does not look at m.instrument_seq.
  ApplyResult apply(const wire::Message& m) noexcept;
  // Same validation without applying.
  [[nodiscard]] ApplyResult check(const wire::Message& m) const noexcept { return validate(m).result; }
  [[nodiscard]] Checked validate(const wire::Message& m) const noexcept;
  // Applies m after validate(m) returned c, the books unchanged since: one
  // check per message where validating and applying are apart (the
  // publisher validates before pacing, applies after). A c other than kOk
  // changes nothing; a stale one (the books changed in between) would
  // corrupt them, so callers keep the two adjacent.
  void apply(const wire::Message& m, const Checked& c) noexcept;

  // Records the instrument sequence of the last message applied to inst.
  void set_instrument_seq(uint32_t inst, uint32_t iseq) noexcept { books_[inst].iseq_ = iseq; }

  // This set becomes a copy of `other` (orders, definitions, statuses,
  // instrument sequences, so its checksums too), without allocating: what a
  // relay that begins from its upstream's snapshot takes over. kOk, or why
  // `other` does not fit this set's capacities (kBadInstrument, kOrdersFull,
  // kLevelsFull; the set is then partly copied and must not be used).
  ApplyResult assign(const BookSet& other) noexcept;

  // Snapshot support: drop every order of inst and reset its status.
  void clear(uint32_t inst) noexcept;
  void clear_all() noexcept;
  ApplyResult add_order(uint32_t inst, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept;
  void set_status(uint32_t inst, wire::TradingStatus st) noexcept;
  void set_definition(uint32_t inst, const wire::InstrumentDefinition& d) noexcept;

  [[nodiscard]] bool valid_instrument(uint32_t inst) const noexcept { return inst < cfg_.max_instruments; }
  [[nodiscard]] const OrderBook& book(uint32_t inst) const noexcept { return books_[inst]; }
  [[nodiscard]] uint32_t max_instruments() const noexcept { return cfg_.max_instruments; }
  [[nodiscard]] const BookConfig& config() const noexcept { return cfg_; }
  [[nodiscard]] uint64_t global_checksum() const noexcept { return global_checksum_; }
  [[nodiscard]] uint32_t order_count() const noexcept { return live_orders_; }
  [[nodiscard]] const Order* find(uint64_t id) const noexcept;

  // Visits inst's orders (in an unspecified but deterministic order).
  template <class Fn>
  void for_each_order(uint32_t inst, Fn&& fn) const {
    for (uint32_t i = books_[inst].head_; i != kNil; i = links_[i].next) fn(pool_[i]);
  }

  // Deep comparison of one instrument (orders, levels, status, sequence):
  // empty string if equal, else the first difference, for test diagnostics.
  [[nodiscard]] std::string diff(uint32_t inst, const BookSet& other) const;

  // The checksum contribution of one order / of a status (exposed for tests).
  static uint64_t order_hash(uint32_t inst, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept;
  static uint64_t status_hash(uint32_t inst, wire::TradingStatus st) noexcept;

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Link {
    uint32_t prev;
    uint32_t next;
  };

  // The bodies of validate() and apply(m, c), inlined into apply(m) (two
  // calls and a spilled verdict there cost ~5 % of BM_BookSetApply).
  [[gnu::always_inline]] Checked validate_impl(const wire::Message& m) const noexcept;
  [[gnu::always_inline]] void apply_impl(const wire::Message& m, const Checked& c) noexcept;
  [[nodiscard]] uint32_t lookup(uint64_t id) const noexcept;  // pool index or kNil
  void index_insert(uint64_t id, uint32_t idx) noexcept;
  void index_erase(uint64_t id) noexcept;
  [[nodiscard]] bool level_room(const OrderBook& b, wire::Side s, int64_t price) const noexcept;
  void level_add(OrderBook& b, wire::Side s, int64_t price, uint64_t qty) noexcept;
  void level_sub(OrderBook& b, wire::Side s, int64_t price, uint64_t qty, bool remove_order) noexcept;
  void insert_order(OrderBook& b, uint64_t id, int64_t price, uint32_t qty, wire::Side side) noexcept;
  void erase_order(OrderBook& b, uint32_t idx) noexcept;
  void set_checksum(OrderBook& b, uint64_t value) noexcept;

  BookConfig cfg_;
  std::unique_ptr<OrderBook[]> books_;
  std::unique_ptr<Level[]> levels_;
  std::unique_ptr<Order[]> pool_;
  std::unique_ptr<Link[]> links_;
  uint32_t free_head_ = kNil;
  uint32_t live_orders_ = 0;
  // Open-addressing index order id -> pool index (linear probing, backward-shift delete).
  struct Slot {
    uint64_t id;  // 0 = empty
    uint32_t idx;
  };
  std::unique_ptr<Slot[]> index_;
  uint64_t index_mask_ = 0;
  uint64_t global_checksum_ = 0;
};

}  // namespace mdcast::book
