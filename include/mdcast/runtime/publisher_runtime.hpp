// runtime::PublisherRuntime: a feed of N channels published by M threads
// behind one control endpoint - what `mdcast publish` runs, for any
// application.
//
//   the conductor  the thread that calls run(): opens nothing itself (the
//                  application hands it the shared control endpoint, a
//                  media::ControlDoor), starts the publishing threads,
//                  creates the counters file once every medium exists (its
//                  sections mirror theirs), waits for the subscriptions the
//                  plan asks for, says go, then serves the endpoint and
//                  refreshes the counters until every thread is done. The
//                  first failure stops every thread.
//   a publisher    one thread per lane, pinned where the plan says: builds
//                  its channels' media after pinning (what they allocate is
//                  first touched on that core and memory node), then their
//                  agents over the counters file; serves subscriptions until
//                  go; publishes (the application's Hooks::publish, usually
//                  feed::run_paced over lane.publisher()); ends the session
//                  and lingers while subscribers recover. The linger ends
//                  when no channel of the whole publisher has had a client
//                  for linger_quiet_ns, or at linger_ns.
//
// A stop request (the plan's StopFlag: SIGTERM, say) ends publishing and
// still ends the session cleanly: the end-of-session heartbeat goes out and
// recovery is served as after a natural end, so subscribers that catch up
// finish as they would have. A second request ends the linger at once.
// A publisher pair's member (Hooks::hand_over) may instead leave the session
// to a peer that carries it on: no end of session, no linger.
//
//   runtime::PublisherRuntime<media::shm::PublisherMedium, media::ControlFrontDoor> rt(plan, std::move(door),
//       [&](uint32_t k, auto inbox) { return open_channel(k, std::move(inbox)); });
//   rt.run({.publish = [&](auto& lane) { return feed::run_paced(lane.publisher(), source, pace, hooks); }});
//
// Teardown, on every way out (run() returning or throwing, the runtime
// destroyed): the publishing threads end and join before the counters file
// they write goes; each thread tears down its agents, then their media; the
// endpoint goes last (the media hold its inboxes).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "mdcast/core/affinity.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/feed/channels.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/runtime/agent_result.hpp"
#include "mdcast/runtime/result_file.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/mirror.hpp"

namespace mdcast::runtime {

// No shared endpoint: one channel, or media whose channels each listen on
// their own (the in-memory medium).
struct NoDoor {
  std::nullptr_t add_channel(uint16_t) { return nullptr; }
  size_t wait(uint64_t ns) {
    sleep_ns(ns);
    return 0;
  }
  [[nodiscard]] media::CounterGroup counter_group() const { return {"door", {}, nullptr}; }
};
static_assert(media::ControlDoor<NoDoor>);

// The run itself, in every publisher's counters file (section "run", after
// the application's own): refreshed by the conductor about every 100 ms.
#define MDCAST_RUN_COUNTERS(X)                                                                              \
  X(elapsed_ms, "milliseconds since publishing began (go)")                                                \
  X(progress, "the publishing threads' own count of their input: synthetic messages generated, messages forwarded") \
  X(control_clients, "connected control clients")                                                          \
  X(control_time_us, "time the publishing threads spent polling the control plane, microseconds")
MDCAST_DEFINE_COUNTER_STRUCT(RunCounters, MDCAST_RUN_COUNTERS);
inline constexpr std::string_view kRunGauges[] = {"elapsed_ms", "control_clients"};

struct PublisherPlan {
  feed::ChannelMap map;           // the channels, by index
  uint32_t threads = 1;           // publishing threads; channels split by feed::channels_per_thread
  std::vector<int> cpus;          // one per thread; empty: not pinned
  feed::PublisherConfig engine;   // every channel's; engine.channel is index 0's wire id, index k's is that + k
  feed::ControlConfig control;
  feed::PublisherAgentOptions agent;
  size_t wait_subscribers = 0;    // subscriptions (a subscriber counts once per channel) before go; 0: go at once
  uint64_t wait_subscribers_ns = 60 * kNsPerSec;
  uint64_t linger_ns = 0;         // recovery served after the end of session, at most
  uint64_t linger_quiet_ns = 300 * kNsPerMs;
  const StopFlag* stop = nullptr;  // ends publishing, then the session (a signal handler's, say); null: only failures stop
  // The counters file `mdcast stat` reads; none when name is empty. Sections:
  // "pub", "ctl", then `extra` (the application's), then each channel's
  // ("pub@<id>", "ctl@<id>") where there are several, each medium's mirrored
  // counters, and the shared endpoint's ("door").
  struct CountersFileSpec {
    std::string role = "publisher";
    std::string name;
    std::string medium;
    std::vector<stats::Section> extra;
  } counters;
};

template <media::PublisherMedium Medium, media::ControlDoor Door = NoDoor>
class PublisherRuntime {
 public:
  using Channels = feed::PublisherChannels<Medium>;
  using Inbox = decltype(std::declval<Door&>().add_channel(uint16_t{}));
  // Builds channel index k's medium, on the thread that publishes it; inbox
  // is the shared endpoint's for that channel (for the medium's options).
  using OpenMedium = std::function<std::unique_ptr<Medium>(uint32_t index, Inbox inbox)>;

  // One publishing thread, as its hooks see it.
  class Lane {
   public:
    [[nodiscard]] uint32_t thread() const noexcept { return thread_; }
    [[nodiscard]] const std::vector<uint32_t>& channels() const noexcept { return channels_; }  // indexes
    [[nodiscard]] int cpu() const noexcept { return cpu_; }
    // Its channels (inside Hooks::publish and Hooks::finished).
    [[nodiscard]] Channels& publisher() noexcept { return *publisher_; }
    // When every thread was told to go: the feed's time origin.
    [[nodiscard]] uint64_t t0() const noexcept { return rt_->t0_.load(std::memory_order_acquire); }
    // Stop requested, or another thread failed: Hooks::publish should return.
    [[nodiscard]] bool stopping() const noexcept { return rt_->stopping(); }
    // From Hooks::publish's loop, each round (a clock compare; every 100 ms
    // it publishes what the conductor shows).
    void report(uint64_t now) noexcept {
      if (now - reported_ < 100 * kNsPerMs) return;
      reported_ = now;
      store_report();
    }
    // From Hooks::publish, before it returns: this thread's session is not
    // ended (no end-of-session heartbeat, no linger) because its input
    // failed - a relay whose upstream was lost. Its subscribers then see the
    // publisher fall silent, as they would had it died, never a clean end
    // that would pass a cut-short feed off as complete.
    void abandon() noexcept { abandoned_ = true; }
    // The application's own count (messages generated, say), for its refresh.
    std::atomic<uint64_t> progress{0};
    std::atomic<uint64_t> control_ns{0};
    std::atomic<size_t> subscribed{0};
    std::atomic<size_t> clients{0};
    feed::PaceResult paced;  // what Hooks::publish returned
    // What its channels held after the linger (for result()): the books
    // with traffic, every counter, and why the book refused a message, if
    // it ever did (the publish hook's PaceResult says whether one was).
    struct End {
      std::vector<BookDigest> books;
      std::vector<std::pair<std::string, uint64_t>> counters;
      uint64_t last_sequence = 0;  // summed over its channels
      std::string refused;
    };
    [[nodiscard]] const End& end() const noexcept { return end_; }

   private:
    friend class PublisherRuntime;
    void store_report() noexcept {
      uint64_t ns = 0;
      for (size_t i = 0; i < publisher_->size(); ++i) ns += publisher_->agent(i).control_time_ns();
      control_ns.store(ns, std::memory_order_relaxed);
    }
    PublisherRuntime* rt_ = nullptr;
    uint32_t thread_ = 0;
    std::vector<uint32_t> channels_;
    int cpu_ = -1;
    Channels* publisher_ = nullptr;
    uint64_t reported_ = 0;
    std::thread th_;
    std::vector<std::string> described_;
    std::vector<std::vector<media::CounterGroup>> groups_;
    std::string error_;
    End end_;
    bool handed_over_ = false;
    bool abandoned_ = false;
  };

  struct Hooks {
    // Required. Publishes until done or lane.stopping(); runs on the lane's thread.
    std::function<feed::PaceResult(Lane&)> publish;
    // Every channel built and its agent running, before waiting for subscribers.
    std::function<void(PublisherRuntime&)> started;
    // The conductor's, about every 100 ms (and every ms while waiting for
    // subscribers): the application's counters (file: null without one).
    std::function<void(stats::CountersFile* file, uint64_t now)> refresh;
    // Each thread, after its linger, before its channels are torn down.
    std::function<void(Lane&)> finished;
    // Optional, a pair member's (runtime::carries_on): after a stop request
    // ended publishing, before the session's end. True: a peer publishes the
    // session on past this member, which leaves it unended, as a member that
    // died would, but cleanly: ending it would end it for every subscriber.
    // Runs on the lane's thread; it keeps lane.publisher() served meanwhile.
    std::function<bool(Lane&)> hand_over;
  };

  struct Outcome {
    bool stopped = false;  // the StopFlag ended publishing (the session was still ended, unless `cut`)
    bool cut = false;      // asked twice: the session's end and the linger were cut short
    bool handed_over = false;  // stopped, and every thread left the session to a peer (Hooks::hand_over)
    bool abandoned = false;    // some thread left its session unended (Lane::abandon)
    uint64_t t0 = 0;       // go
    uint64_t end_ns = 0;   // the last lane's end of publishing
    uint64_t published = 0;
  };

  // Refuses a plan that cannot run (Error, naming it). The door is adopted
  // (null: each channel's medium listens on its own); open is called once
  // per channel, on its thread.
  PublisherRuntime(PublisherPlan plan, std::unique_ptr<Door> door, OpenMedium open)
      : plan_(std::move(plan)), door_(std::move(door)), open_(std::move(open)) {
    const uint32_t n = plan_.map.count();
    if (n == 0) fail("a feed needs at least one channel");
    if (plan_.threads == 0 || plan_.threads > n)
      fail("{} publishing threads for {} channels: a thread publishes at least one channel", plan_.threads, n);
    if (!plan_.cpus.empty() && plan_.cpus.size() != plan_.threads)
      fail("{} CPUs for {} publishing threads: one CPU per thread", plan_.cpus.size(), plan_.threads);
    if (uint32_t{plan_.engine.channel} + n - 1 > 0xffff)
      fail("channel {} with {} channels goes past channel id 65535", plan_.engine.channel, n);
    const auto split = feed::channels_per_thread(n, plan_.threads);
    for (uint32_t t = 0; t < plan_.threads; ++t) {
      auto& l = *lanes_.emplace_back(std::make_unique<Lane>());
      l.rt_ = this;
      l.thread_ = t;
      l.channels_ = split[t];
      l.cpu_ = plan_.cpus.empty() ? -1 : plan_.cpus[t];
    }
    for (uint32_t k = 0; door_ && k < n; ++k) inboxes_.push_back(door_->add_channel(channel_id(k)));
    described_.resize(n);
  }
  PublisherRuntime(const PublisherRuntime&) = delete;
  PublisherRuntime& operator=(const PublisherRuntime&) = delete;
  ~PublisherRuntime() { join(true); }

  // Runs the feed to its end on this thread (the conductor). Throws Error:
  // the first publishing thread's failure ("publishing thread T: ..." where
  // there are several), or the subscribers asked for not arriving in time.
  Outcome run(Hooks hooks) {
    if (!hooks.publish) fail("PublisherRuntime::run: no publish hook");
    if (ran_) fail("PublisherRuntime::run: a runtime runs once");
    ran_ = true;
    hooks_ = std::move(hooks);
    const uint32_t n = plan_.map.count();
    for (auto& l : lanes_) l->th_ = std::thread([this, lane = l.get()] { run_lane(*lane); });
    if (!wait_phase(media_built_)) return stopped_early();
    build_counters_file(n);
    file_ready_.store(true, std::memory_order_release);
    if (!wait_phase(agents_built_)) return stopped_early();
    if (file_) file_->set_state(stats::ProcessState::kRunning);
    if (hooks_.started) hooks_.started(*this);

    if (plan_.wait_subscribers) {
      // Subscribers there from the first datagram need no recovery.
      const uint64_t give_up = monotonic_ns() + plan_.wait_subscribers_ns;
      while (!stopping() && subscribed() < plan_.wait_subscribers) {
        const uint64_t now = monotonic_ns();
        if (now > give_up) {
          join(true);
          fail("only {} of {} subscriptions arrived within {} s", subscribed(), plan_.wait_subscribers,
               plan_.wait_subscribers_ns / kNsPerSec);
        }
        refresh(now);
        wait(kNsPerMs);
      }
    }
    Outcome o;
    o.t0 = monotonic_ns();
    t0_.store(o.t0, std::memory_order_release);
    go_.store(true, std::memory_order_release);
    while (finished_.load(std::memory_order_acquire) < lanes_.size()) {
      refresh(monotonic_ns());
      wait(100 * kNsPerMs);
    }
    refresh(monotonic_ns());
    join(false);
    rethrow();
    if (file_) file_->set_state(stats::ProcessState::kFinished);
    o.stopped = plan_.stop && plan_.stop->requested();
    o.cut = plan_.stop && plan_.stop->urgent();
    o.handed_over = std::all_of(lanes_.begin(), lanes_.end(), [](const auto& l) { return l->handed_over_; });
    o.abandoned = std::any_of(lanes_.begin(), lanes_.end(), [](const auto& l) { return l->abandoned_; });
    o.end_ns = o.t0;
    for (auto& l : lanes_) {
      o.end_ns = std::max(o.end_ns, l->paced.end_ns);
      o.published += l->paced.published;
    }
    return o;
  }

  // ---- what it runs (the conductor's thread; after started)
  [[nodiscard]] const PublisherPlan& plan() const noexcept { return plan_; }
  [[nodiscard]] size_t lanes() const noexcept { return lanes_.size(); }
  [[nodiscard]] Lane& lane(size_t t) noexcept { return *lanes_[t]; }
  [[nodiscard]] uint16_t channel_id(uint32_t index) const noexcept {
    return static_cast<uint16_t>(plan_.engine.channel + index);
  }
  // Channel index k's medium, as it describes itself.
  [[nodiscard]] const std::string& described(uint32_t index) const noexcept { return described_[index]; }
  [[nodiscard]] Door* door() noexcept { return door_.get(); }
  // The counters file (null without one) and its sections: the engines'
  // totals (0, 1), the application's extra ones from 2.
  [[nodiscard]] stats::CountersFile* counters_file() noexcept { return file_ ? &*file_ : nullptr; }
  // The shared endpoint's counters, mirrored (for a result file).
  [[nodiscard]] const stats::MirroredCounters& door_counters() const noexcept { return *door_mirror_; }
  // A result file's content for this run (after run()): the plan's role,
  // name and medium, the session, every channel's counters and books (the
  // totals too where there are several), the shared endpoint's counters.
  [[nodiscard]] RunResult result(const Outcome& o) const {
    RunResult r;
    r.role = plan_.counters.role;
    r.name = plan_.counters.name;
    r.medium = plan_.counters.medium;
    r.session = plan_.engine.session;
    for (const auto& l : lanes_) {
      r.last_sequence += l->end_.last_sequence;
      r.counters.insert(r.counters.end(), l->end_.counters.begin(), l->end_.counters.end());
      r.books.insert(r.books.end(), l->end_.books.begin(), l->end_.books.end());
    }
    if (many()) {  // the totals, as a one-channel publisher writes them
      stats::total_channels(feed::PublisherCounters::kInfo, "pub", r.counters);
      stats::total_channels(feed::ControlCounters::kInfo, "ctl", r.counters);
    }
    if (door_mirror_) door_mirror_->dump(r.counters);
    std::sort(r.books.begin(), r.books.end(), [](const auto& a, const auto& b) { return a.instrument < b.instrument; });
    r.messages = o.published;
    r.seconds = static_cast<double>(o.end_ns - o.t0) / 1e9;
    return r;
  }
  [[nodiscard]] size_t subscribed() const noexcept {
    size_t v = 0;
    for (const auto& l : lanes_) v += l->subscribed.load(std::memory_order_relaxed);
    return v;
  }

 private:
  [[nodiscard]] bool stopping() const noexcept {
    return failed_.load(std::memory_order_acquire) || (plan_.stop && plan_.stop->requested());
  }
  // No clean end: a thread failed, or the stop was asked for twice.
  [[nodiscard]] bool cutting() const noexcept {
    return failed_.load(std::memory_order_acquire) || (plan_.stop && plan_.stop->urgent());
  }
  [[nodiscard]] bool many() const noexcept { return plan_.map.count() > 1; }
  // Serves the shared endpoint for about ns (sleeps without one).
  void wait(uint64_t ns) {
    if (door_) (void)door_->wait(ns);
    else sleep_ns(ns);
  }

  // Waits for every thread to reach a phase; false when one finished (failed) first or a stop came.
  bool wait_phase(const std::atomic<uint32_t>& phase) {
    while (phase.load(std::memory_order_acquire) < lanes_.size()) {
      if (finished_.load(std::memory_order_acquire) > 0 || stopping()) return false;
      sleep_ns(200 * kNsPerUs);
    }
    return finished_.load(std::memory_order_acquire) == 0;
  }
  Outcome stopped_early() {
    join(true);
    rethrow();
    Outcome o;
    o.stopped = true;
    return o;
  }
  void rethrow() {
    for (auto& l : lanes_)
      if (!l->error_.empty()) {
        if (file_) file_->set_state(stats::ProcessState::kFailed);
        throw Error(l->error_);
      }
  }
  // Ends (stop) and joins every thread; they wait for release before
  // tearing their channels down, so the counters are read before they go.
  void join(bool stop) {
    if (stop) failed_.store(true, std::memory_order_release);
    release_.store(true, std::memory_order_release);
    for (auto& l : lanes_)
      if (l->th_.joinable()) l->th_.join();
  }

  void build_counters_file(uint32_t n) {
    std::vector<stats::Section> sections{{"pub", feed::PublisherCounters::kInfo},
                                         {"ctl", feed::ControlCounters::kInfo}};
    for (const auto& x : plan_.counters.extra) sections.push_back(x);
    run_at_ = sections.size();
    sections.push_back({"run", RunCounters::kInfo});
    pub_at_.assign(n, 0);
    ctl_at_.assign(n, 0);
    for (auto& l : lanes_)
      for (size_t i = 0; i < l->channels_.size(); ++i) {
        const uint32_t k = l->channels_[i];
        described_[k] = l->described_[i];
        if (many()) {
          pub_at_[k] = sections.size();
          sections.push_back({stats::channel_prefix("pub", channel_id(k)), feed::PublisherCounters::kInfo});
          ctl_at_[k] = sections.size();
          sections.push_back({stats::channel_prefix("ctl", channel_id(k)), feed::ControlCounters::kInfo});
        }
        mirrors_.emplace_back(l->groups_[i], many() ? "@" + std::to_string(channel_id(k)) : std::string());
        mirrors_.back().add_sections(sections);
      }
    std::vector<media::CounterGroup> door_groups;
    if (door_ && !std::is_same_v<Door, NoDoor>) door_groups.push_back(door_->counter_group());
    door_mirror_.emplace(std::move(door_groups));
    door_mirror_->add_sections(sections);
    where_.resize(n);
    if (plan_.counters.name.empty()) return;
    // Each channel's subscribers in rows of their own: a channel's thread
    // writes its slice alone.
    constexpr size_t kRows = feed::SubscriberTable::kRowsPerChannel;
    stats::TableSpec tables;
    tables.subscriber_rows = n * kRows;
    file_.emplace(plan_.counters.role, plan_.counters.name, plan_.counters.medium, sections,
                  std::vector<std::string>{}, tables);
    for (uint32_t k = 0; k < n; ++k) {
      tables_.push_back(std::make_unique<feed::SubscriberTable>(file_->subscriber_rows().slice(k * kRows, kRows)));
      where_[k] = many() ? feed::PublisherAgentCounters{file_->section<feed::PublisherCounters>(pub_at_[k]),
                                                       file_->section<feed::ControlCounters>(ctl_at_[k])}
                         : feed::PublisherAgentCounters{file_->section<feed::PublisherCounters>(0),
                                                        file_->section<feed::ControlCounters>(1)};
      where_[k].subscribers = tables_.back().get();
    }
  }

  void refresh(uint64_t now) {
    if (file_) {
      file_->touch(now);
      for (auto& m : mirrors_) m.refresh(*file_);
      door_mirror_->refresh(*file_);
      if (many()) {
        std::vector<Counter*> pubs, ctls;
        for (uint32_t k = 0; k < plan_.map.count(); ++k) {
          pubs.push_back(file_->section_base(pub_at_[k]));
          ctls.push_back(file_->section_base(ctl_at_[k]));
        }
        stats::sum_channels(feed::PublisherCounters::kInfo, file_->section_base(0), pubs);
        stats::sum_channels(feed::ControlCounters::kInfo, file_->section_base(1), ctls);
      }
      uint64_t progress = 0, control_ns = 0;
      for (const auto& l : lanes_) {
        progress += l->progress.load(std::memory_order_relaxed);
        control_ns += l->control_ns.load(std::memory_order_relaxed);
      }
      const uint64_t t0 = t0_.load(std::memory_order_acquire);
      auto* run = file_->section<RunCounters>(run_at_);
      run->elapsed_ms.set(t0 && now > t0 ? (now - t0) / kNsPerMs : 0);
      run->progress.set(progress);
      run->control_clients.set(file_->section<feed::ControlCounters>(1)->clients_connected.get());
      run->control_time_us.set(control_ns / kNsPerUs);
    }
    if (hooks_.refresh) hooks_.refresh(file_ ? &*file_ : nullptr, now);
  }

  template <class Ready>
  bool wait_until(Ready&& ready) const {
    while (!ready()) {
      if (stopping()) return false;
      sleep_ns(200 * kNsPerUs);
    }
    return true;
  }

  void run_lane(Lane& lane) {
    // Outside the try: whatever happens, the media (whose counters the
    // conductor mirrors) live until it releases them. Teardown: the agents
    // (channels), then the media not yet handed to them.
    std::vector<std::unique_ptr<Medium>> media;
    std::optional<Channels> held;
    try {
      if (lane.cpu_ >= 0) pin_this_thread(lane.cpu_);
      for (uint32_t k : lane.channels_) {
        auto open = [&] { return open_(k, door_ ? inboxes_[k] : Inbox{}); };
        media.push_back(many() ? with_context(fmt::format("channel {}", channel_id(k)), open) : open());
        lane.described_.push_back(media.back()->describe());
        lane.groups_.push_back(media.back()->counter_groups());
      }
      media_built_.fetch_add(1, std::memory_order_release);
      if (!wait_until([&] { return file_ready_.load(std::memory_order_acquire); })) return lane_done();

      auto& channels = held.emplace(plan_.map);
      lane.publisher_ = &channels;
      for (size_t i = 0; i < lane.channels_.size(); ++i) {
        const uint32_t k = lane.channels_[i];
        feed::PublisherConfig pc = plan_.engine;
        pc.channel = channel_id(k);
        channels.add(k, std::move(media[i]), pc, plan_.control, where_[k], plan_.agent);
      }
      agents_built_.fetch_add(1, std::memory_order_release);
      // Serves subscriptions until go (plan.wait_subscribers). A stop
      // request brings go at once: the session still begins and ends, so
      // subscribers already here are told it ended.
      while (!go_.load(std::memory_order_acquire)) {
        if (cutting()) return lane_done();
        channels.do_work(monotonic_ns());
        lane.subscribed.store(channels.subscribed_clients(), std::memory_order_relaxed);
        sleep_ns(kNsPerMs);
      }
      lane.paced = hooks_.publish(lane);
      lane.store_report();

      // The end of session (a medium may hold it back a little: one second
      // at most), then recovery served until no channel of this publisher
      // has had a client for linger_quiet_ns, or linger_ns.
      lane.handed_over_ = hooks_.hand_over && plan_.stop && plan_.stop->requested() && !cutting() &&
                          hooks_.hand_over(lane);
      if (!lane.handed_over_ && !lane.abandoned_) {
        uint64_t t_end = monotonic_ns();
        while (!channels.end_session(t_end) && !cutting() && monotonic_ns() - t_end < kNsPerSec)
          t_end = monotonic_ns();
        auto stop = [&] { return cutting(); };
        feed::linger_rounds(t_end + plan_.linger_ns, plan_.linger_quiet_ns, 200 * kNsPerUs, stop, [&](uint64_t now) {
          lane.clients.store(channels.serve_recovery(now), std::memory_order_relaxed);
          size_t all = 0;
          for (const auto& l : lanes_) all += l->clients.load(std::memory_order_relaxed);
          return all;
        });
      }
      lane.clients.store(0, std::memory_order_relaxed);
      record_end(lane);
      if (hooks_.finished) hooks_.finished(lane);
    } catch (const std::exception& e) {
      lane.error_ = lane.channels_.size() == 1 || plan_.map.count() == 1
                        ? std::string(e.what())
                        : fmt::format("publishing thread {}: {}", lane.thread_, e.what());
      failed_.store(true, std::memory_order_release);
    }
    lane_done();
  }
  void record_end(Lane& lane) {
    auto& ch = lane.publisher();
    typename Lane::End& out = lane.end_;
    for (size_t i = 0; i < ch.size(); ++i) {
      const auto& a = ch.agent(i);
      if (a.core().last_reject() != book::ApplyResult::kOk) out.refused = book::to_string(a.core().last_reject());
      const std::string at = many() ? "@" + std::to_string(a.core().config().channel) : "";
      out.last_sequence += a.core().last_committed();
      stats::dump_counters(a.core().counters(), "pub" + at + ".", out.counters);
      stats::dump_counters(a.control().counters(), "ctl" + at + ".", out.counters);
      stats::MirroredCounters(ch.medium(i).counter_groups(), at).dump(out.counters);
      const auto published_here = [&](uint32_t inst, const book::OrderBook& b) {
        return plan_.map.of(inst) == ch.index(i) && b.instrument_seq() > 0;
      };
      add_book_digests(a.core().books(), published_here, out.books);
    }
  }
  void lane_done() {
    finished_.fetch_add(1, std::memory_order_release);
    while (!release_.load(std::memory_order_acquire)) sleep_ns(kNsPerMs);
  }

  PublisherPlan plan_;
  std::unique_ptr<Door> door_;  // early: the media hold its inboxes, so it goes after them
  std::vector<Inbox> inboxes_;  // by channel index
  OpenMedium open_;
  Hooks hooks_;
  bool ran_ = false;
  std::optional<stats::CountersFile> file_;
  std::vector<stats::MirroredCounters> mirrors_;
  std::optional<stats::MirroredCounters> door_mirror_;
  std::vector<size_t> pub_at_, ctl_at_;
  std::vector<feed::PublisherAgentCounters> where_;
  std::vector<std::unique_ptr<feed::SubscriberTable>> tables_;  // by channel index, rows in file_
  std::vector<std::string> described_;
  // Phases every thread and the conductor step through together.
  std::atomic<uint32_t> media_built_{0}, agents_built_{0}, finished_{0};
  std::atomic<bool> file_ready_{false}, go_{false}, failed_{false}, release_{false};
  std::atomic<uint64_t> t0_{0};
  size_t run_at_ = 0;  // the "run" section's index in the counters file
  std::vector<std::unique_ptr<Lane>> lanes_;  // last: joined (destructor) before anything above goes
};

}  // namespace mdcast::runtime
