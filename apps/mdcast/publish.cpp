// `mdcast publish`: the library's runtime (runtime::PublisherRuntime) over
// the medium the settings name, its synthetic order flow on each publishing
// thread, a result file and a clean end on SIGINT/SIGTERM. This file maps
// the settings onto the runtime's plan, and prints.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/affinity.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/runtime/pair_member.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
#include "mdcast/runtime/synthetic.hpp"
#include "settings.hpp"
#include "runners.hpp"

namespace mdcast::app {
namespace {

book::SyntheticConfig synthetic_shape(const Settings& s) {
  if (s.pub.boundaries == feed::Boundaries::kInput && !s.pub.packet_messages)
    fail_usage("publisher.boundaries=input: the synthetic flow ends a datagram only where one of its packets ends; "
               "set publisher.packet_messages (messages per packet, at most)");
  return {s.pub.packet_messages, s.pub.large_every, s.pub.large_bytes};
}

// A member that joins its peer's session (pair.peer) follows the peer until
// its control plane confirms one; none within pair.join_timeout: it begins
// its own. Refuses what a member cannot rebuild its peer's datagrams from.
template <class E>
std::unique_ptr<runtime::PeerFollower<typename E::Subscriber>> follow_peer(const Settings& s, uint64_t& session) {
  if (s.pair.peer.empty()) return nullptr;
  fmt::print(stderr, "mdcast publish: pair member: looking for the peer's session on {} for {}\n", s.pair.peer,
             format_duration(s.pair.join_timeout_ns));
  const uint64_t deadline = monotonic_ns() + s.pair.join_timeout_ns;
  std::string why;
  auto peer = peer_follower<E>(s, why);
  const uint64_t joined = peer ? peer->join(deadline, &g_stop) : 0;
  if (!joined) {
    fmt::print(stderr, "mdcast publish: pair member: no session confirmed by the peer in {}{}: beginning one\n",
               format_duration(s.pair.join_timeout_ns), why.empty() ? "" : " (" + why + ")");
    return nullptr;
  }
  if (s.pub.session && s.pub.session != joined)
    fail("pair.peer publishes session {:016x}, not publisher.session {:016x}: this member would begin a second "
         "session beside its peer's (unset publisher.session, or point pair.peer at this feed's other member)",
         joined, s.pub.session);
  session = joined;
  return peer;
}

// A pair member that was asked to stop leaves the session to its peer when
// the peer publishes it on past this member (runtime::carries_on, within
// pair.join_timeout); otherwise it ends the session, as a lone publisher does.
template <class E, class Lane>
bool hand_over(const Settings& s, uint64_t session, Lane& lane) {
  auto& channels = lane.publisher();
  const uint64_t mine = channels.agent(0).core().last_committed();
  std::string why;  // the settings were checked when the member started
  auto peer = peer_follower<E>(s, why);
  if (!peer) {  // the session still ends: one member stopping must not lose it
    fmt::print(stderr, "mdcast publish: pair member: cannot follow the peer on {} ({}): ending the session\n",
               s.pair.peer, why);
    return false;
  }
  const bool left = runtime::carries_on(*peer, session, mine, monotonic_ns() + s.pair.join_timeout_ns, &g_stop,
                                        [&](uint64_t now) { channels.do_work(now); });
  if (left)
    fmt::print(stderr, "mdcast publish: pair member: stopped at sequence {}; the peer on {} publishes session {:016x} "
                       "on (at {}): left it to the peer, not ended\n",
               mine, s.pair.peer, session, peer->peer_last(monotonic_ns()));
  else
    fmt::print(stderr, "mdcast publish: pair member: stopped at sequence {}; the peer on {} did not publish past it "
                       "within {}: ending the session\n",
               mine, s.pair.peer, format_duration(s.pair.join_timeout_ns));
  return left;
}

template <class E>
int publish(Settings& s) {
  using Runtime = runtime::PublisherRuntime<typename E::Publisher, typename E::Door>;
  const runtime::SyntheticPlan synthetic{generator_config(s), synthetic_shape(s), s.pub.rate, s.pub.duration_ns,
                                         s.feed.idle, s.feed.idle_params, s.pub.boundaries == feed::Boundaries::kInput};
  uint64_t session = 0;
  auto peer = follow_peer<E>(s, session);
  if (!session) session = pick_session(s);
  runtime::PublisherPlan plan = publisher_plan(s, session, E::kName);  // refuses bad settings before any thread starts
  plan.counters.extra = {{"app", AppPubCounters::kInfo}};
  const uint32_t n = plan.map.count();
  const bool many = n > 1;

  if (s.feed.idle != IdleMode::kBlock && s.feed.idle != IdleMode::kSleep) {
    std::vector<BusyThread> busy;
    for (uint32_t t = 0; t < plan.threads; ++t)
      busy.push_back({fmt::format("publishing thread {}", t), plan.cpus.empty() ? -1 : plan.cpus[t]});
    for (const std::string& w : placement_warnings(busy)) fmt::print(stderr, "mdcast publish: warning: {}\n", w);
  }

  // A publisher of several channels listens on one control endpoint for all of them.
  std::unique_ptr<typename E::Door> door = many ? E::open_door(s) : nullptr;
  const typename E::Door* door_at = door.get();
  Runtime rt(plan, std::move(door), [&](uint32_t k, auto inbox) {
    Settings c = channel_settings<E>(s, k);
    if (door_at) E::use_door(c, *door_at, std::move(inbox));
    return E::publisher(c, session);
  });

  typename Runtime::Hooks hooks;
  hooks.publish = [&](typename Runtime::Lane& lane) {
    runtime::SyntheticLane flow(lane, plan.map, synthetic);
    if (!peer || !flow.source()) return flow.run(lane.t0());
    // Quietly to where the peer is, then on the timeline from there.
    auto* app = rt.counters_file() ? rt.counters_file()->template section<AppPubCounters>(2) : nullptr;
    if (app) app->pair_role.set(1);
    const runtime::CatchUp c = runtime::catch_up(lane.publisher().agent(0), *flow.source(), *peer, &g_stop);
    peer->leave();
    if (app) {
      app->pair_catch_up_ms.set(c.ns / kNsPerMs);
      app->pair_joined_at.set(c.through + 1);
      app->pair_role.set(2);
    }
    fmt::print(stderr,
               "mdcast publish: pair member: caught up with the peer in {:.0f} ms: replayed {} messages, "
               "sequences 1-{} (the peer's were at {}); publishing from {}\n",
               static_cast<double>(c.ns) / 1e6, c.messages, c.through, c.peer_last, c.through + 1);
    if (c.refused != feed::PublishResult::kOk) return feed::PaceResult{c.messages, monotonic_ns(), c.refused};
    if (c.stopped) return feed::PaceResult{c.messages, monotonic_ns()};
    return flow.run(monotonic_ns(), c.messages);
  };
  if constexpr (requires { E::peer_settings(s); }) {
    if (!s.pair.peer.empty()) hooks.hand_over = [&](typename Runtime::Lane& lane) { return hand_over<E>(s, session, lane); };
  }
  hooks.started = [&](Runtime& r) {
    const std::string cpus = format_cpu_list(plan.cpus);
    const std::string where =
        many ? fmt::format("{} channels ({} to {}) on {} thread{}{}; channel {}: {}", n, s.feed.channel,
                           s.feed.channel + n - 1, plan.threads, plan.threads == 1 ? "" : "s",
                           plan.cpus.empty() ? "" : " pinned to CPUs " + cpus, s.feed.channel, r.described(0))
             : r.described(0) + (plan.cpus.empty() ? "" : "; pinned to CPU " + cpus);
    fmt::print(stderr, "mdcast publish: {}; session {:016x}; {:.0f} msg/s over {} instruments for {}\n", where, session,
               s.pub.rate, s.pub.instruments, format_duration(s.pub.duration_ns));
    if (stats::CountersFile* cf = r.counters_file()) cf->section<AppPubCounters>(2)->target_rate.set(static_cast<uint64_t>(s.pub.rate));
  };

  const auto out = rt.run(std::move(hooks));
  if (!out.t0) return exit_code::kInterrupted;  // stopped before go

  for (size_t t = 0; t < rt.lanes(); ++t)
    if (rt.lane(t).paced.refused != feed::PublishResult::kOk)
      fail("generator message refused by the publisher ({}): a bug; please report it", rt.lane(t).end().refused);
  const RunResult r = rt.result(out);
  if (!s.pub.result.empty()) write_result(s.pub.result, r);
  fmt::print(stderr,
             "mdcast publish: {} messages in {} datagrams over {:.2f} s ({:.0f} msg/s); {} retransmit requests, {} "
             "snapshots served\n",
             r.messages, r.last_sequence, r.seconds, static_cast<double>(r.messages) / std::max(r.seconds, 1e-9),
             r.counter("ctl.retransmit_requests"), r.counter("ctl.snapshot_requests"));
  if (out.handed_over)
    fmt::print(stderr, "mdcast publish: stopped: the session goes on with the peer\n");
  else if (out.cut)
    fmt::print(stderr, "mdcast publish: stopped twice: the end of the session and the recovery after it were cut short\n");
  else if (out.stopped)
    fmt::print(stderr, "mdcast publish: stopped: the session was ended and recovery served; subscribers that caught up "
                       "have finished\n");
  else if (const std::string why = rate_shortfall(r, s.pub.rate, pacing_name(s.pub.pacing)); !why.empty())
    fmt::print(stderr, "mdcast publish: {}\n", why);
  return out.cut ? exit_code::kInterrupted : exit_code::kOk;
}

}  // namespace

int run_publish(Settings& s) {
  return with_medium(s.feed.medium, [&](auto entry) { return publish<decltype(entry)>(s); });
}

}  // namespace mdcast::app
