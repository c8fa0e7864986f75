// `mdcast publish` and `mdcast subscribe`: the library's agents over the
// medium the settings name (registry.hpp), with a counters file, a result
// file and a clean end on SIGINT/SIGTERM. The duty loops are the library's
// (feed::run_paced, SubscriberAgent::run); this file only reports.
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
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "print.hpp"
#include "registry.hpp"
#include "exit_codes.hpp"
#include "result.hpp"
#include "settings_values.hpp"

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

uint64_t pick_session(const Settings& s) { return s.pub.session ? s.pub.session : feed::new_session_id(); }

book::GeneratorConfig generator_config(const Settings& s) {
  book::GeneratorConfig gc;
  gc.seed = s.pub.seed;
  gc.instruments = s.pub.instruments;
  gc.max_orders = std::min<uint32_t>(120, s.feed.max_levels);
  gc.target_orders = std::min<uint32_t>(40, gc.max_orders);
  return gc;
}

namespace {

// ------------------------------------------------------------------ publish --

struct GeneratorSource {
  book::Generator gen;
  bool next(wire::Message& m) noexcept {
    gen.next(m);
    return true;
  }
};

template <class Medium>
int publish_loop(Settings& s, Medium& medium, uint64_t session, std::string_view medium_name) {
  MirroredCounters medium_counters(medium.counter_groups());
  std::vector<stats::Section> sections{
      {"pub", feed::PublisherCounters::kInfo}, {"ctl", feed::ControlCounters::kInfo}, {"app", AppPubCounters::kInfo}};
  medium_counters.add_sections(sections);
  stats::CountersFile cf("publisher", s.feed.name, std::string(medium_name), sections);
  auto* app = cf.section<AppPubCounters>(2);
  feed::PublisherAgent<Medium> agent(
      medium, publisher_config(s, session), control_config(s),
      {cf.section<feed::PublisherCounters>(0), cf.section<feed::ControlCounters>(1)}, {s.feed.control_poll_ns});
  GeneratorSource src{book::Generator(generator_config(s))};
  app->target_rate.set(static_cast<uint64_t>(s.pub.rate));
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast publish: {}; session {:016x}; {:.0f} msg/s over {} instruments for {}\n", medium.describe(),
             agent.core().session(), s.pub.rate, s.pub.instruments, format_duration(s.pub.duration_ns));

  auto refresh = [&](uint64_t now, uint64_t t0) {
    cf.touch(now);
    medium_counters.refresh(cf);
    app->generated.set(src.gen.produced());
    app->control_clients.set(agent.clients());
    app->control_time_us.set(agent.control_time_ns() / kNsPerUs);
    app->elapsed_ms.set((now - t0) / kNsPerMs);
  };

  if (s.pub.wait_subscribers) {
    // Subscribers that are there from the first datagram need no recovery:
    // the demo and tests start this way so a clean run shows zero gaps.
    const uint64_t give_up = monotonic_ns() + 60 * kNsPerSec;
    while (!g_stop && agent.subscribed_clients() < s.pub.wait_subscribers) {
      const uint64_t now = monotonic_ns();
      if (now > give_up)
        fail("only {} of {} subscribers arrived within 60 s", agent.subscribed_clients(), s.pub.wait_subscribers);
      agent.do_work(now);
      refresh(now, now);
      sleep_ns(kNsPerMs);
    }
  }
  const uint64_t t0 = monotonic_ns();
  feed::Pace pace;
  pace.rate = s.pub.rate;
  pace.start_ns = t0;
  pace.end_ns = t0 + s.pub.duration_ns;
  pace.idle = s.feed.idle;
  uint64_t last_refresh = 0;
  struct Hooks {
    decltype(refresh)& r;
    uint64_t t0;
    uint64_t& last;
    bool on_round(uint64_t now, uint64_t) noexcept {
      if (now - last >= 100 * kNsPerMs) {
        last = now;
        r(now, t0);
      }
      return !g_stop;
    }
  } hooks{refresh, t0, last_refresh};
  const feed::PaceResult pr = feed::run_paced(agent, src, pace, hooks);
  if (pr.refused != feed::PublishResult::kOk)
    fail("generator message refused by the publisher ({}): a bug; please report it",
         book::to_string(agent.core().last_reject()));
  const double seconds = static_cast<double>(pr.end_ns - t0) / 1e9;

  // End the session, then keep serving recovery until every subscriber has
  // gone (they leave once caught up) or the linger time is up.
  uint64_t t_end = monotonic_ns();
  while (!agent.end_session(t_end) && !g_stop && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  agent.linger(t_end + s.pub.linger_ns, 300 * kNsPerMs, 200 * kNsPerUs, [&] {
    refresh(monotonic_ns(), t0);
    return g_stop != 0;
  });
  refresh(monotonic_ns(), t0);
  cf.set_state(stats::ProcessState::kFinished);

  RunResult r;
  r.role = "publisher";
  r.name = s.feed.name;
  r.medium = medium_name;
  r.session = agent.core().session();
  r.last_sequence = agent.core().last_committed();
  r.seconds = seconds;
  r.messages = pr.published;
  dump_counters(agent.core().counters(), "pub.", r.counters);
  dump_counters(agent.control().counters(), "ctl.", r.counters);
  medium_counters.dump(r.counters);
  const auto& books = agent.core().books();
  for (uint32_t i = 0; i < books.max_instruments(); ++i)
    if (books.book(i).instrument_seq() > 0) r.books.push_back({i, books.book(i).instrument_seq(), books.book(i).checksum()});
  if (!s.pub.result.empty()) write_result(s.pub.result, r);
  fmt::print(stderr,
             "mdcast publish: {} messages in {} datagrams over {:.2f} s ({:.0f} msg/s); {} retransmit requests, {} "
             "snapshots served\n",
             pr.published, r.last_sequence, seconds, static_cast<double>(pr.published) / std::max(seconds, 1e-9),
             agent.control().counters().retransmit_requests.get(), agent.control().counters().snapshot_requests.get());
  if (!g_stop)
    if (const std::string why = rate_shortfall(r, s.pub.rate, pacing_name(s.pub.pacing)); !why.empty())
      fmt::print(stderr, "mdcast publish: {}\n", why);
  return g_stop ? exit_code::kInterrupted : exit_code::kOk;
}

// ---------------------------------------------------------------- subscribe --

struct AppHandler {
  Histogram latency;
  uint64_t delivered = 0;
  bool print = false;
  MessagePrinter printer;

  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    ++delivered;
    if (!d.recovered && d.receive_time_ns > d.send_time_ns) latency.record(d.receive_time_ns - d.send_time_ns);
    if (print) printer.print(m, d);
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    if (print && b && b->book(inst).instrument_seq() > 0)
      fmt::print("snapshot instrument={} seq={} orders={}\n", inst, b->book(inst).instrument_seq(),
                 b->book(inst).order_count());
  }
  void on_reset(uint64_t session) noexcept {
    if (print) fmt::print("session {:016x}: books reset\n", session);
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    fmt::print(stderr, "mdcast subscribe: {}{}{}\n", to_string(e), detail.empty() ? "" : ": ", detail);
  }
};

template <class Medium>
int subscribe_loop(Settings& s, Medium& medium, std::string_view medium_name) {
  MirroredCounters medium_counters(medium.counter_groups());
  std::vector<stats::Section> sections{{"sub", feed::SubscriberCounters::kInfo}, {"app", AppSubCounters::kInfo}};
  medium_counters.add_sections(sections);
  stats::CountersFile cf("subscriber", s.feed.name, std::string(medium_name), sections);
  auto* app = cf.section<AppSubCounters>(1);
  AppHandler h;
  h.print = s.sub.print;
  if (h.print) h.printer = MessagePrinter(s.feed.max_instruments);
  feed::SubscriberAgent<Medium, AppHandler> agent(medium, subscriber_config(s), h,
                                                  cf.section<feed::SubscriberCounters>(0),
                                                  {s.feed.control_poll_ns, s.feed.idle});
  const auto& sub = agent.subscriber();
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast subscribe: {}; instruments {}\n", medium.describe(),
             s.sub.all_instruments ? std::string("all") : fmt::format("{} listed", s.sub.instruments.size()));

  agent.start();
  const uint64_t t0 = monotonic_ns();
  uint64_t now = t0, last_stats = t0;
  std::string outcome = "ok";
  auto refresh = [&] {
    cf.touch(now);
    medium_counters.refresh(cf);
    app->lost.set(medium.lost_datagrams());
    app->latency_p50_ns.set(h.latency.percentile(50));
    app->latency_p99_ns.set(h.latency.percentile(99));
    app->latency_max_ns.set(h.latency.max());
  };
  struct Hooks {
    decltype(agent)& a;
    const Settings& s;
    uint64_t t0;
    uint64_t& now;
    uint64_t& last_stats;
    std::string& outcome;
    decltype(refresh)& update;
    bool on_control_round(uint64_t t) {
      now = t;
      if (now - last_stats > 250 * kNsPerMs) {
        last_stats = now;
        update();
      }
      return !subscriber_done(a, s, t0, now, outcome);
    }
  } hooks{agent, s, t0, now, last_stats, outcome, refresh};
  agent.run(hooks);
  now = monotonic_ns();
  refresh();
  cf.set_state(outcome == "ok" || outcome == "duration" ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  RunResult r;
  r.role = "subscriber";
  r.name = s.feed.name;
  r.medium = medium_name;
  r.outcome = g_stop ? "interrupted" : outcome;
  r.session = sub.session();
  r.last_sequence = sub.next_sequence() - 1;
  r.seconds = static_cast<double>(now - t0) / 1e9;
  r.messages = h.delivered;
  r.all_instruments = s.sub.all_instruments;
  dump_counters(sub.counters(), "sub.", r.counters);
  r.counters.emplace_back("app.lost", medium.lost_datagrams());
  medium_counters.dump(r.counters);
  r.latency = h.latency;
  if (const auto* b = sub.books())
    for (uint32_t i = 0; i < b->max_instruments(); ++i)
      if (sub.wants(i)) r.books.push_back({i, b->book(i).instrument_seq(), b->book(i).checksum()});
  if (!s.sub.result.empty()) write_result(s.sub.result, r);
  const auto& c = sub.counters();
  // Latency percentiles of no messages would read as zero latency: only where there were some.
  const std::string latency = h.latency.count() == 0 ? std::string()
                                                     : fmt::format("; latency p50 {} ns p99 {} ns", h.latency.percentile(50),
                                                                   h.latency.percentile(99));
  fmt::print(stderr, "mdcast subscribe: {} (session {:016x}): {} messages, {} gaps, {} datagrams recovered, {} snapshots{}\n",
             r.outcome, r.session, h.delivered, c.gaps.get(), c.datagrams_recovered.get(), c.snapshots_applied.get(),
             latency);
  if (outcome == "publisher-lost" && c.datagrams_received.get() == 0)
    fmt::print(stderr, "mdcast subscribe: nothing from a publisher in {:.1f} s on {}: is one publishing there?\n",
               static_cast<double>(now - t0) / 1e9, medium.describe());
  if (g_stop) return exit_code::kInterrupted;
  if (outcome == "ok" || outcome == "duration") return exit_code::kOk;
  // Refused (credentials, entitlements) or never heard: the setup is wrong;
  // a publisher that went away mid-feed lost the rest of it.
  if (outcome.rfind("error:", 0) == 0) return exit_code::kSetup;
  if (outcome == "publisher-lost" && c.datagrams_received.get() == 0) return exit_code::kSetup;
  return exit_code::kDataLost;
}

}  // namespace

int run_publish(Settings& s) {
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    const uint64_t session = pick_session(s);
    auto medium = E::publisher(s, session);
    return publish_loop(s, *medium, session, E::kName);
  });
}

int run_subscribe(Settings& s) {
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    // At once, not after the wait: a subscriber with no publisher would
    // otherwise say nothing for subscriber.wait.
    fmt::print(stderr, "mdcast subscribe: waiting up to {} for {}\n", format_duration(s.sub.wait_ns), E::waiting_for(s));
    auto medium = E::subscriber(s);
    // Always through the fault injector: one instantiation, and a branch per
    // poll (not per datagram) when no fault is configured.
    media::fault::FaultyMedium<typename E::Subscriber> faulty(*medium, injected_faults(s, static_cast<uint64_t>(::getpid())));
    return subscribe_loop(s, faulty, E::kName);
  });
}

}  // namespace mdcast::app
