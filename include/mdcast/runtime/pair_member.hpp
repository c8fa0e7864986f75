// A publisher pair's member that starts while its peer publishes
// (docs/architecture.md, "Publisher pairs"): it joins the session the peer
// publishes instead of beginning one, and rebuilds the peer's position from
// its own input before its rail carries anything.
//
//   runtime::PeerFollower<media::udp::SubscriberMedium> peer(std::move(peer_medium), sub_cfg);
//   const uint64_t session = peer.join(monotonic_ns() + timeout, &stop);  // 0: no peer, begin one
//   feed::PublisherAgent agent(medium, cfg_with(session), control);
//   const runtime::CatchUp c = runtime::catch_up(agent, source, peer, &stop);
//   peer.leave();
//   feed::run_paced(agent, source, {.rate = r, .start_ns = monotonic_ns(), .already = c.messages}, hooks);
//
// Why a subscriber, and why a replay. The member subscribes to its peer as
// any subscriber does, so the session it takes is one the peer's control
// plane confirmed (with secrets, to an identity it proved), never a
// datagram's claim. It then replays its input from the session's start
// through its engine with every datagram marked as the peer's
// (Publisher::replay_through): books, instrument sequences, fragment ids and
// the retransmit ring come out as the peer's did, since hot-hot members are
// a function of their input, and nothing goes on the wire. At the first
// packet boundary at or past the peer's last known sequence it stops
// replaying; from the next datagram on its rail carries the feed, the same
// bytes the peer sends, a little later. What the application guarantees
// is that it can give its input again from the start of the session (a
// feed handler's own capture, an exchange's replay, or a deterministic
// source, as `mdcast publish`'s is); replay runs at the engine's speed
// (millions of messages a second), not the feed's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/subscriber_agent.hpp"

namespace mdcast::runtime {

template <media::SubscriberMedium Medium>
class PeerFollower {
  // The member needs the peer's session and position, not its messages.
  struct Ignore {
    void on_message(const wire::Message&, const feed::Delivery&) noexcept {}
    void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
    void on_reset(uint64_t) noexcept {}
  };
  using Agent = feed::SubscriberAgent<Medium, Ignore>;
  // No instrument, and a snapshot (of nothing) for any gap: a member joins
  // mid-session, and the history before it would otherwise cost its peer a
  // whole snapshot or the retransmission of every datagram so far. Not
  // counted among the peer's subscribers either (publisher.wait_subscribers).
  static feed::SubscriberConfig position_only(feed::SubscriberConfig c) {
    c.all_instruments = false;
    c.instruments.clear();
    c.max_retransmit_span = 0;
    return c;
  }

 public:
  PeerFollower(std::unique_ptr<Medium> medium, const feed::SubscriberConfig& cfg)
      : medium_(std::move(medium)), agent_(std::make_unique<Agent>(*medium_, position_only(cfg), ignore_)) {
    agent_->start();
  }
  PeerFollower(const PeerFollower&) = delete;
  PeerFollower& operator=(const PeerFollower&) = delete;
  ~PeerFollower() { leave(); }

  // Follows the peer until its control plane confirmed a session: that
  // session, or 0 at `deadline_ns` or on a stop request (no peer: the
  // member begins a session).
  uint64_t join(uint64_t deadline_ns, const StopFlag* stop) {
    while (agent_ && !(stop && stop->requested())) {
      const uint64_t now = monotonic_ns();
      if (const uint64_t s = session()) return s;
      if (now >= deadline_ns) return 0;
      if (agent_->do_work(now) == 0) sleep_ns(100 * kNsPerUs);
    }
    return 0;
  }

  // The session the peer's control plane confirmed so far; 0: none yet.
  [[nodiscard]] uint64_t session() const noexcept {
    if (!agent_) return 0;
    const auto& sub = agent_->subscriber();
    return sub.session_confirmed() ? sub.session() : 0;
  }
  // Why no session was confirmed, where the engine knows (a refusal, a peer
  // that could not prove itself); "" otherwise.
  [[nodiscard]] std::string last_error() const { return agent_ ? std::string(agent_->subscriber().last_error()) : std::string(); }
  // One round of following (what join does between its looks).
  size_t do_work(uint64_t now) { return agent_ ? agent_->do_work(now) : 0; }

  // The peer's last sequence as far as this member knows: what its control
  // plane said, or the highest that came from it since (held or delivered:
  // a follower that joined mid-session delivers nothing while it recovers
  // the history before it). What a datagram alone may claim is bounded by
  // the engine (confirm_ahead: a window past what the control plane said),
  // and a target too far only makes the replay longer. Takes what has
  // arrived first.
  uint64_t peer_last(uint64_t now) {
    if (!agent_) return last_;
    for (int i = 0; i < 64 && agent_->do_work(now) != 0; ++i) {
    }
    agent_->poll_control(now);
    const auto& sub = agent_->subscriber();
    last_ = std::max({last_, sub.confirmed_last(), sub.highest_sequence(), sub.next_sequence() ? sub.next_sequence() - 1 : 0});
    return last_;
  }

  // Stops following: the subscription closes (teardown: the agent, then
  // the medium it runs over).
  void leave() noexcept {
    agent_.reset();
    medium_.reset();
  }

 private:
  Ignore ignore_;
  std::unique_ptr<Medium> medium_;
  std::unique_ptr<Agent> agent_;
  uint64_t last_ = 0;
};

// Whether a member that stopped at sequence `mine` may leave `session` to
// its peer (PublisherRuntime's Hooks::hand_over): the peer's control plane
// confirms the same session and the peer publishes past `mine` before
// `deadline_ns`. A peer that is itself stopping, or one as far as this member
// and no further, does not count: were both to leave, nobody would end the
// session. So when both members stop together, the one further on ends the
// session and the other leaves it; where both stopped at one sequence, both
// end it there. `serve(now)` keeps the member's own channels
// answering meanwhile; a second stop request (`stop->urgent()`) gives up.
template <class Peer, class Serve>
bool carries_on(Peer& peer, uint64_t session, uint64_t mine, uint64_t deadline_ns, const StopFlag* stop,
                Serve&& serve) {
  for (;;) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline_ns || (stop && stop->urgent())) return false;
    serve(now);
    const uint64_t s = peer.session();
    if (s != 0 && s != session) return false;
    if (s == session && peer.peer_last(now) > mine) return true;
    if (peer.do_work(now) == 0) sleep_ns(100 * kNsPerUs);
  }
}

struct CatchUp {
  uint64_t messages = 0;       // input messages replayed (the paced loop's `already`)
  uint64_t through = 0;        // the last sequence replayed: the peer's; the member's rail starts after it
  uint64_t peer_last = 0;      // the peer's last known sequence when the replay ended
  uint64_t ns = 0;             // how long the replay took
  bool stopped = false;        // a stop request, or the input ended, before the peer's position
  feed::PublishResult refused = feed::PublishResult::kOk;  // the input made an invalid message
};

// Replays `source` through `agent` until it has committed, at the end of an
// upstream packet, at least as far as the peer is known to be (asked again
// every `ask_every` messages, since the peer goes on meanwhile). Needs a
// source with packets and Boundaries::kInput: a datagram cut anywhere else
// would not be the peer's.
template <class Agent, class Source, class Peer>
CatchUp catch_up(Agent& agent, Source& source, Peer& peer, const StopFlag* stop, uint64_t ask_every = 4096) {
  static_assert(requires { source.packet_end(); }, "catching up needs a source with packets");
  CatchUp c;
  const uint64_t t0 = monotonic_ns();
  auto& pub = agent.publisher();
  pub.replay_through(UINT64_MAX);
  uint64_t target = peer.peer_last(t0);
  wire::Message m;
  for (;;) {
    const uint64_t now = monotonic_ns();
    if ((stop && stop->requested()) || !source.next(m)) {
      c.stopped = true;
      break;
    }
    feed::PublishResult r;
    while ((r = agent.publish(m, now)) == feed::PublishResult::kBackPressured) agent.do_work(monotonic_ns());
    if (r != feed::PublishResult::kOk) {
      c.refused = r;
      c.stopped = true;
      break;
    }
    ++c.messages;
    if (c.messages % ask_every == 0) target = peer.peer_last(now);
    if (source.packet_end()) {
      agent.flush(now);
      if (agent.core().last_committed() >= target) {
        // One more look: the peer went on while the last chunk replayed.
        target = peer.peer_last(now);
        if (agent.core().last_committed() >= target) break;
      }
    }
  }
  c.through = agent.core().last_committed();
  pub.replay_through(c.through);
  c.peer_last = target;
  c.ns = monotonic_ns() - t0;
  return c;
}

}  // namespace mdcast::runtime
