// A conflating relay: a feed of its own whose books follow an upstream
// feed's at the pace a slow consumer chooses - a GUI, a risk engine, a desk
// on a thin link - instead of every message (`mdcast relay --conflate 100ms`).
//
//   runtime::ConflateCounters counters;
//   hooks.publish = [&](auto& lane) {
//     auto up = open_up();
//     return runtime::conflate_lane(lane, *up, sub_cfg, opts, limits, 100 * kNsPerMs, counters, nullptr,
//                                   [](uint64_t) { return true; }).paced;
//   };
//
// Every interval (a conflation point) the relay publishes, for each
// instrument that changed upstream since the last point, the messages that
// take its own books to the upstream's as they stand: deletes of orders
// gone (or turned to the other side), then the definition and trading
// status where they differ, then a modify of each order whose price or
// quantity moved and an add of each it does not hold. An order that moved
// many times between points is one message. Its subscribers' books are
// the upstream's at each point, whatever the upstream's rate; a consumer
// that reads one point per interval never falls behind by more than the
// changes of one interval, so it never needs a snapshot for being slow.
// After each point the relay compares each changed instrument's checksum
// with the upstream's (ConflateCounters::mismatches: never expected).
//
// The conflated feed is a session of its own (its own sequence numbers and
// heartbeat checksums, which its subscribers check). It follows the
// upstream across the upstream's snapshots and session changes: what it
// publishes is the upstream subscriber's books, wherever they came from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/runtime/relay.hpp"

namespace mdcast::runtime {

#define MDCAST_CONFLATE_COUNTERS(X)                                                                                \
  X(points, "conflation points: the changed instruments' books published")                                        \
  X(instruments, "instrument states published (each changed instrument once per point)")                          \
  X(messages, "messages published downstream")                                                                    \
  X(upstream_messages, "upstream messages conflated")                                                             \
  X(mismatches, "instruments whose published book differed from the upstream's after a point (never expected)") \
  X(refused, "messages the relay's own books refused (counted, the instrument is published again next point)")   \
  X(waits, "messages that waited for the downstream medium (back-pressure)")

MDCAST_DEFINE_COUNTER_STRUCT(ConflateCounters, MDCAST_CONFLATE_COUNTERS);

// The upstream subscriber's handler: notes what changed, and publishes the
// changed instruments' books into the downstream agent at each point.
// Everything is sized here, from the books' capacities: a point allocates
// nothing.
template <class Down>
class Conflator {
 public:
  Conflator(Down& down, ConflateCounters& c, uint64_t interval_ns)
      : down_(down),
        c_(c),
        interval_ns_(interval_ns),
        n_inst_(down.core().books().max_instruments()),
        dirty_(std::make_unique<bool[]>(n_inst_)),
        changed_(std::make_unique<uint32_t[]>(n_inst_)),
        gone_(std::make_unique<uint64_t[]>(down.core().books().config().max_orders)) {}

  void watch(const feed::SubscriberCore& upstream) noexcept { up_ = &upstream; }

  void on_message(const wire::Message& m, const feed::Delivery&) noexcept {
    c_.upstream_messages.add();
    mark(m.instrument);
  }
  void on_snapshot(uint32_t instrument, const book::BookSet*) noexcept { mark(instrument); }
  // A new session upstream starts from empty books: every instrument moves.
  void on_reset(uint64_t) noexcept {
    for (uint32_t i = 0; i < n_inst_; ++i) mark(i);
  }

  // After each round of the upstream agent: a point once the interval has passed.
  void end_round(uint64_t now) noexcept {
    if (now - last_point_ >= interval_ns_) publish_point(now);
  }
  // The upstream's session ended and all of it was delivered: the last point.
  void finish(uint64_t now) noexcept { publish_point(now); }

  // The changed instruments' books as the upstream has them now.
  void publish_point(uint64_t now) noexcept {
    last_point_ = now;
    if (n_changed_ == 0 || failed() || !up_ || !up_->books()) return;
    const book::BookSet& up = *up_->books();
    const book::BookSet& own = down_.core().books();
    // Deletes first, every instrument's: an order id that moved from one
    // instrument to another upstream is free again before it is added.
    size_t n_gone = 0;
    for (uint32_t k = 0; k < n_changed_; ++k) {
      const uint32_t i = changed_[k];
      own.for_each_order(i, [&](const book::Order& o) {
        const book::Order* u = up.find(o.id);
        if (!u || u->instrument != i || u->side != o.side) gone_[n_gone++] = o.id;
      });
      for (size_t g = 0; g < n_gone && !failed(); ++g) send(wire::Message::make_delete(i, gone_[g]), now);
      n_gone = 0;
    }
    for (uint32_t k = 0; k < n_changed_ && !failed(); ++k) {
      const uint32_t i = changed_[k];
      const book::OrderBook& ub = up.book(i);
      const book::OrderBook& ob = own.book(i);
      if (ub.defined() && (!ob.defined() || !same(ub.definition(), ob.definition()))) {
        wire::Message m;
        m.type = wire::MsgType::kInstrumentDefinition;
        m.instrument = i;
        m.definition = ub.definition();
        send(m, now);
      }
      if (ub.status() != ob.status()) send(wire::Message::make_status(i, ub.status()), now);
      up.for_each_order(i, [&](const book::Order& o) {
        if (failed()) return;
        const book::Order* mine = own.find(o.id);
        if (!mine)
          send(wire::Message::make_add(i, o.id, o.price, o.quantity, o.side), now);
        else if (mine->price != o.price || mine->quantity != o.quantity)
          send(wire::Message::make_modify(i, o.id, o.price, o.quantity), now);
      });
    }
    down_.flush(now);
    c_.points.add();
    c_.instruments.add(n_changed_);
    const uint32_t n = n_changed_;
    n_changed_ = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t i = changed_[k];
      dirty_[i] = false;
      if (own.book(i).checksum() != up.book(i).checksum()) {
        c_.mismatches.add();
        mark(i);  // published again at the next point
      }
    }
  }

  [[nodiscard]] bool failed() const noexcept { return stalled_; }
  [[nodiscard]] std::string failure_text() const {
    return stalled_ ? fmt::format("the downstream medium took nothing for {} s", kStallNs / kNsPerSec) : std::string();
  }

 private:
  static constexpr uint64_t kStallNs = kRelayStallNs;

  void mark(uint32_t i) noexcept {
    if (i >= n_inst_ || dirty_[i]) return;
    dirty_[i] = true;
    changed_[n_changed_++] = i;
  }
  static bool same(const wire::InstrumentDefinition& a, const wire::InstrumentDefinition& b) noexcept {
    return std::memcmp(a.symbol, b.symbol, sizeof a.symbol) == 0 && a.lot_size == b.lot_size &&
           a.price_exponent == b.price_exponent;
  }
  void send(wire::Message m, uint64_t now) noexcept {
    switch (stage_waiting(down_, m, now, c_.waits)) {
      case feed::PublishResult::kOk: c_.messages.add(); return;
      case feed::PublishResult::kBackPressured: stalled_ = true; return;
      default: c_.refused.add(); return;  // the checksum after the point marks it again
    }
  }

  Down& down_;
  ConflateCounters& c_;
  const uint64_t interval_ns_;
  const uint32_t n_inst_;
  const feed::SubscriberCore* up_ = nullptr;
  std::unique_ptr<bool[]> dirty_;
  std::unique_ptr<uint32_t[]> changed_;  // the dirty instruments, in the order they changed
  uint32_t n_changed_ = 0;
  std::unique_ptr<uint64_t[]> gone_;     // one instrument's orders to delete (at most every order)
  uint64_t last_point_ = 0;
  bool stalled_ = false;
};

// A conflating relay on a PublisherRuntime lane: subscribes over `up` and
// publishes a point into the lane's one channel every `interval_ns` until
// the upstream session ends (a last point, then the downstream session
// ends), a stop request, or a failure (as relay_lane). The outcome's
// counters: "conflate.*", the upstream subscriber's "sub.*" and its
// medium's "@up".
template <class Lane, media::SubscriberMedium Up, class Round>
RelayOutcome conflate_lane(Lane& lane, Up& up, const feed::SubscriberConfig& cfg,
                           const feed::SubscriberAgentOptions& opts, const SubscriberLimits& limits,
                           uint64_t interval_ns, ConflateCounters& counters, feed::SubscriberCounters* sub_counters,
                           Round&& on_round) {
  auto& down = lane.publisher().agent(0);
  Conflator<std::remove_reference_t<decltype(down)>> conflator(down, counters, interval_ns);
  RelayOutcome out = follow_upstream(lane, conflator, up, cfg, opts, limits, sub_counters, std::forward<Round>(on_round));
  out.paced.published = counters.messages.get();
  out.lead_with(counters, "conflate.");
  return out;
}

}  // namespace mdcast::runtime
