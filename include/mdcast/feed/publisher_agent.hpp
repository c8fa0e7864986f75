// PublisherAgent<Medium>: a whole publisher over one medium - the engine
// (Publisher<Sink>: books, sequencing, batching, retransmit ring, heartbeats,
// pacing), its control service (subscriptions, entitlements, retransmits,
// snapshots) and the medium's control plane - driven from one thread.
//
//   media::shm::PublisherMedium medium(shm_options, session);
//   feed::PublisherAgent agent(medium, publisher_config, control_config);
//   for (;;) {
//     const uint64_t now = monotonic_ns();
//     while (have_data) if (agent.publish(m, now) == PublishResult::kBackPressured) break;
//     agent.do_work(now);             // flush timer, heartbeats, control plane on its timer
//   }
//   while (!agent.end_session(now)) ...;  agent.linger(...);   // serve late recovery
//
// Threading: everything on the thread that publishes (the control service
// reads the books and the ring, which that thread owns). The data path
// (publish, flush) is noexcept and allocation-free; do_work's control part
// may allocate and may throw mdcast::Error when the medium fails beyond
// recovery.
//
// publish() contract (PublishResult): kOk - sequenced, m.instrument_seq set;
// kBackPressured - pacing or the medium holds back: offer the same message
// again later; kRejected - invalid for the book (core().last_reject()), the
// feed is unchanged; kTooLarge - above max_message.
#pragma once

#include <cstdint>

#include "mdcast/core/clock.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/medium_fit.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::feed {

struct PublisherAgentOptions {
  // Least time between two polls of the control plane. A poll costs system
  // calls (a few microseconds): on a timer, not per message, it stays off the
  // latency path. 0: every do_work.
  uint64_t control_poll_ns = 100 * kNsPerUs;
};

// Where the agent's counters live (a counters file, say); null: owned.
struct PublisherAgentCounters {
  PublisherCounters* publisher = nullptr;
  ControlCounters* control = nullptr;
  SubscriberTable* subscribers = nullptr;  // rows for the publisher's view of its subscribers; null: none
};

// The linger loop of one agent or several: round(now) serves recovery once
// and returns the control clients still connected; ends when none has been
// for quiet_ns, at until_ns, or when stop() says so.
template <class Stop, class Round>
void linger_rounds(uint64_t until_ns, uint64_t quiet_ns, uint64_t nap_ns, Stop& stop, Round&& round) {
  uint64_t empty_since = 0;
  while (!stop()) {
    const uint64_t now = monotonic_ns();
    if (now >= until_ns) return;
    if (round(now) == 0) {
      if (!empty_since) empty_since = now;
      if (now - empty_since > quiet_ns) return;
    } else {
      empty_since = 0;
    }
    sleep_ns(nap_ns);
  }
}

template <media::PublisherMedium Medium>
class PublisherAgent {
 public:
  using Sink = typename Medium::Sink;

  // cfg passes through medium.configure() (datagram size, ring). Throws
  // Error naming the field for an invalid configuration.
  PublisherAgent(Medium& medium, const PublisherConfig& cfg, const ControlConfig& control = {},
                 PublisherAgentCounters where = {}, PublisherAgentOptions opts = {})
      : medium_(medium),
        pub_(fit_to_medium(medium, cfg), medium.sink(), medium.ring_memory(), where.publisher),
        svc_(control, pub_.core(), where.control),
        opts_(opts) {
    svc_.show_subscribers(where.subscribers);
    svc_.use_drill(cfg.drill);
  }
  PublisherAgent(const PublisherAgent&) = delete;
  PublisherAgent& operator=(const PublisherAgent&) = delete;

  // ---- data path
  PublishResult publish(wire::Message& m, uint64_t now) noexcept { return pub_.publish(m, now); }
  // Seals the open datagram and hands everything committed to the medium.
  void flush(uint64_t now) noexcept { pub_.flush(now); }
  // Seals the open datagram; send_committed (or the next publish) sends it.
  void seal(uint64_t now) noexcept { pub_.seal(now); }
  // Bursts on a medium that takes batches (Publisher::stage): stage the
  // messages, then send_committed once.
  static constexpr bool kTakesBatches = media::BatchSink<Sink>;
  PublishResult stage(wire::Message& m, uint64_t now) noexcept { return pub_.stage(m, now); }
  void send_committed(uint64_t now) noexcept { pub_.send_committed(now); }
  [[nodiscard]] uint64_t unsent() const noexcept { return pub_.unsent(); }

  // ---- duty cycle
  // Time-bound flush, retries of back-pressured sends, heartbeats when idle,
  // and the control plane when its timer is due. Returns control work done.
  size_t do_work(uint64_t now) {
    pub_.poll(now);
    if (now - last_control_ < opts_.control_poll_ns) return 0;
    return poll_control(now);
  }
  // The control plane now: clients, requests, medium upkeep, pacing reports.
  size_t poll_control(uint64_t now) {
    last_control_ = now;
    const size_t work = medium_.poll_control(svc_, now);
    svc_.tick(now);
    // The stall a control poll imposes on the feed: what any client's
    // requests may cost the publishing thread, bounded by the service.
    const uint64_t took = monotonic_ns() - now;
    control_ns_ += took;
    ++control_polls_;
    if (took > svc_.counters().longest_poll_ns.get()) svc_.mutable_counters().longest_poll_ns.set(took);
    return work;
  }

  // Flushes and announces a clean end of session; false while the medium
  // still holds back committed datagrams (call again). Heartbeats repeat the
  // announcement afterwards for receivers that lost it.
  bool end_session(uint64_t now) noexcept { return pub_.end_session(now); }

  // After end_session: keep serving recovery until no control client has
  // been connected for `quiet_ns` (subscribers leave once caught up), until
  // `until_ns`, or until stop() says so. Sleeps `nap_ns` between rounds.
  template <class Stop>
  void linger(uint64_t until_ns, uint64_t quiet_ns, uint64_t nap_ns, Stop&& stop) {
    linger_rounds(until_ns, quiet_ns, nap_ns, stop, [this](uint64_t now) {
      pub_.poll(now);
      poll_control(now);
      return medium_.clients();
    });
  }

  // ---- what it is
  [[nodiscard]] Publisher<Sink>& publisher() noexcept { return pub_; }
  [[nodiscard]] PublisherCore& core() noexcept { return pub_.core(); }
  [[nodiscard]] const PublisherCore& core() const noexcept { return pub_.core(); }
  [[nodiscard]] ControlService& control() noexcept { return svc_; }
  [[nodiscard]] const ControlService& control() const noexcept { return svc_; }
  [[nodiscard]] Medium& medium() noexcept { return medium_; }
  [[nodiscard]] size_t clients() const noexcept { return medium_.clients(); }
  [[nodiscard]] size_t subscribed_clients() const noexcept { return svc_.subscribed_clients(); }
  // Wall time spent in control-plane polls (a share of the publishing thread).
  [[nodiscard]] uint64_t control_time_ns() const noexcept { return control_ns_; }
  [[nodiscard]] uint64_t control_polls() const noexcept { return control_polls_; }

 private:
  Medium& medium_;
  Publisher<Sink> pub_;
  ControlService svc_;
  PublisherAgentOptions opts_;
  uint64_t last_control_ = 0;
  uint64_t control_ns_ = 0;
  uint64_t control_polls_ = 0;
};

}  // namespace mdcast::feed
