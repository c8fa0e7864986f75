#include "runners.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "app_counters.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "result.hpp"
#include "shm_driver.hpp"
#include "verbs_driver.hpp"

namespace mdcast::app {

volatile std::sig_atomic_t g_stop = 0;

void install_signal_handlers() {
  set_low_timer_slack();
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

namespace {

book::BookConfig book_config(const Settings& s) { return {s.feed.max_instruments, s.feed.max_orders, s.feed.max_levels}; }

template <class Counters>
std::vector<std::pair<std::string, uint64_t>> dump(const Counters& c, const std::string& prefix) {
  std::vector<std::pair<std::string, uint64_t>> v;
  for (size_t i = 0; i < Counters::kCount; ++i) v.emplace_back(prefix + std::string(Counters::kInfo[i].name), c.at(i).get());
  return v;
}

MediumKind resolve_medium(MediumKind m) {
  // On one host shared memory beats any network medium; verbs and UDP are for
  // reaching other hosts and are chosen explicitly.
  return m == MediumKind::kAuto ? MediumKind::kShm : m;
}

// ------------------------------------------------------------------ publish --

template <class Driver>
int publish_loop(Settings& s, Driver& drv, uint32_t session, const char* medium) {
  feed::PublisherConfig pc;
  pc.channel = s.feed.channel;
  pc.session = session;
  pc.sender_id = s.pub.sender_id;
  pc.max_datagram = s.pub.max_datagram ? std::min(s.pub.max_datagram, drv.max_datagram()) : drv.max_datagram();
  pc.flush_interval_ns = s.pub.flush_interval_ns;
  pc.heartbeat_interval_ns = s.pub.heartbeat_interval_ns;
  pc.retransmit_bytes = s.pub.retransmit_bytes;
  pc.crc = s.pub.crc;
  pc.pacing.mode = s.pub.pacing;
  pc.pacing.rate = s.pub.pacing_rate;
  pc.pacing.min_rate = s.pub.pacing_min_rate;
  pc.books = book_config(s);
  pc = drv.configure(pc);
  if (s.pub.instruments > s.feed.max_instruments)
    fail("publisher.instruments {} exceeds feed.max_instruments {}", s.pub.instruments, s.feed.max_instruments);
  feed::ControlConfig cc;
  cc.entitlements = s.pub.entitlements;

  stats::CountersFile cf("publisher", s.feed.name, medium,
                         {{"pub", feed::PublisherCounters::kInfo}, {"ctl", feed::ControlCounters::kInfo}, {"app", AppPubCounters::kInfo}});
  auto* app = cf.section<AppPubCounters>(2);
  feed::Publisher<typename Driver::Sink> pub(pc, drv.sink(), drv.ring_memory(), cf.section<feed::PublisherCounters>(0));
  feed::ControlService svc(cc, pub.core(), cf.section<feed::ControlCounters>(1));
  book::GeneratorConfig gc;
  gc.seed = s.pub.seed;
  gc.instruments = s.pub.instruments;
  gc.max_orders = std::min<uint32_t>(120, s.feed.max_levels);
  gc.target_orders = std::min<uint32_t>(40, gc.max_orders);
  book::Generator gen(gc);
  app->target_rate.set(static_cast<uint64_t>(s.pub.rate));
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast publish: {}; session {}; {:.0f} msg/s over {} instruments for {}\n", drv.describe(),
             pub.core().session(), s.pub.rate, s.pub.instruments, format_duration(s.pub.duration_ns));

  if (s.pub.wait_subscribers) {
    // Subscribers that are there from the first datagram need no recovery:
    // the demo and tests start this way so a clean run shows zero gaps.
    const uint64_t give_up = monotonic_ns() + 60 * kNsPerSec;
    while (!g_stop && svc.subscribed_clients() < s.pub.wait_subscribers) {
      const uint64_t now = monotonic_ns();
      if (now > give_up) fail("only {} of {} subscribers arrived within 60 s", svc.subscribed_clients(), s.pub.wait_subscribers);
      drv.poll_control(svc, now);
      pub.poll(now);
      app->control_clients.set(drv.clients());
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);
    }
  }
  IdleStrategy idle(s.feed.idle);
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = t0 + s.pub.duration_ns;
  const double per_ns = s.pub.rate / 1e9;
  wire::Message m;
  bool pending = false;
  uint64_t published = 0;
  uint64_t now = t0, last_control = 0;
  while (!g_stop) {
    now = monotonic_ns();
    if (now >= end) break;
    const auto due = static_cast<uint64_t>(static_cast<double>(now - t0) * per_ns) + 1;
    bool worked = false;
    for (int burst = 0; published < due && burst < 256; ++burst) {
      if (!pending) {
        gen.next(m);
        pending = true;
      }
      const feed::PublishResult r = pub.publish(m, now);
      if (r == feed::PublishResult::kBackPressured) break;
      if (r != feed::PublishResult::kOk)
        fail("generator message refused by the publisher ({}): a bug; please report it", book::to_string(pub.core().last_reject()));
      pending = false;
      ++published;
      worked = true;
    }
    pub.poll(now);
    // The control plane costs a system call per poll (1-2 us here): on a
    // timer, not per idle round, so it stays off the latency path.
    if (now - last_control >= s.feed.control_poll_ns) {
      last_control = now;
      drv.poll_control(svc, now);
      svc.tick(now);
      cf.touch(now);
      app->generated.set(gen.produced());
      app->control_clients.set(drv.clients());
      app->elapsed_ms.set((now - t0) / kNsPerMs);
    }
    if (worked) {
      idle.reset();
    } else if (s.feed.idle != IdleMode::kSpin) {
      // Nothing due: sleep until the next message is due or the open
      // datagram must leave, whichever comes first (never past it).
      const auto next_due = t0 + static_cast<uint64_t>(static_cast<double>(published) / per_ns);
      uint64_t wake = next_due;
      if (pub.core().has_open()) wake = std::min(wake, now + s.pub.flush_interval_ns);
      if (wake > now + 30 * kNsPerUs) {
        const uint64_t d = std::min<uint64_t>(wake - now - 20 * kNsPerUs, IdleStrategy::kMaxParkNs);
        timespec ts{0, static_cast<long>(d)};
        nanosleep(&ts, nullptr);
      } else {
        idle.idle();
      }
    } else {
      idle.idle();
    }
  }
  const double seconds = static_cast<double>(now - t0) / 1e9;

  // End the session, then keep serving recovery until every subscriber has
  // gone (they leave once caught up) or the linger time is up.
  uint64_t t_end = monotonic_ns();
  while (!pub.end_session(t_end) && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  const uint64_t linger_end = t_end + s.pub.linger_ns;
  uint64_t empty_since = 0;
  while (!g_stop) {
    now = monotonic_ns();
    if (now >= linger_end) break;
    pub.poll(now);
    drv.poll_control(svc, now);
    svc.tick(now);
    cf.touch(now);
    app->control_clients.set(drv.clients());
    if (drv.clients() == 0) {
      if (!empty_since) empty_since = now;
      if (now - empty_since > 300 * kNsPerMs) break;
    } else {
      empty_since = 0;
    }
    timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
  }
  cf.set_state(stats::ProcessState::kFinished);

  RunResult r;
  r.role = "publisher";
  r.name = s.feed.name;
  r.medium = medium;
  r.session = pub.core().session();
  r.last_sequence = pub.core().last_committed();
  r.seconds = seconds;
  r.messages = published;
  r.counters = dump(pub.core().counters(), "pub.");
  for (auto& kv : dump(svc.counters(), "ctl.")) r.counters.push_back(kv);
  const auto& books = pub.core().books();
  for (uint32_t i = 0; i < books.max_instruments(); ++i)
    if (books.book(i).instrument_seq() > 0) r.books.push_back({i, books.book(i).instrument_seq(), books.book(i).checksum()});
  if (!s.pub.result.empty()) write_result(s.pub.result, r);
  fmt::print(stderr, "mdcast publish: {} messages in {} datagrams over {:.2f} s ({:.0f} msg/s); {} retransmit requests, {} snapshots served\n",
             published, r.last_sequence, seconds, static_cast<double>(published) / std::max(seconds, 1e-9),
             svc.counters().retransmit_requests.get(), svc.counters().snapshot_requests.get());
  return g_stop ? 130 : 0;
}

// ---------------------------------------------------------------- subscribe --

struct AppHandler {
  Histogram latency;
  uint64_t delivered = 0;
  bool print = false;
  std::string log;

  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    ++delivered;
    if (!d.recovered && d.receive_time_ns > d.send_time_ns) latency.record(d.receive_time_ns - d.send_time_ns);
    if (print) print_message(m, d);
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    if (print && b && b->book(inst).instrument_seq() > 0)
      fmt::print("snapshot instrument={} seq={} orders={}\n", inst, b->book(inst).instrument_seq(), b->book(inst).order_count());
  }
  void on_reset(uint32_t session) noexcept {
    if (print) fmt::print("session {}: books reset\n", session);
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    const char* what = e == feed::SubscriberEvent::kPublisherSilent ? "publisher silent"
                       : e == feed::SubscriberEvent::kPublisherBack  ? "publisher back"
                       : e == feed::SubscriberEvent::kSessionEnded   ? "session ended"
                       : e == feed::SubscriberEvent::kSessionChanged ? "new publisher session"
                                                                     : "control error";
    fmt::print(stderr, "mdcast subscribe: {}{}{}\n", what, detail.empty() ? "" : ": ", detail);
  }
  static void print_message(const wire::Message& m, const feed::Delivery& d) {
    switch (m.type) {
      case wire::MsgType::kAddOrder:
        fmt::print("{} seq={} inst={}#{} add id={} {} {}@{}\n", d.sequence, d.sequence, m.instrument, m.instrument_seq,
                   m.add.order_id, m.add.side == wire::Side::kBuy ? "buy" : "sell", m.add.quantity, m.add.price);
        break;
      case wire::MsgType::kModifyOrder:
        fmt::print("{} inst={}#{} modify id={} {}@{}\n", d.sequence, m.instrument, m.instrument_seq, m.modify.order_id,
                   m.modify.quantity, m.modify.price);
        break;
      case wire::MsgType::kDeleteOrder:
        fmt::print("{} inst={}#{} delete id={}\n", d.sequence, m.instrument, m.instrument_seq, m.del.order_id);
        break;
      case wire::MsgType::kExecuteOrder:
        fmt::print("{} inst={}#{} execute id={} {}@{} trade={}\n", d.sequence, m.instrument, m.instrument_seq,
                   m.execute.order_id, m.execute.quantity, m.execute.price, m.execute.trade_id);
        break;
      default:
        fmt::print("{} inst={}#{} {}\n", d.sequence, m.instrument, m.instrument_seq, wire::to_string(m.type));
    }
  }
};

template <class Driver>
int subscribe_loop(Settings& s, Driver& drv, const char* medium) {
  feed::SubscriberConfig sc;
  sc.channel = s.feed.channel;
  sc.sender_id = s.sub.sender_id;
  sc.credential = s.sub.credential;
  sc.all_instruments = s.sub.all_instruments;
  sc.instruments = s.sub.instruments;
  sc.window_bytes = s.sub.window_bytes;
  sc.books = book_config(s);
  sc.verify_checksums = s.sub.verify;
  sc.capacity = s.sub.capacity;
  sc.publisher_timeout_ns = s.sub.publisher_timeout_ns;
  sc.request_timeout_ns = 100 * kNsPerMs;
  sc.max_datagram = wire::kMaxDatagram;
  sc = drv.configure(sc);

  stats::CountersFile cf("subscriber", s.feed.name, medium,
                         {{"sub", feed::SubscriberCounters::kInfo}, {"app", AppSubCounters::kInfo}});
  auto* app = cf.section<AppSubCounters>(1);
  AppHandler h;
  h.print = s.sub.print;
  feed::Subscriber<AppHandler> sub(sc, h, &drv.control(), cf.section<feed::SubscriberCounters>(0));
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast subscribe: {}; instruments {}\n", drv.describe(),
             s.sub.all_instruments ? std::string("all") : fmt::format("{} listed", s.sub.instruments.size()));

  IdleStrategy idle(s.feed.idle);
  drv.start();
  const uint64_t t0 = monotonic_ns();
  uint64_t last_data = t0, last_stats = t0, now = t0, last_control = 0;
  uint32_t idle_rounds = 0;
  std::string outcome = "ok";
  while (!g_stop) {
    const size_t n = drv.poll_data([&](std::span<const std::byte> d, uint64_t rx) { sub.on_datagram(d, feed::Rail::kA, rx); }, 64);
    now = monotonic_ns();
    if (n) last_data = now;
    if (now - last_control >= s.feed.control_poll_ns) {  // a system call: on a timer, off the latency path
      last_control = now;
      drv.poll_control(sub, now);
      sub.poll(now);
      if (now - last_stats > 250 * kNsPerMs) {
        last_stats = now;
        cf.touch(now);
        app->lapped.set(drv.lapped());
        app->reattached.set(drv.counters().reattached);
        app->injected_losses.set(drv.counters().injected_losses);
        app->latency_p50_ns.set(h.latency.percentile(50));
        app->latency_p99_ns.set(h.latency.percentile(99));
        app->latency_max_ns.set(h.latency.max());
      }
      if (sub.session_ended() && sub.caught_up()) break;
      if (s.sub.duration_ns && now - t0 >= s.sub.duration_ns) {
        outcome = "duration";
        break;
      }
      if (sub.subscribe_refused()) {
        outcome = "error: " + sub.last_error();
        break;
      }
      if (now - last_data > s.sub.give_up_ns) {
        outcome = "publisher-lost";
        break;
      }
    }
    if (n) {
      idle.reset();
      idle_rounds = 0;
    } else if (!(s.feed.idle == IdleMode::kBlock && ++idle_rounds > 64 && drv.block(kNsPerMs))) {
      idle.idle();
    }
  }
  cf.set_state(outcome == "ok" || outcome == "duration" ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  RunResult r;
  r.role = "subscriber";
  r.name = s.feed.name;
  r.medium = medium;
  r.outcome = g_stop ? "interrupted" : outcome;
  r.session = sub.session();
  r.last_sequence = sub.next_sequence() - 1;
  r.seconds = static_cast<double>(now - t0) / 1e9;
  r.messages = h.delivered;
  r.all_instruments = s.sub.all_instruments;
  r.counters = dump(sub.counters(), "sub.");
  r.counters.emplace_back("app.lapped", drv.lapped());
  r.counters.emplace_back("app.reattached", drv.counters().reattached);
  r.counters.emplace_back("app.injected_losses", drv.counters().injected_losses);
  r.latency = h.latency;
  if (const auto* b = sub.books())
    for (uint32_t i = 0; i < b->max_instruments(); ++i)
      if (sub.wants(i)) r.books.push_back({i, b->book(i).instrument_seq(), b->book(i).checksum()});
  if (!s.sub.result.empty()) write_result(s.sub.result, r);
  const auto& c = sub.counters();
  fmt::print(stderr,
             "mdcast subscribe: {} ({}): {} messages, {} gaps, {} datagrams recovered, {} snapshots; latency p50 {} ns p99 {} ns\n",
             r.outcome, r.session, h.delivered, c.gaps.get(), c.datagrams_recovered.get(), c.snapshots_applied.get(),
             h.latency.percentile(50), h.latency.percentile(99));
  if (g_stop) return 130;
  return outcome == "ok" || outcome == "duration" ? 0 : outcome == "publisher-lost" ? 3 : 1;
}

uint32_t pick_session(const Settings& s) {
  if (s.pub.session) return s.pub.session;
  const auto ms = static_cast<uint32_t>(realtime_ns() / kNsPerMs);
  return ms ? ms : 1;
}

}  // namespace

int run_publish(Settings& s) {
  const MediumKind m = resolve_medium(s.feed.medium);
  const uint32_t session = pick_session(s);
  switch (m) {
    case MediumKind::kShm: {
      ShmPublisherDriver drv(s, session);
      return publish_loop(s, drv, session, "shm");
    }
#ifdef MDCAST_HAVE_VERBS
    case MediumKind::kVerbs: {
      VerbsPublisherDriver drv(s, session);
      return publish_loop(s, drv, session, "verbs");
    }
#endif
    default:
      fail("medium '{}' is not available in this build", to_string(m));
  }
}

int run_subscribe(Settings& s) {
  const MediumKind m = resolve_medium(s.feed.medium);
  switch (m) {
    case MediumKind::kShm: {
      ShmSubscriberDriver drv(s, static_cast<uint64_t>(::getpid()));
      return subscribe_loop(s, drv, "shm");
    }
#ifdef MDCAST_HAVE_VERBS
    case MediumKind::kVerbs: {
      VerbsSubscriberDriver drv(s, static_cast<uint64_t>(::getpid()));
      return subscribe_loop(s, drv, "verbs");
    }
#endif
    default:
      fail("medium '{}' is not available in this build", to_string(m));
  }
}

}  // namespace mdcast::app
