#include "mdcast/book/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"

namespace mdcast::book {

Generator::Generator(const GeneratorConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {
  if (!cfg_.ids.empty()) cfg_.instruments = static_cast<uint32_t>(cfg_.ids.size());
  if (cfg_.instruments == 0) fail("generator needs at least one instrument");
  if (cfg.max_orders < 4 || cfg.target_orders == 0 || cfg.target_orders > cfg.max_orders)
    fail("generator order limits invalid: target {} max {}", cfg.target_orders, cfg.max_orders);
  if (cfg.price_band_ticks == 0 || cfg.tick <= 0) fail("generator price band and tick must be positive");
  // Up to 2^20 instruments x 120 orders: gigabytes, asked for before they are zeroed.
  const uint64_t bytes = uint64_t{cfg_.instruments} * (cfg.max_orders * sizeof(Resting) + sizeof(Instrument) + sizeof(double));
  check_memory(bytes, fmt::format("the synthetic order flow ({} instruments x {} resting orders)", cfg_.instruments, cfg.max_orders),
               "generate fewer instruments (publisher.instruments)");
  cdf_.resize(cfg_.instruments);
  double sum = 0;
  for (uint32_t r = 0; r < cfg_.instruments; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), cfg.zipf_exponent);
    cdf_[r] = sum;
  }
  for (double& c : cdf_) c /= sum;
  inst_.resize(cfg_.instruments);
  for (uint32_t i = 0; i < cfg_.instruments; ++i)
    inst_[i].mid = (1000 + static_cast<int64_t>(rng_.below(9000))) * cfg.tick;
  orders_ = std::make_unique<Resting[]>(size_t{cfg_.instruments} * cfg.max_orders);
}

uint32_t Generator::pick_instrument() noexcept {
  // Rank r maps to instrument (r * 7919) % n so hot instruments are spread
  // over the id space rather than all at the front.
  const double u = rng_.uniform();
  const auto r = static_cast<uint32_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
  const uint32_t rank = std::min(r, cfg_.instruments - 1);
  return static_cast<uint32_t>((uint64_t{rank} * 7919u) % cfg_.instruments);
}

void Generator::remove_at(uint32_t inst, uint32_t i) noexcept {
  Resting* o = orders_of(inst);
  o[i] = o[--inst_[inst].count];
}

void Generator::next(wire::Message& out) noexcept {
  next_local(out);
  // The flow runs over local indexes 0..n-1; a subset maps them onto its ids.
  if (!cfg_.ids.empty()) out.instrument = cfg_.ids[out.instrument];
}

void Generator::next_local(wire::Message& out) noexcept {
  const uint64_t n = produced_++;
  if (n < cfg_.instruments) {
    const auto local = static_cast<uint32_t>(n);
    const uint32_t id = cfg_.ids.empty() ? local : cfg_.ids[local];
    char sym[wire::instrument_def::kSymbolLen];
    const auto r = fmt::format_to_n(sym, sizeof sym, "SYM{:05}", id);
    out = wire::Message::make_definition(local, std::string_view(sym, r.size), 100, -4);
    return;
  }
  if (n < 2ull * cfg_.instruments) {
    out = wire::Message::make_status(static_cast<uint32_t>(n - cfg_.instruments), wire::TradingStatus::kTrading);
    return;
  }

  if (cfg_.halt_probability > 0 && rng_.chance(cfg_.halt_probability)) {
    const uint32_t id = pick_instrument();
    Instrument& in = inst_[id];
    in.halted = !in.halted;
    out = wire::Message::make_status(id, in.halted ? wire::TradingStatus::kHalted : wire::TradingStatus::kTrading);
    return;
  }

  const uint32_t id = pick_instrument();
  Instrument& in = inst_[id];
  Resting* o = orders_of(id);

  // A slow random walk of the mid price.
  if (rng_.chance(0.05)) in.mid += (rng_.chance(0.5) ? 1 : -1) * cfg_.tick;
  if (in.mid < 10 * cfg_.tick) in.mid = 10 * cfg_.tick;

  enum { kAdd, kModify, kDelete, kExecute } action;
  if (in.count == 0) {
    action = kAdd;
  } else if (in.count >= cfg_.max_orders) {
    action = rng_.chance(0.7) ? kDelete : kExecute;
  } else {
    // Lean towards adds below the target and removals above it.
    const double fill = static_cast<double>(in.count) / cfg_.target_orders;
    const double wa = cfg_.add_weight * (fill < 1 ? 1.5 : 0.7);
    const double total = wa + cfg_.modify_weight + cfg_.delete_weight + cfg_.execute_weight;
    const double u = rng_.uniform() * total;
    action = u < wa ? kAdd
             : u < wa + cfg_.modify_weight ? kModify
             : u < wa + cfg_.modify_weight + cfg_.delete_weight ? kDelete
                                                               : kExecute;
  }

  switch (action) {
    case kAdd: {
      const auto side = rng_.chance(0.5) ? wire::Side::kBuy : wire::Side::kSell;
      const auto dist = 1 + static_cast<int64_t>(rng_.below(cfg_.price_band_ticks));
      const int64_t price = in.mid + (side == wire::Side::kBuy ? -dist : dist) * cfg_.tick;
      const auto qty = static_cast<uint32_t>(100 * (1 + rng_.below(20)));
      const uint64_t oid = next_order_id_++;
      o[in.count++] = {oid, price, qty, side};
      out = wire::Message::make_add(id, oid, price, qty, side);
      return;
    }
    case kModify: {
      Resting& r = o[rng_.below(in.count)];
      if (rng_.chance(0.5)) {
        const int64_t step = (rng_.chance(0.5) ? 1 : -1) * cfg_.tick;
        // Stay on the order's own side of mid.
        const int64_t np = r.price + step;
        if ((r.side == wire::Side::kBuy && np < in.mid) || (r.side == wire::Side::kSell && np > in.mid)) r.price = np;
      }
      r.qty = static_cast<uint32_t>(100 * (1 + rng_.below(20)));
      out = wire::Message::make_modify(id, r.id, r.price, r.qty);
      return;
    }
    case kDelete: {
      const auto i = static_cast<uint32_t>(rng_.below(in.count));
      out = wire::Message::make_delete(id, o[i].id);
      remove_at(id, i);
      return;
    }
    case kExecute: {
      // Executions hit the most aggressive of a few sampled orders.
      auto best = static_cast<uint32_t>(rng_.below(in.count));
      for (int k = 0; k < 3; ++k) {
        const auto c = static_cast<uint32_t>(rng_.below(in.count));
        const int64_t gap_c = std::abs(o[c].price - in.mid);
        const int64_t gap_b = std::abs(o[best].price - in.mid);
        if (gap_c < gap_b) best = c;
      }
      Resting& r = o[best];
      const uint32_t q = rng_.chance(0.5) ? r.qty : static_cast<uint32_t>(1 + rng_.below(r.qty));
      out = wire::Message::make_execute(id, r.id, r.price, q, next_trade_id_++);
      if (q == r.qty)
        remove_at(id, best);
      else
        r.qty -= q;
      return;
    }
  }
}

}  // namespace mdcast::book
