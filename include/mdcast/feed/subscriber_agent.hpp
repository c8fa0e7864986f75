// SubscriberAgent<Medium, Handler>: a whole subscriber over one medium - the
// engine (Subscriber<Handler>: exact in-order delivery, recovery, books) fed
// from the medium's data path, and the medium's control plane - driven from
// one thread.
//
//   media::shm::SubscriberMedium medium(shm_options);
//   MyHandler h;                       // on_message, on_snapshot, on_reset (feed/subscriber.hpp)
//   feed::SubscriberAgent agent(medium, subscriber_config, h);
//   agent.start();
//   while (!agent.finished()) agent.idle(agent.do_work(monotonic_ns()));
//
// or agent.run(hooks) for the same loop with a hook on every control round
// (and a clock read only every few rounds, see run). do_work takes the time
// as PublisherAgent::do_work does: a test drives both on one virtual clock.
//
// Threading: one thread calls everything; the handler runs on it, from
// inside do_work. The data path (datagrams in, messages out to the handler)
// is noexcept, allocation-free and has no virtual call per message; the
// control part may allocate and may throw mdcast::Error when the medium fails
// beyond recovery.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/medium_fit.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::feed {

struct SubscriberAgentOptions {
  // Least time between two polls of the control plane (a system call, and
  // the engine's timers, which send the requests datagrams raised: see
  // SubscriberCore). 0: every idle round and every 16th busy one.
  uint64_t control_poll_ns = 100 * kNsPerUs;
  // kBlock: after 64 idle rounds sleep in the medium (futex, completion
  // channel) where it can; any other mode as IdleStrategy does.
  IdleMode idle = IdleMode::kSpin;
  size_t batch = 64;  // datagrams taken from the medium per do_work at most
  // While the medium says this host's own link is down (media::own_link_down)
  // the publisher is not at fault: its silence is held against it neither
  // by the engine (publisher_timeout) nor by the run (give_up) - for at most
  // this long per outage, so a link that never comes back still ends in
  // "publisher lost" (this long plus give_up after it went down).
  uint64_t link_down_hold_ns = 60 * kNsPerSec;
  IdleParams idle_params{};  // how `idle` backs off (feed.idle_*)
};

// The time a spinning duty loop hands do_work: read every 64th idle round
// and every 16th busy one (after a round that took n datagrams), the last
// reading in between - a clock read costs more than a look at an empty
// medium, and a control round on a 100 us timer loses nothing by waiting a
// few rounds for it. `every_round`: read each time (control_poll_ns 0, whose
// control round per idle round costs far more than the read).
class SpinClock {
 public:
  explicit SpinClock(bool every_round) noexcept : every_round_(every_round) {}
  uint64_t now(size_t n) noexcept {
    if (every_round_ || last_ == 0 || (++rounds_ & (n ? 15u : 63u)) == 0) last_ = monotonic_ns();
    return last_;
  }

 private:
  bool every_round_;
  uint32_t rounds_ = 0;
  uint64_t last_ = 0;
};

template <media::SubscriberMedium Medium, SubscriberHandler Handler>
class SubscriberAgent {
 public:
  // cfg passes through medium.configure() (datagram size). Throws Error for
  // an invalid configuration.
  SubscriberAgent(Medium& medium, const SubscriberConfig& cfg, Handler& handler, SubscriberCounters* counters = nullptr,
                  SubscriberAgentOptions opts = {})
      : medium_(medium),
        sub_(fit_to_medium(medium, cfg), handler, &medium.control(), counters),
        opts_(opts),
        idle_(opts.idle, opts.idle_params) {}
  SubscriberAgent(const SubscriberAgent&) = delete;
  SubscriberAgent& operator=(const SubscriberAgent&) = delete;

  // The loop begins: the medium positions its reader (at the live edge;
  // history comes through recovery).
  void start() { medium_.start(); }

  // One duty cycle at `now`: up to `batch` datagrams into the engine (each
  // stamped by the medium as it arrives, not with `now`); then the control
  // round when its timer is due at `now` (control_poll_ns since the last).
  // `now` may lag the clock a little (run reads it every few rounds): the
  // round comes that much later. Returns datagrams taken.
  size_t do_work(uint64_t now) {
    const size_t n = medium_.source().poll(
        [this](std::span<const std::byte> d, uint64_t rx, media::RailId rail) noexcept {
          sub_.on_datagram(d, rail == media::RailId::kB ? Rail::kB : Rail::kA, rx);
        },
        opts_.batch);
    data_since_control_ |= n != 0;
    const bool due = opts_.control_poll_ns == 0 ? (n == 0 || (++busy_rounds_ & 15) == 0)
                                                : now - last_control_ >= opts_.control_poll_ns;
    if (due) poll_control(now);
    return n;
  }

  // The control plane and the engine's timers now (requests, retries,
  // status reports). Returns control work done.
  size_t poll_control(uint64_t now) {
    last_control_ = now;
    ++control_rounds_;
    if (data_since_control_ || last_data_ == 0) last_data_ = now;
    data_since_control_ = false;
    hold_for_own_link(now);
    const size_t work = medium_.poll_control(sub_, now);
    sub_.poll(now);
    return work;
  }

  // What to do after a do_work that returned n: nothing when there was
  // data; otherwise spin, back off, or (kBlock) sleep in the medium.
  void idle(size_t n) noexcept {
    if (n) {
      idle_.reset();
      quiet_rounds_ = 0;
      block_ns_ = kNsPerMs;
    } else if (!(opts_.idle == IdleMode::kBlock && ++quiet_rounds_ > 64 && medium_.source().block(nap()))) {
      idle_.idle();
    }
  }

  // kBlock: how long to sleep in the medium. 1 ms while the control plane
  // owes an answer (it comes over a socket the sleep does not watch);
  // otherwise each quiet sleep doubles, up to 16 ms: an idle subscriber
  // wakes ~60 times a second, not 1000 (1024 of them cost 17 cores at 1 ms),
  // and a status report or timer is at most 16 ms late.
  [[nodiscard]] uint64_t nap() noexcept {
    if (sub_.awaiting_control()) return block_ns_ = kNsPerMs;
    const uint64_t ns = block_ns_;
    block_ns_ = std::min<uint64_t>(block_ns_ * 2, 16 * kNsPerMs);
    return ns;
  }

  // do_work/idle until the session ended and everything was delivered, or
  // hooks.on_control_round(now) returns false (checked after every control
  // round). Returns true when the session ended. The clock is read every
  // 64th idle round and every 16th busy one (SpinClock), so a spin waiting
  // for data stays a tight loop.
  template <class Hooks>
  bool run(Hooks& hooks) {
    uint64_t seen = control_rounds_;
    SpinClock clock(opts_.control_poll_ns == 0);
    size_t n = 0;
    for (;;) {
      n = do_work(clock.now(n));
      if (control_rounds_ != seen) {
        seen = control_rounds_;
        if (finished()) return true;
        if (!hooks.on_control_round(last_control_)) return false;
      }
      idle(n);
    }
  }

  // The publisher ended its session and everything it announced was delivered.
  // The publisher confirmed the end of its session and everything through it
  // was delivered.
  [[nodiscard]] bool finished() const noexcept { return sub_.delivered_to_end(); }
  [[nodiscard]] Subscriber<Handler>& subscriber() noexcept { return sub_; }
  [[nodiscard]] const Subscriber<Handler>& subscriber() const noexcept { return sub_; }
  [[nodiscard]] Medium& medium() noexcept { return medium_; }
  [[nodiscard]] uint64_t control_rounds() const noexcept { return control_rounds_; }
  // When data last arrived, to a control round's precision (the first round
  // counts as data: silence is measured from the start).
  [[nodiscard]] uint64_t last_data_ns() const noexcept { return last_data_; }

 private:
  void hold_for_own_link(uint64_t now) noexcept {
    if (!media::own_link_down(medium_)) {
      link_down_since_ = 0;
      return;
    }
    if (link_down_since_ == 0) link_down_since_ = now;
    if (now - link_down_since_ >= opts_.link_down_hold_ns) return;
    last_data_ = now;
    sub_.hold_silence(now);
  }

  Medium& medium_;
  Subscriber<Handler> sub_;  // also what the medium's control plane reports to (a media::ControlEvents)
  SubscriberAgentOptions opts_;
  IdleStrategy idle_;
  uint64_t last_control_ = 0;
  uint64_t control_rounds_ = 0;
  uint64_t last_data_ = 0;
  uint64_t link_down_since_ = 0;  // the medium's own link went down then (0: it is up)
  bool data_since_control_ = false;
  uint32_t busy_rounds_ = 0;  // control_poll_ns 0: a control round every 16th busy one
  uint32_t quiet_rounds_ = 0;
  uint64_t block_ns_ = kNsPerMs;  // kBlock: the next sleep in the medium
};

}  // namespace mdcast::feed
