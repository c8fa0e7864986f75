// A relay of either kind on a PublisherRuntime: forwarding (relay.hpp: the
// upstream's session and sequence numbers) or conflating (conflate.hpp: a
// feed of its own, one point per interval) - what `mdcast relay` runs, and
// an application that relays takes the same two calls:
//
//   runtime::PublisherPlan plan = ...;                       // the downstream's
//   runtime::relay_plan(plan, upstream_session, conflate_ns);
//   runtime::PublisherRuntime<Down, Door> rt(plan, door, open_down);
//   hooks.publish = [&](auto& lane) {
//     auto up = open_up();
//     outcome = runtime::relay_on_lane(lane, *up, sub_cfg, opts, limits, conflate_ns, rt.counters_file());
//     return outcome.paced;
//   };
#pragma once

#include <atomic>
#include <cstdint>

#include "mdcast/runtime/conflate.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/relay.hpp"

namespace mdcast::runtime {

// The downstream engine and counter sections of a relay of
// `upstream_session` (conflate_ns 0: forwarding, in that session; else
// conflating, in the plan's own): the upstream subscriber's "sub" is
// section 2, the relay's own ("relay" or "conflate") section 3.
inline void relay_plan(PublisherPlan& plan, uint64_t upstream_session, uint64_t conflate_ns) {
  if (!conflate_ns) plan.engine = relay_engine(plan.engine, upstream_session);
  plan.counters.role = "relay";
  plan.counters.extra = {{"sub", feed::SubscriberCounters::kInfo},
                         conflate_ns ? stats::Section{"conflate", ConflateCounters::kInfo}
                                     : stats::Section{"relay", RelayCounters::kInfo}};
}

// The relay on the lane (relay_lane or conflate_lane), its counters in the
// runtime's file as relay_plan laid it out (none: kept here for the
// outcome), the lane's progress reported each control round.
template <class Lane, media::SubscriberMedium Up>
RelayOutcome relay_on_lane(Lane& lane, Up& up, const feed::SubscriberConfig& cfg,
                           const feed::SubscriberAgentOptions& opts, const SubscriberLimits& limits,
                           uint64_t conflate_ns, stats::CountersFile* file) {
  auto* sub = file ? file->section<feed::SubscriberCounters>(2) : nullptr;
  auto round = [&lane](const auto& own) {
    return [&lane, &own](uint64_t now) {
      lane.report(now);
      lane.progress.store(own.messages.get(), std::memory_order_relaxed);
      return true;
    };
  };
  if (conflate_ns) {
    ConflateCounters kept;
    ConflateCounters& c = file ? *file->section<ConflateCounters>(3) : kept;
    return conflate_lane(lane, up, cfg, opts, limits, conflate_ns, c, sub, round(c));
  }
  RelayCounters kept;
  RelayCounters& c = file ? *file->section<RelayCounters>(3) : kept;
  return relay_lane(lane, up, cfg, opts, limits, c, sub, round(c));
}

}  // namespace mdcast::runtime
