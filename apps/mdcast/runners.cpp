// `mdcast subscribe`: the library's agents over the
// medium the settings name (mdcast/settings/media.hpp), with a counters file, a result
// file and a clean end on SIGINT/SIGTERM. The duty loops are the library's
// (feed::run_paced, SubscriberAgent::run); this file only reports.
#include "runners.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "app_counters.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/feed/message_text.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/core/affinity.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/text.hpp"
#include "output.hpp"
#include "settings.hpp"
#include "exit_codes.hpp"

namespace mdcast::app {

using stats::format_latency;
using stats::grouped;

StopFlag g_stop;

void install_signal_handlers() {
  set_low_timer_slack();
  stop_on_signals(g_stop);
  signal(SIGPIPE, SIG_IGN);
}

namespace {

// ---------------------------------------------------------------- subscribe --

// What every channel's handler adds to: one subscriber's deliveries.
struct AppTotals {
  Histogram latency;
  uint64_t delivered = 0;
  bool print = false;
  bool progress = false;  // a progress line is on stderr: an event line clears it first
  feed::MessageText text;
  std::string line;  // the last message's, its capacity kept
};

// One per channel (events name their channel when there are several).
struct AppHandler {
  AppTotals* totals = nullptr;
  std::string channel;  // "channel 3: " or ""
  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    AppTotals& t = *totals;
    ++t.delivered;
    if (!d.recovered && d.receive_time_ns > d.send_time_ns) t.latency.record(d.receive_time_ns - d.send_time_ns);
    if (!t.print) return;
    t.line.clear();
    t.text.append(t.line, m, d.sequence, d.recovered);
    print_noexcept(stdout, [&] { fmt::print("{}", t.line); });
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    if (totals->print && b && b->book(inst).instrument_seq() > 0)
      print_noexcept(stdout, [&] {
        fmt::print("snapshot instrument={} seq={} orders={}\n", inst, b->book(inst).instrument_seq(),
                   b->book(inst).order_count());
      });
  }
  void on_reset(uint64_t session) noexcept {
    if (totals->print) print_noexcept(stdout, [&] { fmt::print("session {:016x}: books reset\n", session); });
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    print_noexcept(stderr, [&] {
      fmt::print(stderr, "{}mdcast subscribe: {}{}{}{}\n", totals->progress ? "\r\x1b[K" : "", channel, to_string(e),
                 detail.empty() ? "" : ": ", detail);
    });
  }
};

// One subscriber over the channels its filter needs (all of them for all
// instruments), in one thread: the library's SubscriberRuntime, each
// channel's medium behind the fault injector (one instantiation, and a branch
// per poll, not per datagram, when no fault is configured).
template <class E>
int subscribe(Settings& s) {
  using Medium = media::fault::FaultyMedium<typename E::Subscriber>;
  using Runtime = runtime::SubscriberRuntime<Medium, AppHandler>;
  runtime::SubscriberPlan plan = subscriber_plan(s, E::kName);
  plan.sections = {{"app", AppSubCounters::kInfo}};
  plan.histograms = {std::string(kLatencyHistogram)};
  const uint32_t n = plan.map.count();
  const bool many = n > 1;
  if (s.sub.cpu >= 0) pin_this_thread(s.sub.cpu);

  AppTotals h;
  h.print = s.sub.print;
  if (h.print) h.text = feed::MessageText(s.feed.max_instruments);
  std::vector<std::unique_ptr<AppHandler>> handlers;
  for (uint32_t k = 0; k < n; ++k)
    handlers.push_back(std::make_unique<AppHandler>(
        AppHandler{&h, many ? fmt::format("channel {}: ", s.feed.channel + k) : std::string()}));
  Runtime rt(std::move(plan), [&](uint32_t k) -> AppHandler& { return *handlers[k]; },
             [&s](uint32_t k) { return open_faulty<E>(s, k); });

  std::string joined;
  for (uint32_t k : rt.joined()) joined += (joined.empty() ? "" : ",") + std::to_string(s.feed.channel + k);
  fmt::print(stderr, "mdcast subscribe: {}{}; instruments {}{}\n",
             many ? fmt::format("channels {} of {}; channel {}: ", joined, n, s.feed.channel + rt.joined().front()) : "",
             rt.described(),
             s.sub.all_instruments ? std::string("all") : fmt::format("{} listed", s.sub.instruments.size()),
             s.sub.cpu >= 0 ? fmt::format("; pinned to CPU {}", s.sub.cpu) : "");
  auto* app = rt.template section<AppSubCounters>(0);
  // A live line while it runs, where a person watches stderr (and --print's
  // lines are not on the same terminal); one line rewritten, as the demo's.
  const char* term = std::getenv("TERM");
  h.progress = isatty(STDERR_FILENO) && !(term && std::string_view(term) == "dumb") && !(h.print && isatty(STDOUT_FILENO));
  uint64_t t_first = 0, t_last = 0, delivered_last = 0, rate = 0;
  const auto out = rt.run([&](uint64_t now) {
    app->lost.set(rt.lost_datagrams());
    app->latency_max_ns.set(h.latency.max());
    rt.counters_file().publish(0, h.latency);
    rt.report_latency(h.latency);
    if (!h.progress) return;
    if (!t_first) t_first = t_last = now;
    if (now > t_last) {
      rate = (h.delivered - delivered_last) * kNsPerSec / (now - t_last);
      t_last = now;
      delivered_last = h.delivered;
    }
    const auto& c = rt.totals();
    print_noexcept(stderr, [&] {
      fmt::print(stderr, "\r  {:5.1f}s  delivered {:>11} msg ({:>9}/s)  gaps {}  recovered {}  snapshots {}{}\x1b[K",
                 static_cast<double>(now - t_first) / 1e9, grouped(h.delivered), grouped(rate), c.gaps.get(),
                 c.datagrams_recovered.get(), c.snapshots_applied.get(),
                 h.latency.count() ? fmt::format("  latency p50 {} p99 {}", format_latency(h.latency.percentile(50)),
                                                 format_latency(h.latency.percentile(99)))
                                   : std::string());
      std::fflush(stderr);
    });
  });
  if (h.progress && t_first) print_noexcept(stderr, [] { fmt::print(stderr, "\n"); });
  using runtime::SubscriberEnding;
  const bool good = out.ending == SubscriberEnding::kEnded || out.ending == SubscriberEnding::kDuration;

  RunResult r = rt.result(out);
  r.messages = h.delivered;
  r.counters.emplace_back("app.lost", rt.lost_datagrams());
  r.latency = h.latency;
  if (!s.sub.result.empty()) write_result(s.sub.result, r);
  // Latency percentiles of no messages would read as zero latency: only where there were some.
  const std::string latency = h.latency.count() == 0 ? std::string()
                                                     : fmt::format("; latency p50 {} p99 {} max {}",
                                                                   format_latency(h.latency.percentile(50)),
                                                                   format_latency(h.latency.percentile(99)),
                                                                   format_latency(h.latency.max()));
  const auto& c = rt.totals();
  fmt::print(stderr, "mdcast subscribe: {} (session {:016x}): {} messages, {} gaps, {} datagrams recovered, {} snapshots{}\n",
             r.outcome, r.session, h.delivered, c.gaps.get(), c.datagrams_recovered.get(), c.snapshots_applied.get(),
             latency);
  const bool never = c.datagrams_received.get() == 0;
  if (out.ending == SubscriberEnding::kPublisherLost && never)
    fmt::print(stderr, "mdcast subscribe: nothing from a publisher in {:.1f} s on {}: is one publishing there?\n",
               r.seconds, rt.described());
  // Stopped because what it printed has no reader left: not an interruption.
  if (g_stdout_closed.load(std::memory_order_relaxed)) return exit_code::kOutputClosed;
  if (out.ending == SubscriberEnding::kStopped) return exit_code::kInterrupted;
  if (good) return exit_code::kOk;
  // Refused (credentials, entitlements) or never heard: the setup is wrong;
  // a publisher that went away mid-feed lost the rest of it.
  if (out.ending == SubscriberEnding::kRefused || never) return exit_code::kSetup;
  return exit_code::kDataLost;
}

}  // namespace

int run_subscribe(Settings& s) {
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    // At once, not after the wait: a subscriber with no publisher would
    // otherwise say nothing for subscriber.wait.
    const std::string what = E::waiting_for(channel_settings<E>(s, 0));
    fmt::print(stderr, "mdcast subscribe: waiting up to {} for {}\n", format_duration(s.sub.wait_ns),
               s.feed.channels > 1 ? fmt::format("the channels of a feed over {}, channel index 0 being {}", s.feed.channels, what)
                                   : what);
    return subscribe<E>(s);
  });
}

}  // namespace mdcast::app
