// The mdcast side of `mdcast bench`: publisher and subscriber bodies that run
// in forked, pinned children, templates over the same medium drivers as
// `mdcast publish` / `mdcast subscribe` (shm_driver.hpp and its siblings).
// Their duty loops follow runners.cpp step for step (burst of up to 256
// messages, poll; subscriber batches of 64 datagrams; the control plane on a
// timer, feed.control_poll = RunSpec::control_poll_ns, 100 us by default), so
// what is measured is what those commands do, plus a measurement window.
// control_poll_ns 0 polls the control plane on every idle round instead, to
// show what that costs (a system call per client per poll):
//
//   go ... priming ... t0 ........ t0 + warmup ........... t0 + warmup + duration
//                      paced publishing   the window opens: counts, CPU time   ends
//
// Priming writes one lap over the rings first (see RunSpec::prime_datagrams);
// the publisher then announces t0 on the board.
// Latency samples are taken for messages *sent* inside the window, delivery
// rates for messages *delivered* inside it. Results go to a RunBoard in
// memory shared with the parent.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "bench_medium.hpp"
#include "mdcast/bench/cpu.hpp"
#include "mdcast/bench/tsc.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "runners.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

enum class ProcState : uint32_t { kStarting = 0, kReady = 1, kDone = 2, kFailed = 3 };

// One process's corner of the board. Results are written before `state`
// becomes kDone (release), and read by the parent after it sees that (acquire)
// or after the process exited.
struct alignas(64) ProcBoard {
  std::atomic<uint32_t> state{0};
  std::atomic<uint64_t> progress{0};  // messages published / delivered so far
  uint64_t total = 0;
  uint64_t window_messages = 0, window_datagrams = 0, window_bytes = 0, window_cpu_ns = 0, window_ns = 0;
  uint64_t window_control_ns = 0;
  uint64_t lapped = 0, gaps = 0, recovered = 0, retransmit_requests = 0, snapshots = 0, malformed = 0, duplicates = 0;
  Histogram latency;
  char outcome[256]{};

  void set_outcome(std::string_view s) noexcept {
    const size_t n = std::min(s.size(), sizeof outcome - 1);
    std::memcpy(outcome, s.data(), n);
    outcome[n] = 0;
  }
  void finish(ProcState st) noexcept { state.store(static_cast<uint32_t>(st), std::memory_order_release); }
  [[nodiscard]] ProcState get() const noexcept { return static_cast<ProcState>(state.load(std::memory_order_acquire)); }
};

struct RunBoard {
  static constexpr size_t kMaxSubscribers = 64;
  std::atomic<uint32_t> go{0};
  std::atomic<uint32_t> abort{0};
  std::atomic<uint64_t> t0{0};        // publishing starts (CLOCK_MONOTONIC)
  std::atomic<uint64_t> deadline{0};  // everyone gives up here
  ProcBoard pub;
  ProcBoard subs[kMaxSubscribers];

  [[nodiscard]] bool stopping() const noexcept { return g_stop || abort.load(std::memory_order_relaxed); }
};

inline book::BookConfig bench_book_config(const Settings& s) {
  return {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels};
}

// Opaque messages of a fixed encoded size over the configured instruments,
// or the synthetic order flow of `mdcast publish`.
class MessageSource {
 public:
  MessageSource(const Settings& s, const RunSpec& spec)
      : instruments_(std::max<uint32_t>(1, s.pub.instruments)),
        payload_(std::make_unique<std::byte[]>(spec.message_bytes)),
        payload_len_(spec.message_bytes - wire::opaque::kPayload) {
    if (spec.orders) {
      book::GeneratorConfig gc;
      gc.seed = s.pub.seed;
      gc.instruments = s.pub.instruments;
      gc.max_orders = std::min<uint32_t>(120, s.feed.max_levels);
      gc.target_orders = std::min<uint32_t>(40, gc.max_orders);
      gen_.emplace(gc);
    }
    for (size_t i = 0; i < spec.message_bytes; ++i) payload_[i] = static_cast<std::byte>(i);
  }
  void next(wire::Message& m) noexcept {
    if (gen_) {
      gen_->next(m);
      return;
    }
    m = wire::Message::make_opaque(next_inst_, {payload_.get(), payload_len_});
    if (++next_inst_ == instruments_) next_inst_ = 0;
  }

 private:
  std::optional<book::Generator> gen_;
  uint32_t instruments_;
  uint32_t next_inst_ = 0;
  std::unique_ptr<std::byte[]> payload_;
  size_t payload_len_;
};

// ---------------------------------------------------------------- publisher --

template <class Driver>
int bench_publisher(const Settings& s, Driver& drv, const RunSpec& spec, RunBoard& b) {
  ProcBoard& me = b.pub;
  feed::PublisherConfig pc;
  pc.channel = s.feed.channel;
  pc.session = s.pub.session;
  pc.sender_id = s.pub.sender_id;
  pc.max_datagram = s.pub.max_datagram ? std::min(s.pub.max_datagram, drv.max_datagram()) : drv.max_datagram();
  pc.flush_interval_ns = spec.flush_interval_ns;
  pc.heartbeat_interval_ns = s.pub.heartbeat_interval_ns;
  pc.retransmit_bytes = s.pub.retransmit_bytes;
  pc.crc = s.pub.crc;
  pc.books = bench_book_config(s);
  feed::Publisher<typename Driver::Sink> pub(pc, drv.sink(), drv.ring_memory());
  feed::ControlService svc(feed::ControlConfig{}, pub.core());
  MessageSource src(s, spec);
  const auto tsc = mdcast::bench::TscClock::calibrate();
  me.finish(ProcState::kReady);

  // Serve subscriptions until the parent says go.
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (b.stopping()) {
      me.set_outcome("aborted before the start");
      me.finish(ProcState::kFailed);
      return 1;
    }
    const uint64_t now = monotonic_ns();
    drv.poll_control(svc, now);
    svc.tick(now);
    pub.poll(now);
    sleep_for_ns(200 * kNsPerUs);
  }
  const auto& pcnt = pub.core().counters();
  uint64_t published = 0;
  wire::Message m;

  // Priming: one-message datagrams, a quarter ring ahead of the slowest
  // subscriber at most (their progress counts messages, one per datagram here).
  const uint64_t prime =
      std::max<uint64_t>(spec.prime_datagrams, spec.prime_retransmit_ring ? pub.core().ring().slots() : 0) + 256;
  const uint64_t lead = std::max<uint64_t>(spec.prime_datagrams / 4, 64);
  uint32_t nsubs = 0;
  while (nsubs < RunBoard::kMaxSubscribers && b.subs[nsubs].get() != ProcState::kStarting) ++nsubs;
  uint32_t prime_iter = 0;
  while (pcnt.datagrams_sent.get() < prime && !b.stopping()) {
    uint64_t slowest = UINT64_MAX;
    for (uint32_t i = 0; i < nsubs; ++i) slowest = std::min(slowest, b.subs[i].progress.load(std::memory_order_relaxed));
    const uint64_t now = monotonic_ns();
    if (published < slowest + lead) {
      src.next(m);
      if (pub.publish(m, now) != feed::PublishResult::kOk) {
        me.set_outcome("a message was refused by the publisher while priming: a bug");
        me.finish(ProcState::kFailed);
        return 1;
      }
      pub.flush(now);
      ++published;
    }
    if ((++prime_iter & 63) == 0 || published >= slowest + lead) {
      drv.poll_control(svc, now);
      svc.tick(now);
      me.progress.store(published, std::memory_order_relaxed);
      if (published >= slowest + lead) sleep_for_ns(20 * kNsPerUs);
    }
  }
  const uint64_t t0 = monotonic_ns() + kNsPerMs;
  b.t0.store(t0, std::memory_order_release);
  const uint64_t warm_end = t0 + spec.window.warmup_ns;
  const uint64_t end = warm_end + spec.window.duration_ns;
  const uint64_t primed = published;
  while (monotonic_ns() < t0) {
  }

  struct Mark {
    uint64_t messages, datagrams, bytes, cpu, time, control_ticks;
  };
  uint64_t control_ticks = 0;  // spent in control-plane polls
  auto mark = [&](uint64_t now) {
    return Mark{published, pcnt.datagrams_sent.get(), pcnt.bytes_sent.get(), mdcast::bench::process_cpu_ns(), now,
                control_ticks};
  };
  std::optional<Mark> w0;

  // The duty loop of runners.cpp publish_loop, with the window marks.
  IdleStrategy idle(spec.pub_idle);
  const double per_ns = spec.rate / 1e9;
  bool pending = false;
  uint32_t iter = 0;
  uint64_t last_control = 0;
  uint64_t now = t0;
  while (!b.stopping()) {
    now = monotonic_ns();
    if (now >= end) break;
    if (!w0 && now >= warm_end) w0 = mark(now);
    const uint64_t due =
        spec.rate > 0 ? primed + static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1 : published + 256;
    bool worked = false;
    for (int burst = 0; published < due && burst < 256; ++burst) {
      if (!pending) {
        src.next(m);
        pending = true;
      }
      const feed::PublishResult r = pub.publish(m, now);
      if (r == feed::PublishResult::kBackPressured) break;
      if (r != feed::PublishResult::kOk) {
        me.set_outcome("a message was refused by the publisher: a bug");
        me.finish(ProcState::kFailed);
        return 1;
      }
      pending = false;
      ++published;
      worked = true;
    }
    pub.poll(now);
    if ((!worked || (++iter & 63) == 0) && now - last_control >= spec.control_poll_ns) {
      last_control = now;
      const uint64_t c0 = mdcast::bench::TscClock::now();
      drv.poll_control(svc, now);
      svc.tick(now);
      control_ticks += mdcast::bench::TscClock::now() - c0;
      me.progress.store(published, std::memory_order_relaxed);
    }
    if (worked) {
      idle.reset();
    } else if (spec.pub_idle != IdleMode::kSpin && spec.rate > 0 && spec.burst_ns) {
      // One wake-up per burst (or when the open datagram must leave): the
      // CPU time is then publishing, not pacing.
      uint64_t wake = t0 + static_cast<uint64_t>(static_cast<double>(published - primed) / per_ns) + spec.burst_ns;
      if (pub.core().has_open()) wake = std::min(wake, now + spec.flush_interval_ns);
      if (wake > now) sleep_for_ns(std::min<uint64_t>(wake - now, 10 * kNsPerMs));
    } else if (spec.pub_idle != IdleMode::kSpin && spec.rate > 0) {
      // As publish_loop: sleep until the next message is due or the open
      // datagram must leave, so CPU time is work, not waiting.
      const auto next_due = t0 + static_cast<uint64_t>(static_cast<double>(published - primed) / per_ns);
      uint64_t wake = next_due;
      if (pub.core().has_open()) wake = std::min(wake, now + spec.flush_interval_ns);
      if (wake > now + 30 * kNsPerUs)
        sleep_for_ns(std::min<uint64_t>(wake - now - 20 * kNsPerUs, IdleStrategy::kMaxParkNs));
      else
        idle.idle();
    } else {
      idle.idle();
    }
  }
  const Mark w1 = mark(now);
  if (w0) {
    me.window_messages = w1.messages - w0->messages;
    me.window_datagrams = w1.datagrams - w0->datagrams;
    me.window_bytes = w1.bytes - w0->bytes;
    me.window_cpu_ns = w1.cpu - w0->cpu;
    me.window_ns = w1.time - w0->time;
    me.window_control_ns = tsc.to_ns(w1.control_ticks - w0->control_ticks);
  }
  me.total = published;
  me.progress.store(published, std::memory_order_relaxed);

  // End the session, then serve recovery until every subscriber has left.
  uint64_t t_end = monotonic_ns();
  while (!pub.end_session(t_end) && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  uint64_t empty_since = 0;
  while (!b.stopping() && monotonic_ns() < b.deadline.load(std::memory_order_relaxed)) {
    now = monotonic_ns();
    pub.poll(now);
    drv.poll_control(svc, now);
    svc.tick(now);
    if (drv.clients() == 0) {
      if (!empty_since) empty_since = now;
      if (now - empty_since > 100 * kNsPerMs) break;
    } else {
      empty_since = 0;
    }
    sleep_for_ns(200 * kNsPerUs);
  }
  me.set_outcome(b.stopping() ? "aborted" : "ok");
  me.finish(ProcState::kDone);
  return 0;
}

// --------------------------------------------------------------- subscriber --

struct BenchHandler {
  Histogram latency;
  uint64_t lo = 0, hi = 0;  // the window
  uint64_t delivered = 0;
  uint64_t rx_window = 0;
  uint64_t last_seq = 0;
  bool per_datagram = false;

  void on_message(const wire::Message&, const feed::Delivery& d) noexcept {
    ++delivered;
    rx_window += d.receive_time_ns >= lo && d.receive_time_ns < hi;
    if (d.send_time_ns < lo || d.send_time_ns >= hi || d.recovered) return;
    if (per_datagram && d.sequence == last_seq) return;
    last_seq = d.sequence;
    latency.record(d.receive_time_ns > d.send_time_ns ? d.receive_time_ns - d.send_time_ns : 0);
  }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint32_t) noexcept {}
};

template <class Driver>
int bench_subscriber(const Settings& s, Driver& drv, const RunSpec& spec, RunBoard& b, ProcBoard& me) {
  feed::SubscriberConfig sc;
  sc.channel = s.feed.channel;
  sc.sender_id = s.sub.sender_id;
  sc.window_bytes = s.sub.window_bytes;
  sc.books = bench_book_config(s);
  sc.maintain_books = spec.books;
  sc.verify_checksums = spec.books;
  sc.publisher_timeout_ns = s.sub.publisher_timeout_ns;
  sc.request_timeout_ns = 100 * kNsPerMs;
  sc.max_datagram = wire::kMaxDatagram;
  auto h = std::make_unique<BenchHandler>();
  h->per_datagram = spec.sample_per_datagram;
  feed::Subscriber<BenchHandler> sub(sc, *h, &drv.control());

  auto fail_with = [&](std::string_view why) {
    me.set_outcome(why);
    me.finish(ProcState::kFailed);
    return 1;
  };
  const uint64_t subscribe_by = monotonic_ns() + 15 * kNsPerSec;
  while (!sub.subscribed()) {
    const uint64_t now = monotonic_ns();
    if (b.stopping()) return fail_with("aborted before the start");
    if (sub.subscribe_refused()) return fail_with("subscription refused: " + sub.last_error());
    if (now > subscribe_by) return fail_with("no subscription acknowledgement within 15 s");
    drv.poll_control(sub, now);
    sub.poll(now);
    sleep_for_ns(kNsPerMs);
  }
  me.finish(ProcState::kReady);
  while (b.go.load(std::memory_order_acquire) == 0) {
    if (b.stopping()) return fail_with("aborted before the start");
    const uint64_t now = monotonic_ns();
    drv.poll_control(sub, now);
    sub.poll(now);
    sleep_for_ns(200 * kNsPerUs);
  }
  // Nothing is sampled until the publisher has primed and announced t0.
  h->lo = h->hi = UINT64_MAX;
  const uint64_t deadline = b.deadline.load();

  // The duty loop of runners.cpp subscribe_loop.
  IdleStrategy idle(spec.sub_idle);
  uint32_t iter = 0, idle_iter = 0, idle_rounds = 0;
  uint64_t last_control = 0;
  std::string_view outcome = "ok";
  while (true) {
    const size_t n = drv.poll_data([&](std::span<const std::byte> d, uint64_t rx) { sub.on_datagram(d, feed::Rail::kA, rx); }, 64);
    // Control on a timer (as runners.cpp); the clock is read only every 64
    // idle rounds, so the spin that waits for data stays a tight loop.
    // control_poll_ns 0: every idle round.
    const bool round = spec.control_poll_ns == 0 ? (n == 0 || (++iter & 15) == 0)
                                                 : (n == 0 ? (++idle_iter & 63) == 0 : (++iter & 15) == 0);
    uint64_t now = 0;
    if (round && (now = monotonic_ns()) - last_control >= spec.control_poll_ns) {
      last_control = now;
      drv.poll_control(sub, now);
      sub.poll(now);
      me.progress.store(h->delivered, std::memory_order_relaxed);
      if (h->lo == UINT64_MAX) {
        if (const uint64_t t0 = b.t0.load(std::memory_order_acquire)) {
          h->lo = t0 + spec.window.warmup_ns;
          h->hi = h->lo + spec.window.duration_ns;
        }
      }
      if (sub.session_ended() && sub.caught_up()) break;
      if (now > deadline) {
        outcome = "timed out";
        break;
      }
      if (b.stopping()) {
        outcome = "aborted";
        break;
      }
    }
    if (n) {
      idle.reset();
      idle_rounds = 0;
    } else if (!(spec.sub_idle == IdleMode::kBlock && ++idle_rounds > 64 && drv.block(kNsPerMs))) {
      idle.idle();
    }
  }
  const auto& c = sub.counters();
  me.total = h->delivered;
  me.window_messages = h->rx_window;
  me.window_ns = spec.window.duration_ns;
  me.lapped = drv.lapped();
  me.gaps = c.gaps.get();
  me.recovered = c.datagrams_recovered.get();
  me.retransmit_requests = c.retransmit_requests.get();
  me.snapshots = c.snapshots_requested.get();
  me.malformed = c.malformed.get();
  me.duplicates = c.duplicates.get();
  me.latency = h->latency;
  me.progress.store(h->delivered, std::memory_order_relaxed);
  me.set_outcome(outcome);
  me.finish(outcome == "ok" ? ProcState::kDone : ProcState::kFailed);
  return outcome == "ok" ? 0 : 1;
}

}  // namespace mdcast::app::bench
