// Deterministic synthetic order flow: many instruments with Zipf-skewed
// activity, a realistic add/modify/delete/execute mix around a random-walking
// mid price, occasional halts. The same seed gives the same stream.
//
// It keeps its own shadow of resting orders, so every message it produces is
// valid for a book that has applied all earlier ones. next() advances that
// shadow: a caller that gets "back-pressured" from a publisher retries the
// same message instead of asking for a new one.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "mdcast/core/rng.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::book {

struct GeneratorConfig {
  uint64_t seed = 1;
  uint32_t instruments = 100;        // ids 0 .. instruments-1
  // Non-empty: the flow is over these instrument ids instead (a channel's,
  // say); `instruments` is then ignored.
  std::vector<uint32_t> ids;
  double zipf_exponent = 1.0;        // activity skew: instrument rank r gets weight 1/r^s
  uint32_t target_orders = 40;       // resting orders per instrument the flow hovers around
  uint32_t max_orders = 120;         // hard cap per instrument (bounds price levels too)
  uint32_t price_band_ticks = 40;    // new orders rest within this many ticks of mid
  int64_t tick = 100;                // price units per tick (prices are 1e-4)
  double add_weight = 0.42;
  double modify_weight = 0.20;
  double delete_weight = 0.28;
  double execute_weight = 0.10;
  double halt_probability = 0.0002;  // per message: toggle one instrument Trading <-> Halted
};

class Generator {
 public:
  explicit Generator(const GeneratorConfig& cfg);

  // Produces the next message (instrument_seq left 0: the publisher assigns it).
  // The first 2*instruments messages define every instrument and open trading.
  void next(wire::Message& out) noexcept;

  [[nodiscard]] uint64_t produced() const noexcept { return produced_; }
  [[nodiscard]] const GeneratorConfig& config() const noexcept { return cfg_; }

 private:
  struct Resting {
    uint64_t id;
    int64_t price;
    uint32_t qty;
    wire::Side side;
  };
  struct Instrument {
    int64_t mid;
    uint32_t count = 0;
    bool halted = false;
  };
  uint32_t pick_instrument() noexcept;
  void next_local(wire::Message& out) noexcept;
  Resting* orders_of(uint32_t inst) noexcept { return &orders_[size_t{inst} * cfg_.max_orders]; }
  void remove_at(uint32_t inst, uint32_t i) noexcept;

  GeneratorConfig cfg_;
  Rng rng_;
  std::vector<double> cdf_;
  std::vector<Instrument> inst_;
  std::unique_ptr<Resting[]> orders_;
  uint64_t next_order_id_ = 1;
  uint64_t next_trade_id_ = 1;
  uint64_t produced_ = 0;
};

}  // namespace mdcast::book
