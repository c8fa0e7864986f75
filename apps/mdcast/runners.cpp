// `mdcast subscribe`: the library's agents over the
// medium the settings name (mdcast/settings/media.hpp), with a counters file, a result
// file and a clean end on SIGINT/SIGTERM. The duty loops are the library's
// (feed::run_paced, SubscriberAgent::run); this file only reports.
#include "runners.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>

#include "app_counters.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/core/affinity.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "print.hpp"
#include "settings.hpp"
#include "exit_codes.hpp"
#include "result.hpp"

namespace mdcast::app {

std::atomic<int> g_stop{0};
StopFlag g_stop_flag;

void install_signal_handlers() {
  set_low_timer_slack();
  struct sigaction sa {};
  sa.sa_handler = [](int) {
    g_stop = 1;
    g_stop_flag.request();
  };
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

// ---------------------------------------------------------------- subscribe --

// What every channel's handler adds to: one subscriber's deliveries.
struct AppTotals {
  Histogram latency;
  uint64_t delivered = 0;
  bool print = false;
  MessagePrinter printer;
};

// One per channel (events name their channel when there are several).
struct AppHandler {
  AppTotals* totals = nullptr;
  std::string channel;  // "channel 3: " or ""
  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    AppTotals& t = *totals;
    ++t.delivered;
    if (!d.recovered && d.receive_time_ns > d.send_time_ns) t.latency.record(d.receive_time_ns - d.send_time_ns);
    if (t.print) t.printer.print(m, d);
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    if (totals->print && b && b->book(inst).instrument_seq() > 0)
      fmt::print("snapshot instrument={} seq={} orders={}\n", inst, b->book(inst).instrument_seq(),
                 b->book(inst).order_count());
  }
  void on_reset(uint64_t session) noexcept {
    if (totals->print) fmt::print("session {:016x}: books reset\n", session);
  }
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    fmt::print(stderr, "mdcast subscribe: {}{}{}{}\n", channel, to_string(e), detail.empty() ? "" : ": ", detail);
  }
};

// One subscriber over the channels its filter needs (all of them for all
// instruments), in one thread: SubscriberChannels, each channel's medium
// behind the fault injector (one instantiation, and a branch per poll, not
// per datagram, when no fault is configured).
template <class E>
int subscribe(Settings& s) {
  using Inner = typename E::Subscriber;
  using Medium = media::fault::FaultyMedium<Inner>;
  using Channels = feed::SubscriberChannels<Medium, AppHandler>;
  const feed::ChannelMap map = channel_map(s);
  const uint32_t n = map.count();
  const bool many = n > 1;
  if (s.sub.cpu >= 0) pin_this_thread(s.sub.cpu);

  struct Both {  // teardown: the injector, then the medium it wraps
    Both(std::unique_ptr<Inner> i, const media::fault::FaultProfile& f) : inner(std::move(i)), faulty(*inner, f) {}
    std::unique_ptr<Inner> inner;
    Medium faulty;
  };
  auto open = [&](uint32_t k) -> std::shared_ptr<Medium> {
    const Settings cs = channel_settings<E>(s, k);
    auto make = [&] { return E::subscriber(cs); };
    auto inner = many ? with_context(fmt::format("channel {}", cs.feed.channel), make) : make();
    auto both = std::make_shared<Both>(std::move(inner), injected_faults(s, static_cast<uint64_t>(::getpid()) + k));
    return std::shared_ptr<Medium>(both, &both->faulty);
  };

  AppTotals h;
  h.print = s.sub.print;
  if (h.print) h.printer = MessagePrinter(s.feed.max_instruments);
  std::vector<std::unique_ptr<AppHandler>> handlers;
  for (uint32_t k = 0; k < n; ++k)
    handlers.push_back(std::make_unique<AppHandler>(
        AppHandler{&h, many ? fmt::format("channel {}: ", s.feed.channel + k) : std::string()}));
  std::unique_ptr<stats::CountersFile> cf;
  std::vector<size_t> sub_at(n, 0);
  // The channels the filter needs are opened now (each may wait for its
  // publisher), so that the counters file mirrors their media; one joined
  // later (an instrument added) opens then, its engine counters in its section.
  std::map<uint32_t, std::shared_ptr<Medium>> opened;
  Channels channels(
      map, subscriber_config(s), typename Channels::HandlerAt([&](uint32_t k) -> AppHandler& { return *handlers[k]; }),
      [&](uint32_t k) {
        auto it = opened.find(k);
        if (it == opened.end()) return open(k);
        auto m = std::move(it->second);
        opened.erase(it);
        return m;
      },
      [&](uint32_t k) { return cf ? cf->section<feed::SubscriberCounters>(sub_at[k]) : nullptr; },
      {s.feed.control_poll_ns, s.feed.idle});
  const std::vector<uint32_t> needed = channels.needed();
  for (uint32_t k : needed) opened[k] = open(k);

  std::vector<stats::Section> sections{{"sub", feed::SubscriberCounters::kInfo}, {"app", AppSubCounters::kInfo}};
  std::vector<MirroredCounters> mirrored;
  std::string described;
  for (uint32_t k = 0; k < n && many; ++k) {
    sub_at[k] = sections.size();
    sections.push_back({channel_prefix("sub", static_cast<uint16_t>(s.feed.channel + k)), feed::SubscriberCounters::kInfo});
  }
  for (const auto& [k, m] : opened) {
    mirrored.emplace_back(m->counter_groups(), many ? "@" + std::to_string(s.feed.channel + k) : std::string());
    mirrored.back().add_sections(sections);
    if (described.empty()) described = m->describe();
  }
  cf = std::make_unique<stats::CountersFile>("subscriber", s.feed.name, std::string(E::kName), sections);
  auto* app = cf->section<AppSubCounters>(1);
  channels.start();
  cf->set_state(stats::ProcessState::kRunning);
  std::string joined;
  for (uint32_t k : needed) joined += (joined.empty() ? "" : ",") + std::to_string(s.feed.channel + k);
  fmt::print(stderr, "mdcast subscribe: {}{}; instruments {}{}\n",
             many ? fmt::format("channels {} of {}; channel {}: ", joined, n, s.feed.channel + needed.front()) : "",
             described,
             s.sub.all_instruments ? std::string("all") : fmt::format("{} listed", s.sub.instruments.size()),
             s.sub.cpu >= 0 ? fmt::format("; pinned to CPU {}", s.sub.cpu) : "");

  const uint64_t t0 = monotonic_ns();
  uint64_t now = t0, last_stats = t0;
  std::string outcome = "ok";
  auto lost = [&] {
    uint64_t v = 0;
    for (size_t i = 0; i < channels.size(); ++i) v += channels.medium(i).lost_datagrams();
    return v;
  };
  auto refresh = [&] {
    cf->touch(now);
    for (auto& m : mirrored) m.refresh(*cf);
    if (many) {
      std::vector<Counter*> per;
      for (uint32_t k = 0; k < n; ++k) per.push_back(cf->section_base(sub_at[k]));
      sum_channels(feed::SubscriberCounters::kInfo, cf->section_base(0), per);
    }
    app->lost.set(lost());
    app->latency_p50_ns.set(h.latency.percentile(50));
    app->latency_p99_ns.set(h.latency.percentile(99));
    app->latency_max_ns.set(h.latency.max());
  };
  struct Hooks {
    Channels& a;
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
  } hooks{channels, s, t0, now, last_stats, outcome, refresh};
  channels.run(hooks);
  now = monotonic_ns();
  refresh();
  cf->set_state(outcome == "ok" || outcome == "duration" ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  RunResult r;
  r.role = "subscriber";
  r.name = s.feed.name;
  r.medium = E::kName;
  r.outcome = g_stop ? "interrupted" : outcome;
  r.session = channels.agent(0).subscriber().session();
  r.seconds = static_cast<double>(now - t0) / 1e9;
  r.messages = h.delivered;
  r.all_instruments = s.sub.all_instruments;
  for (size_t i = 0; i < channels.size(); ++i) {
    const auto& sub = channels.agent(i).subscriber();
    const uint32_t k = channels.index(i);
    const std::string at = many ? "@" + std::to_string(s.feed.channel + k) : std::string();
    r.last_sequence += sub.next_sequence() - 1;
    if (many) dump_counters(sub.counters(), "sub" + at + ".", r.counters);
    if (const auto* b = sub.books())
      for (uint32_t inst = 0; inst < b->max_instruments(); ++inst)
        if (map.of(inst) == k && sub.wants(inst))
          r.books.push_back({inst, b->book(inst).instrument_seq(), b->book(inst).checksum()});
  }
  std::sort(r.books.begin(), r.books.end(), [](const auto& a, const auto& b) { return a.instrument < b.instrument; });
  const auto& c = *cf->section<feed::SubscriberCounters>(0);  // the totals (or the one channel's)
  dump_counters(many ? c : channels.agent(0).subscriber().counters(), "sub.", r.counters);
  r.counters.emplace_back("app.lost", lost());
  for (const auto& m : mirrored) m.dump(r.counters);
  r.latency = h.latency;
  if (!s.sub.result.empty()) write_result(s.sub.result, r);
  // Latency percentiles of no messages would read as zero latency: only where there were some.
  const std::string latency = h.latency.count() == 0 ? std::string()
                                                     : fmt::format("; latency p50 {} ns p99 {} ns", h.latency.percentile(50),
                                                                   h.latency.percentile(99));
  fmt::print(stderr, "mdcast subscribe: {} (session {:016x}): {} messages, {} gaps, {} datagrams recovered, {} snapshots{}\n",
             r.outcome, r.session, h.delivered, c.gaps.get(), c.datagrams_recovered.get(), c.snapshots_applied.get(),
             latency);
  if (outcome == "publisher-lost" && c.datagrams_received.get() == 0)
    fmt::print(stderr, "mdcast subscribe: nothing from a publisher in {:.1f} s on {}: is one publishing there?\n",
               static_cast<double>(now - t0) / 1e9, described);
  if (g_stop) return exit_code::kInterrupted;
  if (outcome == "ok" || outcome == "duration") return exit_code::kOk;
  // Refused (credentials, entitlements) or never heard: the setup is wrong;
  // a publisher that went away mid-feed lost the rest of it.
  if (outcome.rfind("error:", 0) == 0) return exit_code::kSetup;
  if (outcome == "publisher-lost" && c.datagrams_received.get() == 0) return exit_code::kSetup;
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
