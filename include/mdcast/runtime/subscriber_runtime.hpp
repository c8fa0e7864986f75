// A subscriber of a feed's channels, as `mdcast subscribe` runs one: the
// channels its filter needs (feed::SubscriberChannels, one thread), opened
// before the counters file exists so that the file mirrors their media; the
// counters file with a section per channel and the totals; the run until the
// session ends, a duration passes, a stop is requested, the publisher
// refuses, or it falls silent; then the books and counters for a result.
//
//   runtime::SubscriberRuntime<Medium, Handler> rt(plan, handler_at, open_channel);
//   const auto out = rt.run([&](uint64_t now) { /* the application's own counters */ });
//   out.ending == runtime::SubscriberEnding::kEnded: everything up to the end of session
//
// The application keeps what is its own: the handler (one per channel or
// shared), how channel k's medium is opened (a fault injector around it, a
// context for its errors), what it prints and writes.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/runtime/agent_result.hpp"
#include "mdcast/runtime/result_file.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/mirror.hpp"

namespace mdcast::runtime {

// Why a subscriber's run ended.
enum class SubscriberEnding : uint8_t {
  kEnded,          // the publisher ended its session and everything up to it was delivered
  kDuration,       // the plan's duration passed
  kStopped,        // the plan's StopFlag was requested
  kRefused,        // the publisher refused the subscription (credentials, entitlements): see error
  kPublisherLost,  // silent past give_up_ns, or never heard within wait_ns
  kFailed,         // the application's round hook ended it (a recorder's write failed): see error
};
// "ok", "duration", "interrupted", "error", "publisher-lost": the words of mdcast's result files.
constexpr std::string_view to_string(SubscriberEnding e) noexcept {
  switch (e) {
    case SubscriberEnding::kEnded: return "ok";
    case SubscriberEnding::kDuration: return "duration";
    case SubscriberEnding::kStopped: return "interrupted";
    case SubscriberEnding::kRefused: return "error";
    case SubscriberEnding::kPublisherLost: return "publisher-lost";
    case SubscriberEnding::kFailed: return "error";
  }
  return "?";
}

// When a subscriber stops waiting.
struct SubscriberLimits {
  const StopFlag* stop = nullptr;
  uint64_t duration_ns = 0;                // 0: until the session ends
  uint64_t wait_ns = 10 * kNsPerSec;       // nothing ever heard: give up after this long
  uint64_t give_up_ns = 10 * kNsPerSec;    // a publisher silent this long is lost (heartbeats come every 100 ms)
};

// Whether a subscriber (one agent, or several channels') should end at
// `now`, and why; `error` gets a refusal's reason. For loops of their own
// (a recorder's); SubscriberRuntime asks it after every control round.
// `first` (kept by the caller): a feed heard for `wait` before any control
// plane answered a Subscribe (refused, closed, silent, or every announcement
// ignored as unsigned) is a setup error, not a publisher lost: what it holds
// can never be delivered. Once subscribed, a control outage is the media's
// to ride out.
struct FirstSubscription {
  uint64_t heard_since = 0;  // data first heard while no channel was subscribed yet
  bool done = false;         // some channel has been subscribed
};
template <class Agent>
bool subscriber_should_end(const Agent& a, const SubscriberLimits& l, uint64_t t0, uint64_t now, SubscriberEnding& why,
                           std::string& error, FirstSubscription* first = nullptr) {
  if (l.stop && l.stop->requested()) return why = SubscriberEnding::kStopped, true;
  if (l.duration_ns && now - t0 >= l.duration_ns) return why = SubscriberEnding::kDuration, true;
  bool never = true;
  bool refused = false;
  bool heard_any = false;  // some channel heard data
  auto check = [&](const auto& sub) {
    // A peer that could not prove itself is a refusal only once no publisher
    // that could has been found for `wait` (the medium may be leaving an impostor).
    const uint64_t unproven = sub.peer_unproven_since();
    if ((sub.subscribe_refused() || (unproven && now - unproven > l.wait_ns)) && !refused)
      refused = true, error = sub.last_error();
    const bool heard = sub.counters().datagrams_received.get() != 0;
    never &= !heard;
    heard_any |= heard;
    if (first && sub.subscribed()) first->done = true;
  };
  if constexpr (requires { a.agent(0); }) {
    for (size_t i = 0; i < a.size(); ++i) check(a.agent(i).subscriber());
  } else {
    check(a.subscriber());
  }
  if (refused) return why = SubscriberEnding::kRefused, true;
  if (first && !first->done && heard_any) {
    if (!first->heard_since) {
      first->heard_since = now;
    } else if (now - first->heard_since > l.wait_ns) {
      error = fmt::format("the feed was heard for {} s, but no control plane answered a Subscribe (see the lines "
                          "above; subscriber.wait)", (now - first->heard_since) / kNsPerSec);
      return why = SubscriberEnding::kRefused, true;
    }
  }
  if (now - a.last_data_ns() > l.give_up_ns || (never && now - t0 > l.wait_ns))
    return why = SubscriberEnding::kPublisherLost, true;
  return false;
}

struct SubscriberPlan {
  feed::ChannelMap map;                      // the feed's channels (ChannelMap(1, n): one)
  feed::SubscriberConfig engine;             // each channel's engine (its filter decides which channels are needed)
  feed::SubscriberAgentOptions agent;        // control poll interval, idle mode
  SubscriberLimits limits;
  uint16_t first_channel = 1;                // the wire channel id of channel index 0
  std::string name, medium;                  // the counters file's feed and medium
  std::string role = "subscriber";           // the counters file's ("recorder": a subscriber that also writes)
  std::vector<stats::Section> sections;      // the application's own, after "sub" (section(0) is the first)
  std::vector<std::string> histograms;       // labels of the application's histograms (CountersFile::publish)
  uint64_t refresh_ns = 250 * kNsPerMs;      // the counters file's refresh, and the run's refresh hook
};

template <class Medium, class Handler>
class SubscriberRuntime {
 public:
  using Channels = feed::SubscriberChannels<Medium, Handler>;
  using Refresh = std::function<void(uint64_t now)>;
  struct RunHooks {
    Refresh refresh;  // every plan.refresh_ns and once at the end, the counters file up to date
    // The channels built and started, before their first round (the books exist).
    std::function<void(SubscriberRuntime&)> started;
    // Every control round (every plan.agent.control_poll_ns, not per
    // message); false ends the run as kFailed, with `error` its reason.
    std::function<bool(uint64_t now, std::string& error)> round;
  };

  struct Outcome {
    SubscriberEnding ending = SubscriberEnding::kEnded;
    std::string error;    // kRefused: the publisher's reason
    uint64_t t0 = 0;      // when the channels had started
    uint64_t end_ns = 0;  // when it ended
  };

  // Opens the channels the filter needs (each may wait for its publisher),
  // then the counters file over them. Throws what opening threw.
  SubscriberRuntime(SubscriberPlan plan, typename Channels::HandlerAt handlers, typename Channels::Open open)
      : plan_(std::move(plan)),
        open_(std::move(open)),
        channels_(plan_.map, plan_.engine, std::move(handlers), [this](uint32_t k) { return take(k); },
                  [this](uint32_t k) { return cf_ ? cf_->template section<feed::SubscriberCounters>(sub_at_[k]) : nullptr; },
                  plan_.agent) {
    const uint32_t n = plan_.map.count();
    needed_ = channels_.needed();
    for (uint32_t k : needed_) opened_[k] = open_(k);
    std::vector<stats::Section> sections{{"sub", feed::SubscriberCounters::kInfo}};
    sections.insert(sections.end(), plan_.sections.begin(), plan_.sections.end());
    sub_at_.assign(n, 0);
    for (uint32_t k = 0; k < n && many(); ++k) {
      sub_at_[k] = sections.size();
      sections.push_back({stats::channel_prefix("sub", channel_id(k)), feed::SubscriberCounters::kInfo});
    }
    for (const auto& [k, m] : opened_) {
      mirrored_.emplace_back(m->counter_groups(), many() ? "@" + std::to_string(channel_id(k)) : std::string());
      mirrored_.back().add_sections(sections);
      if (described_.empty()) described_ = m->describe();
    }
    stats::TableSpec tables;
    tables.loss_rows = feed::LossReport::kRows;
    cf_ = std::make_unique<stats::CountersFile>(plan_.role, plan_.name, plan_.medium, sections, plan_.histograms,
                                                tables);
    losses_ = feed::LossReport(cf_->loss_rows());
  }
  SubscriberRuntime(const SubscriberRuntime&) = delete;
  SubscriberRuntime& operator=(const SubscriberRuntime&) = delete;
  // Teardown: the channels (agents, then media) before the counters file.
  ~SubscriberRuntime() = default;

  [[nodiscard]] bool many() const noexcept { return plan_.map.count() > 1; }
  [[nodiscard]] uint16_t channel_id(uint32_t k) const noexcept { return static_cast<uint16_t>(plan_.first_channel + k); }
  // The channel indices joined at the start (the filter's), in order.
  [[nodiscard]] const std::vector<uint32_t>& joined() const noexcept { return needed_; }
  // The first joined channel's medium, described.
  [[nodiscard]] const std::string& described() const noexcept { return described_; }
  Channels& channels() noexcept { return channels_; }
  stats::CountersFile& counters_file() noexcept { return *cf_; }
  // The application's section i (plan.sections[i]) in the counters file.
  template <class T>
  T* section(size_t i) noexcept {
    return cf_->template section<T>(1 + i);
  }
  // The engines' totals (the one channel's where there is one).
  [[nodiscard]] const feed::SubscriberCounters& totals() const noexcept {
    return *cf_->template section<feed::SubscriberCounters>(0);
  }
  // What the application's handler measured, for the publisher's view of
  // this subscriber (`mdcast stat --subscribers`): sent with each status
  // report from now on. Call from `refresh` (the channels' own thread).
  void report_latency(const Histogram& h) noexcept {
    const wire::LatencyReport r{h.count(), h.percentile(50), h.percentile(99), h.max()};
    for (size_t i = 0; i < channels_.size(); ++i) channels_.agent(i).subscriber().report_latency(r);
  }
  [[nodiscard]] uint64_t lost_datagrams() const {
    uint64_t v = 0;
    for (size_t i = 0; i < channels_.size(); ++i) v += channels_.medium(i).lost_datagrams();
    return v;
  }

  // Starts the channels and runs them until an ending; `refresh` is called
  // every plan.refresh_ns and once at the end, after the counters file is
  // brought up to date.
  Outcome run(const Refresh& refresh = {}) { return run(RunHooks{refresh, {}, {}}); }
  Outcome run(const RunHooks& run_hooks) {
    const Refresh& refresh = run_hooks.refresh;
    Outcome out;
    channels_.start();
    if (run_hooks.started) run_hooks.started(*this);
    report_losses();
    cf_->set_state(stats::ProcessState::kRunning);
    out.t0 = monotonic_ns();  // subscriber.wait counts from here: joining may take a while
    struct Hooks {
      SubscriberRuntime& rt;
      const Refresh& refresh;
      const RunHooks& hooks;
      Outcome& out;
      uint64_t last = 0;
      FirstSubscription first;
      bool on_control_round(uint64_t now) {
        if (now - last > rt.plan_.refresh_ns) {
          last = now;
          rt.update(now, refresh);
        }
        if (hooks.round && !hooks.round(now, out.error)) return out.ending = SubscriberEnding::kFailed, false;
        return !subscriber_should_end(rt.channels_, rt.plan_.limits, out.t0, now, out.ending, out.error,
                                      &first);
      }
    } hooks{*this, refresh, run_hooks, out, out.t0, {}};
    channels_.run(hooks);
    out.end_ns = monotonic_ns();
    update(out.end_ns, refresh);
    const bool good = out.ending == SubscriberEnding::kEnded || out.ending == SubscriberEnding::kDuration;
    cf_->set_state(good ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);
    return out;
  }

  [[nodiscard]] uint64_t session() const noexcept { return channels_.agent(0).subscriber().session(); }
  // The last sequence delivered, summed over the joined channels.
  [[nodiscard]] uint64_t last_sequence() const noexcept {
    uint64_t v = 0;
    for (size_t i = 0; i < channels_.size(); ++i) v += channels_.agent(i).subscriber().next_sequence() - 1;
    return v;
  }
  // Every book the subscriber keeps (its channel's, and wanted), by instrument.
  [[nodiscard]] std::vector<BookDigest> books() const {
    std::vector<BookDigest> v;
    for (size_t i = 0; i < channels_.size(); ++i) {
      const auto& sub = channels_.agent(i).subscriber();
      const auto kept_here = [&](uint32_t inst, const book::OrderBook&) {
        return plan_.map.of(inst) == channels_.index(i) && sub.wants(inst);
      };
      if (const auto* b = sub.books()) add_book_digests(*b, kept_here, v);
    }
    std::sort(v.begin(), v.end(), [](const BookDigest& a, const BookDigest& b) { return a.instrument < b.instrument; });
    return v;
  }
  // A result file's content for this run (after run()): the plan's name and
  // medium, the ending as its word, session, books and counters; the
  // application adds what its handler counted (messages, latency).
  [[nodiscard]] RunResult result(const Outcome& out) const {
    RunResult r;
    r.role = "subscriber";
    r.name = plan_.name;
    r.medium = plan_.medium;
    const bool why = out.ending == SubscriberEnding::kRefused || out.ending == SubscriberEnding::kFailed;
    r.outcome = why ? "error: " + out.error : std::string(to_string(out.ending));
    r.session = session();
    r.seconds = static_cast<double>(out.end_ns - out.t0) / 1e9;
    r.all_instruments = plan_.engine.all_instruments;
    r.last_sequence = last_sequence();
    r.books = books();
    dump_counters(r.counters);
    return r;
  }
  // "sub.name" (the totals), "sub@C.name" per channel where there are
  // several, and the media's mirrored counters: a result file's counters.
  void dump_counters(std::vector<std::pair<std::string, uint64_t>>& out) const {
    for (size_t i = 0; i < channels_.size() && many(); ++i)
      stats::dump_counters(channels_.agent(i).subscriber().counters(),
                           "sub@" + std::to_string(channel_id(channels_.index(i))) + ".", out);
    stats::dump_counters(many() ? totals() : channels_.agent(0).subscriber().counters(), "sub.", out);
    for (const auto& m : mirrored_) m.dump(out);
  }

 private:
  // A channel opened at the start is handed over once; one joined later
  // (an instrument added) opens then.
  std::shared_ptr<Medium> take(uint32_t k) {
    auto it = opened_.find(k);
    if (it == opened_.end()) return open_(k);
    auto m = std::move(it->second);
    opened_.erase(it);
    return m;
  }
  // Every joined channel's engine records its gaps in the one report (a
  // channel joined later, from the next refresh on).
  void report_losses() noexcept {
    for (size_t i = 0; i < channels_.size(); ++i) channels_.agent(i).subscriber().report_losses(&losses_);
  }
  void update(uint64_t now, const Refresh& refresh) {
    cf_->touch(now);
    report_losses();
    for (auto& m : mirrored_) m.refresh(*cf_);
    if (many()) {
      std::vector<Counter*> per;
      for (uint32_t k = 0; k < plan_.map.count(); ++k) per.push_back(cf_->section_base(sub_at_[k]));
      stats::sum_channels(feed::SubscriberCounters::kInfo, cf_->section_base(0), per);
    }
    if (refresh) refresh(now);
  }

  SubscriberPlan plan_;
  typename Channels::Open open_;
  std::map<uint32_t, std::shared_ptr<Medium>> opened_;
  std::vector<uint32_t> needed_;
  std::vector<size_t> sub_at_;
  std::vector<stats::MirroredCounters> mirrored_;
  std::string described_;
  // Declared last of what the channels use, first destroyed: the agents and
  // media go before the counters file their engines count into.
  std::unique_ptr<stats::CountersFile> cf_;
  feed::LossReport losses_;  // rows in cf_
  Channels channels_;
};

}  // namespace mdcast::runtime
