// `mdcast relay`: the library's relay (runtime/relay.hpp) from the medium the
// upstream settings name to the one the relay's own settings name. This file
// maps the settings onto the plan, and prints.
#include <fmt/format.h>
#include <unistd.h>

#include <string>

#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/relays.hpp"
#include "runners.hpp"
#include "settings.hpp"

namespace mdcast::app {
namespace {

template <class Up, class Down>
int relay(Settings& s, const Settings& up_s) {
  using Runtime = runtime::PublisherRuntime<typename Down::Publisher, typename Down::Door>;
  if (s.feed.channels != 1 || up_s.feed.channels != 1)
    fail_usage("relay: one channel each side (feed.channels {} downstream, {} upstream): relay each channel with its "
               "own relay", s.feed.channels, up_s.feed.channels);
  const feed::SubscriberConfig sub_cfg = subscriber_config(up_s);
  fmt::print(stderr, "mdcast relay: waiting up to {} for the upstream's session on {}\n",
             format_duration(up_s.sub.wait_ns), Up::waiting_for(up_s));
  std::string why;
  const uint64_t session =
      runtime::upstream_session(Up::subscriber(up_s), sub_cfg, monotonic_ns() + up_s.sub.wait_ns, &g_stop, &why);
  if (!session) {
    if (g_stop.requested()) return exit_code::kInterrupted;
    fmt::print(stderr, "mdcast relay: no upstream control plane confirmed a session within {} on {}{}\n",
               format_duration(up_s.sub.wait_ns), Up::waiting_for(up_s), why.empty() ? "" : ": " + why);
    return exit_code::kSetup;
  }

  // Held until publisher.wait_subscribers subscribed downstream (the upstream subscription then
  // recovers the session's start from the origin). A conflated feed is a session of its own.
  const uint64_t conflate = s.relay.conflate_ns;
  const uint64_t down_session = conflate ? pick_session(s) : session;
  runtime::PublisherPlan plan = publisher_plan(s, down_session, Down::kName);
  runtime::relay_plan(plan, session, conflate);
  Runtime rt(plan, nullptr,
             [&](uint32_t k, auto) { return Down::publisher(channel_settings<Down>(s, k), down_session); });

  runtime::RelayOutcome outcome;
  typename Runtime::Hooks hooks;
  hooks.publish = [&](typename Runtime::Lane& lane) {
    auto inner = Up::subscriber(up_s);  // on the relay's thread, after pinning
    // Through the fault injector, as `mdcast subscribe` is: the tests drop
    // upstream datagrams to show that they are recovered before forwarding.
    media::fault::FaultyMedium<typename Up::Subscriber> up(*inner, injected_faults(up_s, static_cast<uint64_t>(::getpid())));
    feed::SubscriberAgentOptions opts{up_s.feed.control_poll_ns, s.feed.idle};
    opts.idle_params = s.feed.idle_params;
    outcome = runtime::relay_on_lane(lane, up, sub_cfg, opts, subscriber_limits(up_s), conflate, rt.counters_file());
    return outcome.paced;
  };
  hooks.started = [&](Runtime& r) {
    fmt::print(stderr, "mdcast relay: session {:016x} from {}{} to {}\n", session, Up::waiting_for(up_s),
               conflate ? fmt::format(", conflated every {} as session {:016x}", format_duration(conflate), down_session)
                        : "",
               r.described(0));
  };
  const auto out = rt.run(std::move(hooks));
  runtime::RunResult r = rt.result(out);
  r.counters.insert(r.counters.end(), outcome.counters.begin(), outcome.counters.end());
  r.outcome = outcome.ending == runtime::RelayEnding::kEnded ? "ok" : std::string(to_string(outcome.ending));
  if (!s.pub.result.empty()) write_result(s.pub.result, r);
  fmt::print(stderr, "mdcast relay: {}: {} messages in {} datagrams {}; {} retransmit requests and {} snapshots served "
                     "downstream\n",
             r.outcome, r.messages, r.last_sequence,
             conflate ? fmt::format("at {} points from {} upstream messages ({} mismatches)", r.counter("conflate.points"),
                                    r.counter("conflate.upstream_messages"), r.counter("conflate.mismatches"))
                      : "forwarded",
             r.counter("ctl.retransmit_requests"), r.counter("ctl.snapshot_requests"));
  if (!outcome.error.empty()) fmt::print(stderr, "mdcast relay: {}\n", outcome.error);
  switch (outcome.ending) {
    case runtime::RelayEnding::kEnded: return exit_code::kOk;
    case runtime::RelayEnding::kStopped: return out.cut ? exit_code::kInterrupted : exit_code::kOk;
    case runtime::RelayEnding::kRefused: return exit_code::kSetup;
    default: return exit_code::kDataLost;
  }
}

}  // namespace

int run_relay(Settings& s, const Settings& up) {
  return with_medium(up.feed.medium, [&](auto up_entry) {
    return with_medium(s.feed.medium, [&](auto entry) { return relay<decltype(up_entry), decltype(entry)>(s, up); });
  });
}

}  // namespace mdcast::app
