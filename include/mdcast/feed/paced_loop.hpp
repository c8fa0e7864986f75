// A publisher's duty loop at an offered rate: messages from a source are due
// on a timeline (message k at start + k / rate), published in bursts of what
// is due, with the agent's duty cycle between bursts. `mdcast publish`
// (synthetic order flow), `mdcast bench` (measured windows) and replays run
// this one loop; an application publishing its own data as it arrives calls
// PublisherAgent::publish and do_work itself instead.
//
//   Source: bool next(wire::Message& m) noexcept     false: no more messages (the loop ends)
//           bool packet_end() const noexcept          optional: the message next() gave last
//                                                     ended an upstream packet
//   Hooks:  bool on_round(uint64_t now, uint64_t published) noexcept
//           called once per round, before the burst; false ends the loop
//
// A source with packets ends a datagram where each packet ends (seal, or
// flush where the medium takes no batches), as a feed handler calls flush()
// at the end of each exchange packet: with Boundaries::kInput nothing else
// ends one early, so both members of a pair cut the same datagrams.
//
// Idle between bursts: spin never sleeps; any other mode sleeps until the
// next message is due (or the open datagram must leave), so CPU time is
// publishing, not waiting. With burst_ns the publisher wakes once per burst
// of that length instead of per message.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/publisher_agent.hpp"

namespace mdcast::feed {

struct Pace {
  double rate = 0;                 // messages/s; 0: as fast as the medium takes them
  uint64_t start_ns = 0;           // the timeline's origin
  uint64_t end_ns = UINT64_MAX;    // the loop ends here
  uint64_t already = 0;            // messages published before start_ns (not paced)
  uint64_t limit = UINT64_MAX;     // the loop ends once this many were published, `already` included
  IdleMode idle = IdleMode::kSpin;
  IdleParams idle_params{};        // how `idle` backs off; its deepest park also bounds a sleep to the next message
  uint64_t burst_ns = 0;           // sleeping publisher: one wake per burst this long
  uint32_t max_burst = 256;        // messages per round at most (the duty cycle runs between)
};

struct PaceResult {
  uint64_t published = 0;          // messages accepted, `already` included
  uint64_t end_ns = 0;             // when the loop ended
  PublishResult refused = PublishResult::kOk;  // kRejected / kTooLarge: the source made an invalid message
};

// A burst is handed to a batching medium at least this often (datagrams):
// a sendmmsg's worth, so the first of a long burst does not wait for the last.
inline constexpr uint64_t kSendEvery = 32;

template <class Agent>
constexpr bool takes_batches() noexcept {
  if constexpr (requires { Agent::kTakesBatches; })
    return Agent::kTakesBatches;
  else
    return false;
}

namespace detail {
// One agent or several channels' (PublisherChannels): the open datagram and
// the flush interval, from whichever the agent offers.
template <class Agent>
bool has_open(const Agent& a) noexcept {
  if constexpr (requires { a.has_open(); })
    return a.has_open();
  else
    return a.core().has_open();
}
template <class Source>
bool packet_end(const Source& s) noexcept {
  if constexpr (requires { s.packet_end(); })
    return s.packet_end();
  else
    return false;
}
template <class Agent>
void end_packet(Agent& a, uint64_t now) noexcept {
  if constexpr (takes_batches<Agent>() && requires { a.seal(now); })
    a.seal(now);
  else
    a.flush(now);
}
template <class Agent>
uint64_t flush_interval_ns(const Agent& a) noexcept {
  if constexpr (requires { a.flush_interval_ns(); })
    return a.flush_interval_ns();
  else
    return a.core().config().flush_interval_ns;
}
}  // namespace detail

template <class Agent, class Source, class Hooks>
PaceResult run_paced(Agent& agent, Source& source, const Pace& p, Hooks& hooks) {
  IdleStrategy idle(p.idle, p.idle_params);
  const double per_ns = p.rate / 1e9;
  const uint64_t flush_ns = detail::flush_interval_ns(agent);
  PaceResult r;
  r.published = p.already;
  wire::Message m;
  bool pending = false;  // m was back-pressured: offer it again before a new one
  uint64_t now = p.start_ns;
  for (;;) {
    now = monotonic_ns();
    if (now >= p.end_ns || !hooks.on_round(now, r.published)) break;
    const uint64_t due = p.rate > 0 ? p.already + static_cast<uint64_t>(static_cast<double>(now - p.start_ns) * per_ns) + 1
                                    : r.published + p.max_burst;
    bool worked = false;
    bool exhausted = false;
    for (uint32_t burst = 0; r.published < std::min(due, p.limit) && burst < p.max_burst; ++burst) {
      if (!pending) {
        if (!source.next(m)) {
          exhausted = true;
          break;
        }
        pending = true;
      }
      // A medium that takes batches gets the burst in batches (sendmmsg, GSO
      // runs): staged here, sent below and every kSendEvery datagrams.
      PublishResult res;
      if constexpr (takes_batches<Agent>())
        res = agent.stage(m, now);
      else
        res = agent.publish(m, now);
      if (res == PublishResult::kBackPressured) break;
      if (res != PublishResult::kOk) {
        r.refused = res;
        r.end_ns = now;
        return r;
      }
      pending = false;
      ++r.published;
      worked = true;
      if (detail::packet_end(source)) detail::end_packet(agent, now);
      if constexpr (takes_batches<Agent>())
        if (agent.unsent() >= kSendEvery) agent.send_committed(now);
    }
    if constexpr (takes_batches<Agent>()) agent.send_committed(now);
    agent.do_work(now);
    if (exhausted || r.published >= p.limit) break;
    if (worked || p.idle == IdleMode::kSpin || p.rate <= 0) {
      if (worked) idle.reset();
      else idle.idle();
      continue;
    }
    // Nothing due: sleep until the next message (or burst) is, or the open
    // datagram must leave, whichever comes first (never past it).
    const uint64_t next_due = p.start_ns + static_cast<uint64_t>(static_cast<double>(r.published - p.already) / per_ns);
    uint64_t wake = next_due + p.burst_ns;
    if (p.burst_ns) {
      // The burst is over and nothing joins its open datagram before the
      // next one: send it now instead of waking a flush interval later only
      // for that (two wakes per burst, and the flush timer's latency on
      // every burst's last datagram).
      if constexpr (requires { agent.flush(now); })
        if (detail::has_open(agent)) agent.flush(now);
      if (detail::has_open(agent)) wake = std::min(wake, now + flush_ns);
      if (wake > now) sleep_ns(std::min<uint64_t>(wake - now, 10 * kNsPerMs));
      continue;
    }
    if (detail::has_open(agent)) wake = std::min(wake, now + flush_ns);
    if (wake > now + 30 * kNsPerUs) {
      // Wake a little early: the kernel's wake-up is late by about that much.
      sleep_ns(std::min<uint64_t>(wake - now - 20 * kNsPerUs, std::max<uint64_t>(p.idle_params.park_max_ns, 1)));
    } else {
      idle.idle();
    }
  }
  r.end_ns = now;
  return r;
}

}  // namespace mdcast::feed
