// The mdcast side of `mdcast bench`: publisher and subscriber bodies that run
// in forked, pinned children over a medium of the registry. They run the
// library's agents and duty loops - feed::run_paced for the publisher,
// SubscriberAgent::run for subscribers - exactly as `mdcast publish` /
// `mdcast subscribe` do (the control plane on a timer, feed.control_poll =
// RunSpec::control_poll_ns, 100 us by default), with hooks that open and
// close a measurement window. control_poll_ns 0 polls the control plane on
// every idle round instead, to show what that costs (a system call per
// client per poll):
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
#include <cstring>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "board.hpp"
#include "medium.hpp"
#include "measure/cpu.hpp"
#include "measure/usage.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/runtime/relay.hpp"
#include "runners.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

struct RunBoard {
  static constexpr size_t kMaxSubscribers = 64;
  std::atomic<uint32_t> go{0};
  std::atomic<uint32_t> abort{0};
  std::atomic<uint64_t> t0{0};        // publishing starts (CLOCK_MONOTONIC)
  std::atomic<uint64_t> deadline{0};  // everyone gives up here
  ProcBoard pub;
  ProcBoard subs[kMaxSubscribers];
  ProcBoard relay;  // RunSpec::relay: between the publisher and the last subscriber
  // With control clients: the load process, what it saw, what the
  // publisher's control plane counted, and where the publisher listens.
  ProcBoard load;
  LoadFigures load_figures;
  PublisherControlFigures pub_control;
  char control_address[128]{};

  [[nodiscard]] bool stopping() const noexcept { return g_stop.requested() || abort.load(std::memory_order_relaxed); }
  // A child, ready, keeps its side of the control plane going (serve(now))
  // until the parent says go; false when the run was aborted first.
  template <class Serve>
  bool await_go(Serve&& serve) const {
    while (go.load(std::memory_order_acquire) == 0) {
      if (stopping()) return false;
      serve(monotonic_ns());
      sleep_ns(200 * kNsPerUs);
    }
    return true;
  }
};

// Opaque messages of a fixed encoded size over the configured instruments,
// or the synthetic order flow of `mdcast publish`.
class MessageSource {
 public:
  MessageSource(const Settings& s, const RunSpec& spec)
      : instruments_(std::max<uint32_t>(1, s.pub.instruments)),
        payload_(std::make_unique<std::byte[]>(spec.message_bytes)),
        payload_len_(spec.message_bytes - wire::opaque::kPayload) {
    if (spec.orders) gen_.emplace(generator_config(s));
    for (size_t i = 0; i < spec.message_bytes; ++i) payload_[i] = static_cast<std::byte>(i);
  }
  bool next(wire::Message& m) noexcept {
    if (gen_) {
      gen_->next(m);
      return true;
    }
    m = wire::Message::make_opaque(next_inst_, {payload_.get(), payload_len_});
    if (++next_inst_ == instruments_) next_inst_ = 0;
    return true;
  }

 private:
  std::optional<book::Generator> gen_;
  uint32_t instruments_;
  uint32_t next_inst_ = 0;
  std::unique_ptr<std::byte[]> payload_;
  size_t payload_len_;
};

// ---------------------------------------------------------------- publisher --

// The publisher's control plane, for a run with control clients: where it
// listens (the load client connects there), and its counters.
template <class Medium>
void publish_control_address(Medium& medium, RunBoard& b) noexcept {
  if constexpr (requires { medium.server().address(); }) {
    const std::string& a = medium.server().address();
    const size_t n = std::min(a.size(), sizeof b.control_address - 1);
    std::memcpy(b.control_address, a.data(), n);
    b.control_address[n] = 0;
  }
}
template <class Agent>
uint64_t control_frames_in(Agent& a) noexcept {
  if constexpr (requires { a.medium().server().stats(); }) return a.medium().server().stats().frames_in.get();
  return 0;
}
template <class Agent>
void record_publisher_control(Agent& a, PublisherControlFigures& f) noexcept {
  if constexpr (requires { a.medium().server().stats(); }) {
    const auto& srv = a.medium().server();
    const auto& st = srv.stats();
    f.measured = true;
    f.max_clients = srv.config().max_clients;
    f.clients_open = srv.clients();
    f.accepted = st.accepted.get();
    f.refused = st.refused.get();
    f.refused_admission = st.refused_admission.get();
    f.evicted_unadmitted = st.evicted_unadmitted.get();
    f.accept_failures = st.accept_failures.get();
    f.cut = st.slow_disconnects.get() + st.memory_cutoffs.get() + st.bad_stream_disconnects.get() +
            st.handler_disconnects.get() + st.timeouts_unadmitted.get() + st.timeouts_partial_frame.get() +
            st.timeouts_idle.get();
  }
  const auto& c = a.control().counters();
  f.subscribed = a.subscribed_clients();
  f.status_reports = c.status_reports.get();
  f.retransmit_requests = c.retransmit_requests.get();
  f.snapshot_requests = c.snapshot_requests.get();
  f.session_queries = c.session_queries.get();
  f.overloaded = c.requests_overloaded.get();
  f.longest_poll_ns = c.longest_poll_ns.get();
}

template <class Medium>
int bench_publisher(const Settings& s, Medium& medium, const RunSpec& spec, RunBoard& b) {
  ProcBoard& me = b.pub;
  feed::PublisherConfig pc = publisher_config(s, s.pub.session);
  pc.flush_interval_ns = spec.flush_interval_ns;
  // The settings' control plane: with publisher.secrets the run authenticates (and tags its data).
  feed::PublisherAgent<Medium> agent(medium, pc, control_config(s), {}, {spec.control_poll_ns});
  publish_control_address(medium, b);
  MessageSource src(s, spec);
  const DtlbCounter dtlb;
  std::memcpy(me.perf_why, dtlb.why(), std::min(sizeof me.perf_why, std::strlen(dtlb.why()) + 1));
  me.finish(ProcState::kReady);

  // Subscriptions arrive meanwhile.
  if (!b.await_go([&](uint64_t now) { agent.do_work(now); })) return me.fail("aborted before the start");
  const auto& pcnt = agent.core().counters();
  uint64_t published = 0;
  wire::Message m;

  // Priming: one-message datagrams, a quarter ring ahead of the slowest
  // subscriber at most (their progress counts messages, one per datagram here).
  // A packed ring holds as many of these small datagrams as fit, not
  // slots() of them: it is primed until its writer has lapped it once.
  const history::RetransmitLog& primed = agent.core().ring();
  const bool prime_lap =
      spec.prime_retransmit_ring && primed.layout() == history::RetransmitLog::Layout::kTerm;
  uint64_t prime =
      prime_lap ? UINT64_MAX
                : std::max<uint64_t>(spec.prime_datagrams, spec.prime_retransmit_ring ? primed.slots() : 0) + 256;
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
      if (agent.publish(m, now) != feed::PublishResult::kOk)
        return me.fail("a message was refused by the publisher while priming: a bug");
      agent.flush(now);
      ++published;
    }
    if ((++prime_iter & 63) == 0 || published >= slowest + lead) {
      if (prime == UINT64_MAX && primed.oldest() > 1)
        prime = std::max<uint64_t>(pcnt.datagrams_sent.get(), spec.prime_datagrams) + 256;
      agent.poll_control(now);
      me.progress.store(published, std::memory_order_relaxed);
      if (published >= slowest + lead) sleep_ns(20 * kNsPerUs);
    }
  }
  const uint64_t t0 = monotonic_ns() + kNsPerMs;
  b.t0.store(t0, std::memory_order_release);
  const uint64_t warm_end = t0 + spec.window.warmup_ns;
  while (monotonic_ns() < t0) {
  }

  struct Mark {
    uint64_t messages, datagrams, bytes, cpu, time, control_ns, newest, control_frames, control_polls;
    UsageMark use;
  };
  // The window marks, taken from the loop's hook as the clock passes them.
  struct Hooks {
    decltype(agent)& a;
    const DtlbCounter& dtlb;
    RunBoard& b;
    ProcBoard& me;
    uint64_t warm_end;
    std::optional<Mark> w0;
    uint32_t rounds = 0;
    // Publish lateness (control section, spinning publisher): how long after
    // its place on the timeline each message of the window was published,
    // taken as the round after its burst begins. What a stall of the
    // publishing thread (a long control poll) costs, seen from the publisher.
    Histogram* late = nullptr;
    uint64_t late_start = 0, late_already = 0, late_seen = 0, prev_round = 0;
    double ns_per_msg = 0;
    Mark mark(uint64_t now, uint64_t published) const {
      const auto& c = a.core().counters();
      const UsageMark use = usage_mark(&dtlb);
      return Mark{published, c.datagrams_sent.get(), c.bytes_sent.get(), use.cpu_ns, now,
                  a.control_time_ns(), a.core().ring().newest(), control_frames_in(a), a.control_polls(), use};
    }
    bool on_round(uint64_t now, uint64_t published) noexcept {
      if (!w0 && now >= warm_end) {
        w0 = mark(now, published);
        // From here the longest control poll is the window's (connects and priming before it).
        a.control().mutable_counters().longest_poll_ns.set(0);
        late_seen = published;
      }
      if (late && w0) {
        // The previous round's burst published late_seen .. published - 1.
        for (uint64_t k = late_seen; k < published && k < late_seen + 256; ++k) {
          const auto due = late_start + static_cast<uint64_t>(static_cast<double>(k - late_already) * ns_per_msg);
          late->record(prev_round > due ? prev_round - due : 0);
        }
        late_seen = published;
      }
      prev_round = now;
      if ((++rounds & 63) == 0) me.progress.store(published, std::memory_order_relaxed);
      return !b.stopping();
    }
  } hooks{agent, dtlb, b, me, warm_end, std::nullopt};
  feed::Pace pace;
  pace.rate = spec.rate;
  pace.start_ns = t0;
  pace.end_ns = warm_end + spec.window.duration_ns;
  pace.already = published;
  pace.idle = spec.pub_idle;
  pace.burst_ns = spec.burst_ns;
  if (spec.control_figures && spec.pub_idle == IdleMode::kSpin && spec.rate > 0) {
    me.latency.reset();
    hooks.late = &me.latency;  // the publisher's board has no delivery latency of its own
    hooks.late_start = t0;
    hooks.late_already = published;
    hooks.ns_per_msg = 1e9 / spec.rate;
  }
  const feed::PaceResult pr = feed::run_paced(agent, src, pace, hooks);
  if (pr.refused != feed::PublishResult::kOk) return me.fail("a message was refused by the publisher: a bug");
  published = pr.published;
  const Mark w1 = hooks.mark(pr.end_ns, published);
  record_publisher_control(agent, b.pub_control);
  if (hooks.w0) {
    b.pub_control.frames_window = w1.control_frames - hooks.w0->control_frames;
    b.pub_control.polls_window = w1.control_polls - hooks.w0->control_polls;
    const Mark& w0 = *hooks.w0;
    me.window_messages = w1.messages - w0.messages;
    me.window_datagrams = w1.datagrams - w0.datagrams;
    me.window_bytes = w1.bytes - w0.bytes;
    me.window_cpu_ns = w1.cpu - w0.cpu;
    me.window_ns = w1.time - w0.time;
    me.window_control_ns = w1.control_ns - w0.control_ns;
    me.usage = Usage::between(w0.use, w1.use);
    me.usage.wall_ns = me.window_ns;  // the window's own clock, as for the rates
    me.usage.cpu_ns = me.window_cpu_ns;
    // The pages the window's slot writes entered, from the slots themselves
    // (their real addresses: alignment and slot size as they are), over the
    // window's datagrams the ring still holds. Off the measured path.
    const history::RetransmitLog& ring = agent.core().ring();
    const uint64_t lap_start = ring.layout() == history::RetransmitLog::Layout::kTerm ? ring.oldest()
                               : w1.newest >= ring.slots() ? w1.newest - ring.slots() + 1 : 1;
    me.ring_slot_bytes = ring.slot_size();
    me.ring_page_bytes = mapping_page_size(ring.memory());
    PageSweep p4(4096), pk(std::max<uint64_t>(me.ring_page_bytes, 4096));
    for (uint64_t seq = std::max({w0.newest + 1, lap_start, ring.oldest()}); seq <= w1.newest && seq != 0; ++seq) {
      const auto d = ring.get(seq);
      if (d.empty()) continue;
      const auto slot = reinterpret_cast<uintptr_t>(d.data()) - history::RetransmitLog::kRecordHeader;
      p4.add(slot, history::RetransmitLog::kRecordHeader + d.size());
      pk.add(slot, history::RetransmitLog::kRecordHeader + d.size());
      ++me.ring_swept;
    }
    me.ring_pages_4k = p4.pages();
    me.ring_pages_kernel = pk.pages();
  }
  me.total = published;
  me.progress.store(published, std::memory_order_relaxed);

  // End the session, then serve recovery until every subscriber has left.
  uint64_t t_end = monotonic_ns();
  while (!agent.end_session(t_end) && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  agent.linger(b.deadline.load(std::memory_order_relaxed), 100 * kNsPerMs, 200 * kNsPerUs,
               [&] { return b.stopping(); });
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
  void on_reset(uint64_t) noexcept {}
};

template <class Medium>
int bench_subscriber(const Settings& s, Medium& medium, const RunSpec& spec, RunBoard& b, ProcBoard& me) {
  feed::SubscriberConfig sc = subscriber_config(s);
  sc.maintain_books = spec.books;
  sc.verify_checksums = spec.books;
  auto h = std::make_unique<BenchHandler>();
  h->per_datagram = spec.sample_per_datagram;
  feed::SubscriberAgent<Medium, BenchHandler> agent(medium, sc, *h, nullptr, {spec.control_poll_ns, spec.sub_idle});
  const DtlbCounter dtlb;
  std::memcpy(me.perf_why, dtlb.why(), std::min(sizeof me.perf_why, std::strlen(dtlb.why()) + 1));
  const auto& sub = agent.subscriber();
  agent.start();

  const uint64_t subscribe_by = monotonic_ns() + 15 * kNsPerSec;
  while (!sub.subscribed()) {
    const uint64_t now = monotonic_ns();
    if (b.stopping()) return me.fail("aborted before the start");
    if (sub.subscribe_refused()) return me.fail("subscription refused: " + sub.last_error());
    if (now > subscribe_by) return me.fail("no subscription acknowledgement within 15 s");
    // The data path too: a medium may learn where the control plane is from
    // it (UDP: the publisher's announcement on the group).
    agent.do_work(now);
    agent.poll_control(now);
    sleep_ns(kNsPerMs);
  }
  me.finish(ProcState::kReady);
  if (!b.await_go([&](uint64_t now) {
        agent.do_work(now);
        agent.poll_control(now);
      }))
    return me.fail("aborted before the start");
  // Nothing is sampled until the publisher has primed and announced t0.
  h->lo = h->hi = UINT64_MAX;
  struct Hooks {
    BenchHandler& h;
    RunBoard& b;
    ProcBoard& me;
    const RunSpec& spec;
    uint64_t deadline;
    const DtlbCounter& dtlb;
    std::string_view outcome = "ok";
    std::optional<UsageMark> u0, u1;  // the window's edges, to a control round
    bool on_control_round(uint64_t now) noexcept {
      me.progress.store(h.delivered, std::memory_order_relaxed);
      if (h.lo != UINT64_MAX && now >= h.lo && !u0) u0 = usage_mark(&dtlb);
      if (u0 && !u1 && now >= h.hi) u1 = usage_mark(&dtlb);
      if (h.lo == UINT64_MAX) {
        if (const uint64_t t0 = b.t0.load(std::memory_order_acquire)) {
          h.lo = t0 + spec.window.warmup_ns;
          h.hi = h.lo + spec.window.duration_ns;
        }
      }
      if (now > deadline) {
        outcome = "timed out";
        return false;
      }
      if (b.stopping()) {
        outcome = "aborted";
        return false;
      }
      return true;
    }
  } hooks{*h, b, me, spec, b.deadline.load(), dtlb, "ok", std::nullopt, std::nullopt};
  agent.run(hooks);
  if (hooks.u0) me.usage = Usage::between(*hooks.u0, hooks.u1 ? *hooks.u1 : usage_mark(&dtlb));
  const auto& c = sub.counters();
  me.total = h->delivered;
  me.window_messages = h->rx_window;
  me.window_ns = spec.window.duration_ns;
  if constexpr (requires { medium.lost_datagrams(); }) me.lapped = medium.lost_datagrams();
  if constexpr (requires { medium.counters().kernel_drops.get(); }) {
    // A medium whose losses are the kernel's (UDP) reports them as such, not as laps.
    me.kernel_drops = medium.counters().kernel_drops.get();
    me.lapped -= std::min(me.lapped, me.kernel_drops);
  }
  me.gaps = c.gaps.get();
  me.recovered = c.datagrams_recovered.get();
  me.retransmit_requests = c.retransmit_requests.get();
  me.snapshots = c.snapshots_requested.get();
  me.malformed = c.malformed.get();
  me.duplicates = c.duplicates.get();
  me.latency = h->latency;
  me.progress.store(h->delivered, std::memory_order_relaxed);
  me.set_outcome(hooks.outcome);
  me.finish(hooks.outcome == "ok" ? ProcState::kDone : ProcState::kFailed);
  return hooks.outcome == "ok" ? 0 : 1;
}

// -------------------------------------------------------------------- relay --

// A relay between the publisher and the last subscriber (RunSpec::relay):
// runtime::relay_lane's round (the upstream agent, the forwarder, the
// downstream agent) on one thread, spinning as a subscriber does. Its
// window is the publisher's: the CPU time and the messages forwarded
// between the timeline's warm-up end and the window's end, to a round.
template <class Up, class Down>
int bench_relay(const Settings& up_s, const Settings& down_s, Up& up, Down& down, const RunSpec& spec, RunBoard& b,
                ProcBoard& me) {
  using Agent = feed::PublisherAgent<Down>;
  Agent agent(down, runtime::relay_engine(publisher_config(down_s, down_s.pub.session), down_s.pub.session), control_config(down_s),
              {}, {spec.control_poll_ns});
  runtime::RelayCounters rc;
  runtime::Forwarder<Agent> fwd(agent, rc);
  feed::SubscriberConfig sc = subscriber_config(up_s);
  sc.maintain_books = spec.books;
  sc.verify_checksums = spec.books;
  feed::SubscriberAgent<Up, runtime::Forwarder<Agent>> sub(up, sc, fwd, nullptr, {spec.control_poll_ns, spec.sub_idle});
  fwd.watch(sub.subscriber());
  sub.start();
  auto round = [&](uint64_t now) {
    const size_t n = sub.do_work(now);
    fwd.end_round(now);
    agent.do_work(now);
    return n;
  };
  const uint64_t subscribe_by = monotonic_ns() + 15 * kNsPerSec;
  while (!sub.subscriber().subscribed()) {
    const uint64_t now = monotonic_ns();
    if (b.stopping()) return me.fail("aborted before the start");
    if (now > subscribe_by) return me.fail("no subscription acknowledgement upstream within 15 s");
    round(now);
    sub.poll_control(now);
    agent.poll_control(now);
    sleep_ns(kNsPerMs);
  }
  me.finish(ProcState::kReady);
  if (!b.await_go([&](uint64_t now) {
        round(now);
        agent.poll_control(now);
      }))
    return me.fail("aborted before the start");
  const uint64_t deadline = b.deadline.load();
  uint64_t lo = 0, hi = 0, m0 = 0, m1 = 0;
  std::optional<UsageMark> u0, u1;
  std::string_view outcome = "ok";
  for (uint32_t i = 0; !sub.finished(); ++i) {
    const uint64_t now = monotonic_ns();
    const size_t n = round(now);
    if (fwd.failed()) break;
    if ((i & 63) == 0) {
      me.progress.store(rc.messages.get(), std::memory_order_relaxed);
      if (!lo) {
        if (const uint64_t t0 = b.t0.load(std::memory_order_acquire)) {
          lo = t0 + spec.window.warmup_ns;
          hi = lo + spec.window.duration_ns;
        }
      }
      if (lo && !u0 && now >= lo) u0 = usage_mark(nullptr), m0 = rc.messages.get();
      if (u0 && !u1 && now >= hi) u1 = usage_mark(nullptr), m1 = rc.messages.get();
      if (now > deadline) {
        outcome = "timed out";
        break;
      }
      if (b.stopping()) {
        outcome = "aborted";
        break;
      }
    }
    sub.idle(n);
  }
  if (fwd.failed()) return me.fail(fwd.failure_text());
  // The downstream session ends where the upstream's did; its subscriber's
  // last requests are served until it leaves.
  uint64_t now = monotonic_ns();
  while (!agent.end_session(now) && now < deadline) now = monotonic_ns();
  agent.linger(deadline, 300 * kNsPerMs, 200 * kNsPerUs, [&] { return b.stopping(); });
  if (u0) {
    const UsageMark end = u1 ? *u1 : usage_mark(nullptr);
    me.usage = Usage::between(*u0, end);
    me.window_cpu_ns = end.cpu_ns - u0->cpu_ns;
    me.window_ns = end.wall_ns - u0->wall_ns;
    me.window_messages = (u1 ? m1 : rc.messages.get()) - m0;
  }
  me.total = rc.messages.get();
  me.gaps = sub.subscriber().counters().gaps.get();
  me.recovered = sub.subscriber().counters().datagrams_recovered.get();
  me.malformed = rc.sequence_mismatches.get() + rc.instrument_mismatches.get();  // the relay's own figure: numbers changed
  me.progress.store(me.total, std::memory_order_relaxed);
  me.set_outcome(outcome);
  me.finish(outcome == "ok" ? ProcState::kDone : ProcState::kFailed);
  return outcome == "ok" ? 0 : 1;
}

}  // namespace mdcast::app::bench
