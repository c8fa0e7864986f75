// A relay: a subscriber of a feed on one medium and a publisher of the same
// feed on another, joined on one thread - what `mdcast relay` runs. Its
// downstream carries the upstream's session and sequence numbers, so a
// subscriber downstream sees the feed the origin published (`mdcast verify`
// compares them) and recovers from the relay, which serves retransmits and
// snapshots from its own ring and books: the origin sees one client per
// relay, however many subscribers a host runs.
//
//   const uint64_t session = runtime::upstream_session(open_up(), sub_cfg, deadline, &stop);
//   plan.engine = runtime::relay_engine(plan.engine, session);   // the downstream's engine
//   runtime::PublisherRuntime<Down, Door> rt(plan, door, open_down);
//   hooks.publish = [&](auto& lane) {
//     auto up = open_up();
//     return runtime::relay_lane(lane, *up, sub_cfg, opts, limits, counters, sub_counters, outcome).paced;
//   };
//
// How the sequence numbers stay the origin's. The relay's engine cuts
// datagrams only where the input says (feed::Boundaries::kInput): a message
// delivered from upstream datagram n goes into the relay's open datagram,
// which is sealed as soon as a message of another datagram comes, and after
// every round of the upstream agent (which delivers datagrams whole). The
// relay's books assign each message the instrument sequence the origin's
// did, since they saw the same messages from the start of the session. What
// the relay checks, per message: the datagram it went into has the
// upstream's sequence, and the instrument sequence is the origin's
// (RelayCounters: a mismatch is counted, never silent). It holds where the
// relay's datagrams hold at least what the upstream's do (a downstream
// medium with a smaller datagram would cut them elsewhere) and where a
// fragmented message is cut into as many pieces (the same payload size);
// a fragmented message's id is the origin's, taken from its first piece.
//
// A relay that starts late. Where its upstream subscriber joins with a
// snapshot (the session's start is beyond its window or the origin's ring),
// and nothing was forwarded yet, the relay begins there: its engine takes
// the snapshot's books and goes on from the sequence after it
// (PublisherCore::begin_at), holding nothing before; its own subscribers
// take their snapshot from the relay, as they would from an origin whose
// ring no longer holds the start.
//
// A relay whose upstream falls back to a snapshot once it has forwarded (a
// gap beyond its window or the origin's ring: a long outage of its link)
// goes on the same way, past what the snapshot covered: its subscribers
// find those sequences too old and take their snapshot from the relay, as
// subscribers of an origin do whose ring no longer holds what they missed.
//
// What a relay cannot forward, it does not pretend to. Its upstream
// subscriber recovers gaps by retransmission before anything is forwarded,
// so downstream never sees a hole the origin could fill; where the upstream
// recovers one instrument by snapshot, or begins a new session, the relay
// stops and leaves its session unended (Lane::abandon), and its subscribers
// see a publisher lost, as they would had it died.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/runtime/pair_member.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
#include "mdcast/stats/mirror.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::runtime {

#define MDCAST_RELAY_COUNTERS(X)                                                                                  \
  X(messages, "messages forwarded downstream")                                                                    \
  X(datagrams, "upstream datagrams forwarded (each one datagram downstream, under the same sequence)")            \
  X(upstream_sequence, "the last upstream sequence forwarded")                                                     \
  X(sequence_mismatches, "forwarded messages whose downstream datagram has another sequence than upstream")        \
  X(instrument_mismatches, "forwarded messages the relay's books gave another instrument sequence than the origin") \
  X(refused, "upstream messages the relay's own books refused (it stops: its books are not the origin's)")         \
  X(waits, "forwarded messages that waited for the downstream medium (back-pressure)")                          \
  X(first_sequence, "the first sequence forwarded: 1, or where a snapshot upstream let a late relay begin")      \
  X(skips, "upstream snapshots after forwarding began: the relay went on past them (its subscribers take one from it)")

MDCAST_DEFINE_COUNTER_STRUCT(RelayCounters, MDCAST_RELAY_COUNTERS);
inline constexpr std::string_view kRelayGauges[] = {"upstream_sequence", "first_sequence"};

// Why a relay stopped forwarding.
enum class RelayEnding : uint8_t {
  kEnded,          // the upstream ended its session and everything through it was forwarded
  kStopped,        // a stop request (the downstream session is then ended cleanly)
  kRefused,        // the upstream refused the subscription
  kPublisherLost,  // the upstream fell silent past give_up
  kCannotForward,  // a snapshot, a new session, a refused message or a stalled medium: see error
};
constexpr std::string_view to_string(RelayEnding e) noexcept {
  switch (e) {
    case RelayEnding::kEnded: return "ok";
    case RelayEnding::kStopped: return "interrupted";
    case RelayEnding::kRefused: return "error";
    case RelayEnding::kPublisherLost: return "publisher-lost";
    case RelayEnding::kCannotForward: return "cannot-forward";
  }
  return "?";
}

struct RelayOutcome {
  RelayEnding ending = RelayEnding::kEnded;
  std::string error;
  feed::PaceResult paced;  // for PublisherRuntime: messages forwarded, when it ended
  // For a result file: "relay.*", the upstream subscriber's "sub.*" and its
  // medium's counters marked "@up" (apart from the downstream's of the same name).
  std::vector<std::pair<std::string, uint64_t>> counters;

  // The relay's own counters, first.
  template <class C>
  void lead_with(const C& own, const char* prefix) {
    std::vector<std::pair<std::string, uint64_t>> v;
    stats::dump_counters(own, prefix, v);
    counters.insert(counters.begin(), v.begin(), v.end());
  }
};

// The session the upstream's control plane confirms, joined as any
// subscriber joins (never a datagram's claim); 0: none by `deadline_ns`, or
// a stop request. The probe subscribes to no instrument (PeerFollower): an
// origin waiting for its relays (publisher.wait_subscribers) counts the
// forwarding subscriptions that follow, not the probes, which leave once
// answered - else it could publish its whole session and end before a relay
// slowed by its own subscribers attaching had subscribed to forward it.
template <media::SubscriberMedium Up>
uint64_t upstream_session(std::unique_ptr<Up> medium, const feed::SubscriberConfig& cfg, uint64_t deadline_ns,
                          const StopFlag* stop, std::string* why = nullptr) {
  PeerFollower<Up> probe(std::move(medium), cfg);
  const uint64_t session = probe.join(deadline_ns, stop);
  if (!session && why) *why = probe.last_error();
  return session;
}

// The downstream engine of a relay of `session`: datagrams end where the
// upstream's did, never on a timer, and nothing paces what the origin
// already paced.
[[nodiscard]] inline feed::PublisherConfig relay_engine(feed::PublisherConfig c, uint64_t session) {
  c.session = session;
  c.boundaries = feed::Boundaries::kInput;
  c.flush_interval_ns = 0;
  c.pacing.mode = feed::PacingMode::kNone;
  return c;
}

// Longest a message waits for a downstream medium that pushes back before
// a relay gives up (kCannotForward): a medium stalled this long is not
// coming back within anything a live feed tolerates.
inline constexpr uint64_t kRelayStallNs = 2 * kNsPerSec;

// Stages m into the downstream agent, handing it what it committed while
// it pushes back (each wait counted once in `waits`), for at most
// kRelayStallNs: kBackPressured then means stalled. `at` stamps the message.
template <class Down>
feed::PublishResult stage_waiting(Down& down, wire::Message& m, uint64_t at, Counter& waits) noexcept {
  feed::PublishResult r = down.stage(m, at);
  for (uint64_t since = 0; r == feed::PublishResult::kBackPressured;) {
    const uint64_t t = monotonic_ns();
    if (!since) {
      since = t;
      waits.add();
    } else if (t - since > kRelayStallNs) {
      break;
    }
    down.send_committed(t);
    r = down.stage(m, at);
  }
  return r;
}

// The upstream subscriber's handler: each delivered message into the
// downstream agent (a feed::PublisherAgent), in the upstream's datagrams.
template <class Down>
class Forwarder {
 public:
  static constexpr uint64_t kStallNs = kRelayStallNs;

  Forwarder(Down& down, RelayCounters& c) noexcept : down_(down), c_(c) {}

  // The upstream engine this handler is given to: a snapshot it took is
  // told apart (a whole one, or one instrument's) and located through it.
  void watch(const feed::SubscriberCore& upstream) noexcept { up_ = &upstream; }

  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    if (failure_ != Failure::kNone) return;
    feed::PublisherCore& core = down_.core();
    // The engine stamps a datagram with the time its first message was
    // staged: the upstream's stamp makes the relay's datagram the origin's,
    // byte for byte (the check over it included, where both seal alike),
    // and latency measured downstream the origin's to there.
    const uint64_t now = d.send_time_ns;
    if (core.has_open() && core.last_committed() + 1 != d.sequence) down_.seal(now);
    if (d.sequence != last_seq_) {
      last_seq_ = d.sequence;
      c_.datagrams.add();
      c_.upstream_sequence.set(d.sequence);
    }
    wire::Message copy = m;
    // The upstream's stamp, also after a wait: the wait is the relay's, not the feed's.
    const feed::PublishResult r = stage_waiting(down_, copy, now, c_.waits);
    if (r == feed::PublishResult::kBackPressured) return fail(Failure::kStalled, d.sequence, m.instrument);
    if (r != feed::PublishResult::kOk) {
      c_.refused.add();
      return fail(Failure::kRefused, d.sequence, m.instrument);
    }
    staged_ = true;
    if (!c_.first_sequence.get()) c_.first_sequence.set(down_.core().first_sequence());
    c_.messages.add();
    const uint64_t at = core.has_open() ? core.last_committed() + 1 : core.last_committed();
    if (at != d.sequence) c_.sequence_mismatches.add();
    if (copy.instrument_seq != m.instrument_seq) c_.instrument_mismatches.add();
  }
  // Each upstream datagram as it is delivered, before its messages: the
  // first piece of a fragmented message names the id the origin cut it
  // under, which the relay's engine cuts it under too (the message itself
  // comes to on_message whole, after its last piece).
  void on_datagram_delivered(std::span<const std::byte> d, const feed::Delivery&) noexcept {
    wire::MessageCursor cur = wire::MessageCursor::payload_of(d);
    wire::MessageView v;
    if (cur.next(v) && v.type() == wire::MsgType::kFragment) {
      const wire::FragmentView f(v);
      if (f.index() == 0) down_.core().next_fragment_id(f.message_id());
    }
  }

  // A whole snapshot upstream: the relay goes on after it, with its books
  // (called once per instrument; the first call does it). Before anything
  // was forwarded the relay begins there; after, it skips what the snapshot
  // covered, and its own subscribers, finding those sequences too old, take
  // a snapshot from the relay. One instrument's snapshot cannot be carried
  // so: the relay stops.
  void on_snapshot(uint32_t instrument, const book::BookSet* books) noexcept {
    if (failure_ != Failure::kNone) return;
    if (up_ && books && up_->counters().instrument_recovered.get() == begun_irecs_) {
      const uint64_t whole = up_->counters().snapshots_applied.get();
      if (begun_snapshots_ && whole == begun_snapshots_) return;  // the same snapshot, its next instrument
      const uint64_t next = up_->next_sequence();
      const bool forwarded = c_.messages.get() != 0;
      if (whole != begun_snapshots_ && go_on_at(next, *books)) {
        begun_snapshots_ = whole;
        last_seq_ = next - 1;
        if (forwarded)
          c_.skips.add();
        else
          c_.first_sequence.set(next);
        return;
      }
    }
    fail(Failure::kSnapshot, last_seq_, instrument);
  }

  // The engine resets as it adopts a session, the relay's among them.
  void on_reset(uint64_t session) noexcept {
    if (session != down_.core().session()) fail(Failure::kNewSession, session, 0);
  }

  // After each round of the upstream agent: it delivers datagrams whole, so
  // the one still open ends here, and everything staged goes out.
  void end_round(uint64_t now) noexcept {
    if (!staged_) return;
    staged_ = false;
    down_.flush(now);
  }
  // The upstream's session ended: everything was forwarded round by round.
  void finish(uint64_t now) noexcept { end_round(now); }

  [[nodiscard]] bool failed() const noexcept { return failure_ != Failure::kNone; }
  // What went wrong, for an operator (setup-time text: allocates).
  [[nodiscard]] std::string failure_text() const {
    switch (failure_) {
      case Failure::kNone: return {};
      case Failure::kSnapshot:
        return fmt::format("the upstream subscriber recovered instrument {} by its own snapshot after sequence {}: the "
                           "relay's books no longer follow the origin's datagrams (a checksum or sequence mismatch "
                           "upstream, or a downstream medium stalled while it skipped ahead)", detail_, at_);
      case Failure::kNewSession:
        return fmt::format("the upstream began a new session ({:016x}): a relay forwards one session; restart it "
                           "to relay the new one", at_);
      case Failure::kRefused:
        return fmt::format("the relay's books refused a message of instrument {} in upstream datagram {} ({}): they "
                           "no longer match the origin's", detail_, at_, to_string(down_.core().last_reject()));
      case Failure::kStalled:
        return fmt::format("the downstream medium took nothing for {} s (upstream datagram {})", kStallNs / kNsPerSec,
                           at_);
    }
    return {};
  }

 private:
  enum class Failure : uint8_t { kNone, kSnapshot, kNewSession, kRefused, kStalled };
  // Ends the open datagram (the snapshot came between upstream datagrams),
  // hands everything to the medium (within kStallNs), and goes on at `next`.
  bool go_on_at(uint64_t next, const book::BookSet& books) noexcept {
    feed::PublisherCore& core = down_.core();
    const uint64_t t0 = monotonic_ns();
    if (core.has_open()) down_.seal(t0);
    for (uint64_t t = t0; core.next_unsent() <= core.last_committed(); t = monotonic_ns()) {
      if (t - t0 > kStallNs) return false;
      down_.send_committed(t);
    }
    staged_ = false;
    return core.begin_at(next, books);
  }
  void fail(Failure f, uint64_t at, uint32_t detail) noexcept {
    if (failure_ != Failure::kNone) return;
    failure_ = f;
    at_ = at;
    detail_ = detail;
  }

  Down& down_;
  RelayCounters& c_;
  const feed::SubscriberCore* up_ = nullptr;
  uint64_t begun_snapshots_ = 0;  // the upstream's snapshots_applied when the relay began from one
  uint64_t begun_irecs_ = 0;      // its instrument_recovered then: any since is one instrument's snapshot
  uint64_t last_seq_ = 0;
  bool staged_ = false;
  Failure failure_ = Failure::kNone;
  uint64_t at_ = 0;
  uint32_t detail_ = 0;
};

// The loop of a relay of either kind on a PublisherRuntime lane: the
// upstream subscriber over `up`, delivering to `handler` (a Forwarder or a
// Conflator: watch, end_round and finish, failed and failure_text), until
// the upstream session ends, a stop request, or a failure; the downstream
// session is left unended (Lane::abandon) where the upstream was lost or
// could not be followed. `on_round(now)` runs after each control round of
// the upstream subscriber (false: stop). The outcome's counters: the
// upstream subscriber's "sub.*" and its medium's, marked "@up".
template <class Lane, class Handler, media::SubscriberMedium Up, class Round>
RelayOutcome follow_upstream(Lane& lane, Handler& handler, Up& up, const feed::SubscriberConfig& cfg,
                             const feed::SubscriberAgentOptions& opts, const SubscriberLimits& limits,
                             feed::SubscriberCounters* sub_counters, Round&& on_round) {
  auto& down = lane.publisher().agent(0);
  feed::SubscriberConfig c = cfg;
  c.all_instruments = true;  // a relay takes the whole feed
  c.instruments.clear();
  feed::SubscriberAgent<Up, Handler> agent(up, c, handler, sub_counters, opts);
  handler.watch(agent.subscriber());
  agent.start();
  RelayOutcome out;
  const uint64_t t0 = monotonic_ns();
  uint64_t seen = agent.control_rounds();
  FirstSubscription first;
  for (;;) {
    const uint64_t now = monotonic_ns();
    const size_t n = agent.do_work(now);
    handler.end_round(now);
    down.do_work(now);
    if (handler.failed()) {
      out.ending = RelayEnding::kCannotForward;
      out.error = handler.failure_text();
      break;
    }
    if (agent.control_rounds() != seen) {
      seen = agent.control_rounds();
      if (agent.finished()) {
        handler.finish(now);
        break;
      }
      SubscriberEnding why{};
      if (subscriber_should_end(agent, limits, t0, now, why, out.error, &first)) {
        out.ending = why == SubscriberEnding::kRefused         ? RelayEnding::kRefused
                     : why == SubscriberEnding::kPublisherLost ? RelayEnding::kPublisherLost
                                                               : RelayEnding::kStopped;
        break;
      }
      if (!on_round(now) || lane.stopping()) {
        out.ending = RelayEnding::kStopped;
        break;
      }
    }
    agent.idle(n);
  }
  handler.end_round(monotonic_ns());
  if (handler.failed() && out.ending == RelayEnding::kEnded) {
    out.ending = RelayEnding::kCannotForward;
    out.error = handler.failure_text();
  }
  if (out.ending != RelayEnding::kEnded && out.ending != RelayEnding::kStopped) lane.abandon();
  out.paced.end_ns = monotonic_ns();
  stats::dump_counters(agent.subscriber().counters(), "sub.", out.counters);
  stats::MirroredCounters(up.counter_groups(), "@up").dump(out.counters);
  return out;
}

// One relay on a PublisherRuntime lane (its Hooks::publish): subscribes
// over `up` and forwards into the lane's one channel, as follow_upstream
// runs it. The outcome's counters: "relay.*", then follow_upstream's.
template <class Lane, media::SubscriberMedium Up, class Round>
RelayOutcome relay_lane(Lane& lane, Up& up, const feed::SubscriberConfig& cfg, const feed::SubscriberAgentOptions& opts,
                        const SubscriberLimits& limits, RelayCounters& counters, feed::SubscriberCounters* sub_counters,
                        Round&& on_round) {
  auto& down = lane.publisher().agent(0);
  Forwarder<std::remove_reference_t<decltype(down)>> fwd(down, counters);
  RelayOutcome out = follow_upstream(lane, fwd, up, cfg, opts, limits, sub_counters, std::forward<Round>(on_round));
  out.paced.published = counters.messages.get();
  out.lead_with(counters, "relay.");
  return out;
}

}  // namespace mdcast::runtime
