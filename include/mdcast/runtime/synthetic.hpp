// The synthetic order flow (book::SyntheticSource) published on a
// PublisherRuntime lane, as `mdcast publish` and `mdcast demo` publish it:
// for loading an application's own subscribers, or a test feed. Each lane
// publishes the synthetic instruments on its channels at their share of the
// rate, on the feed's timeline (from lane.t0() for the duration); a lane
// none of whose channels has one sends heartbeats only, for the duration.
//
//   hooks.publish = [&](auto& lane) { return runtime::SyntheticLane(lane, plan.map, synthetic).run(lane.t0()); };
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "mdcast/book/synthetic_source.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/channels.hpp"
#include "mdcast/feed/paced_loop.hpp"

namespace mdcast::runtime {

struct SyntheticPlan {
  book::GeneratorConfig generator;  // its instruments are the feed's; each lane adds its thread to the seed
  book::SyntheticConfig shape;      // packets (input boundaries), large messages
  double rate = 0;                  // messages/s over every instrument
  uint64_t duration_ns = 0;
  IdleMode idle = IdleMode::kSpin;
  IdleParams idle_params{};
  // The input is rate x duration messages, ended by their count and not by
  // the clock: a pair's members, started at different times, end their
  // inputs (and so the session) at the same message. Not with rate 0.
  bool counted = false;
};

template <class Lane>
class SyntheticLane {
 public:
  SyntheticLane(Lane& lane, const feed::ChannelMap& map, const SyntheticPlan& plan) : lane_(lane), plan_(plan) {
    const uint32_t n = plan.generator.instruments;
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < n; ++i)
      if (std::find(lane.channels().begin(), lane.channels().end(), map.of(i)) != lane.channels().end()) ids.push_back(i);
    share_ = plan.rate * static_cast<double>(ids.size()) / std::max<uint32_t>(1, n);
    if (ids.empty()) return;
    book::GeneratorConfig g = plan.generator;
    g.seed += lane.thread();
    if (ids.size() != n) g.ids = std::move(ids);
    src_.emplace(g, plan.shape);
  }

  // The lane's flow; null when no synthetic instrument is on its channels
  // (a pair member replays it to its peer's position first: runtime::catch_up).
  [[nodiscard]] book::SyntheticSource* source() noexcept { return src_ ? &*src_ : nullptr; }

  // Publishes from start_ns (lane.t0(), or later once `already` messages
  // were published) until lane.t0() + the duration (counted: until the
  // duration's messages) or a stop.
  feed::PaceResult run(uint64_t start_ns, uint64_t already = 0) {
    const bool counted = plan_.counted && share_ > 0 && src_;
    const uint64_t end_ns = counted ? UINT64_MAX : lane_.t0() + plan_.duration_ns;
    if (!src_) {
      while (!lane_.stopping() && monotonic_ns() < end_ns) {
        lane_.publisher().do_work(monotonic_ns());
        sleep_ns(kNsPerMs);
      }
      return {0, monotonic_ns()};
    }
    feed::Pace pace;
    pace.rate = share_;
    pace.start_ns = start_ns;
    pace.end_ns = end_ns;
    pace.already = already;
    if (counted) pace.limit = static_cast<uint64_t>(std::llround(share_ * static_cast<double>(plan_.duration_ns) / 1e9));
    pace.idle = plan_.idle;
    pace.idle_params = plan_.idle_params;
    struct Round {
      Lane& lane;
      const book::SyntheticSource& src;
      bool on_round(uint64_t now, uint64_t) noexcept {
        lane.report(now);
        lane.progress.store(src.produced(), std::memory_order_relaxed);
        return !lane.stopping();
      }
    } round{lane_, *src_};
    const feed::PaceResult r = feed::run_paced(lane_.publisher(), *src_, pace, round);
    lane_.progress.store(src_->produced(), std::memory_order_relaxed);
    return r;
  }

 private:
  Lane& lane_;
  const SyntheticPlan& plan_;
  double share_ = 0;
  std::optional<book::SyntheticSource> src_;
};

}  // namespace mdcast::runtime
