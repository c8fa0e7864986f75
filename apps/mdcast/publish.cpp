// `mdcast publish`: the library's PublisherChannels over the medium the
// settings name, on publisher.threads threads (each pinned where
// publisher.cpus says, each publishing its share of the channels), with a
// counters file, a result file and a clean end on SIGINT/SIGTERM. The duty
// loop is the library's (feed::run_paced); this file starts, waits and
// reports.
//
// A publisher of several channels over shm or UDP listens on one control
// endpoint for all of them (media::ControlFrontDoor, served by the main
// thread between counter refreshes); each channel's control server adopts
// the connections routed to it.
//
// Each thread builds its channels' media itself, after pinning, so that what
// they allocate (rings, queues) is first touched on the thread's own core
// and memory node. The main thread creates the counters file once every
// medium exists (its sections mirror theirs), then lets the threads build
// their agents over it and start together.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/core/affinity.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/channel_agents.hpp"
#include "mdcast/feed/paced_loop.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "registry.hpp"
#include "result.hpp"
#include "runners.hpp"
#include "settings_values.hpp"

namespace mdcast::app {
namespace {

struct GeneratorSource {
  book::Generator gen;
  bool next(wire::Message& m) noexcept {
    gen.next(m);
    return true;
  }
};

// One publishing thread: what it publishes, what it tells the main thread
// while it runs (atomics, read a few times a second), and what it did.
struct Lane {
  std::vector<uint32_t> channels;  // channel indexes
  std::vector<uint32_t> ids;       // the synthetic instruments on them
  int cpu = -1;
  std::thread thread;
  // Written by the thread before it signals the phase, read after.
  std::vector<std::string> described;
  std::vector<std::vector<media::CounterGroup>> groups;  // per channel, its medium's
  std::string error;
  feed::PaceResult paced;
  std::string reject;
  std::vector<BookDigest> books;
  std::vector<std::pair<std::string, uint64_t>> counters;
  uint64_t last_sequence = 0;
  // Live.
  std::atomic<uint64_t> generated{0}, control_ns{0};
  std::atomic<size_t> subscribed{0};
};

// The phases every thread and the main thread step through together.
struct Start {
  std::atomic<uint32_t> media_built{0}, agents_built{0}, finished{0};
  std::atomic<bool> file_ready{false}, go{false}, failed{false};
  // The main thread is done with every channel's counters (its last
  // refresh mirrored the media's): only then may a thread tear its channels down.
  std::atomic<bool> release{false};
  std::atomic<uint64_t> t0{0};
  // Set by the main thread before file_ready: where channel index k's engine counters live.
  std::vector<feed::PublisherAgentCounters> where;
};

// The one control endpoint of a publisher of several channels (E::Door:
// a stream listener for shm and UDP, an rdma_cm listener for verbs), on the
// main thread.
template <class E>
struct SharedControl {
  std::unique_ptr<typename E::Door> door;
  std::vector<decltype(door->add_channel(0))> inboxes;  // by channel index

  void open(const Settings& s, uint32_t channels) {
    if (channels < 2) return;
    door = E::open_door(s);
    for (uint32_t k = 0; k < channels; ++k) inboxes.push_back(door->add_channel(static_cast<uint16_t>(s.feed.channel + k)));
  }
  // Channel index k's settings, with the shared endpoint where there is one.
  Settings channel(const Settings& s, uint32_t k) const {
    Settings c = channel_settings<E>(s, k);
    if (door) E::use_door(c, *door, inboxes[k]);
    return c;
  }
  // Waits about ns, serving the endpoint meanwhile.
  void wait(uint64_t ns) {
    if (door) E::door_wait(*door, ns);
    else sleep_ns(ns);
  }
  [[nodiscard]] std::vector<media::CounterGroup> counters() const {
    if (!door) return {};
    return {E::door_counters(*door)};
  }
};

template <class Pred>
bool wait_for(const Start& st, Pred&& ready) {
  while (!ready()) {
    if (st.failed.load(std::memory_order_acquire) || g_stop) return false;
    sleep_ns(200 * kNsPerUs);
  }
  return true;
}

template <class E>
void run_lane(Lane& lane, uint32_t t, Start& st, const Settings& s, const SharedControl<E>& shared,
              const feed::ChannelMap& map, uint64_t session) {
  using Medium = typename E::Publisher;
  // Outside the try: whatever happens, the media (whose counters the main
  // thread mirrors) live until it releases them. Teardown: the agents
  // (channels), then the media not yet handed to them.
  std::vector<std::unique_ptr<Medium>> media;
  std::optional<feed::PublisherChannels<Medium>> held;
  try {
    if (lane.cpu >= 0) pin_this_thread(lane.cpu);
    for (uint32_t k : lane.channels) {
      auto open = [&] { return E::publisher(shared.channel(s, k), session); };
      media.push_back(s.feed.channels > 1 ? with_context(fmt::format("channel {}", s.feed.channel + k), open) : open());
      lane.described.push_back(media.back()->describe());
      lane.groups.push_back(media.back()->counter_groups());
    }
    st.media_built.fetch_add(1, std::memory_order_release);
    if (!wait_for(st, [&] { return st.file_ready.load(std::memory_order_acquire); })) return;

    auto& channels = held.emplace(map);
    for (size_t i = 0; i < lane.channels.size(); ++i) {
      const uint32_t k = lane.channels[i];
      feed::PublisherConfig pc = publisher_config(s, session);
      pc.channel = static_cast<uint16_t>(s.feed.channel + k);
      channels.add(k, std::move(media[i]), pc, control_config(s), st.where[k], {s.feed.control_poll_ns});
    }
    st.agents_built.fetch_add(1, std::memory_order_release);
    // Serve subscriptions until the main thread says go (publisher.wait_subscribers).
    while (!st.go.load(std::memory_order_acquire)) {
      if (st.failed.load(std::memory_order_acquire) || g_stop) return;
      channels.do_work(monotonic_ns());
      lane.subscribed.store(channels.subscribed_clients(), std::memory_order_relaxed);
      sleep_ns(kNsPerMs);
    }

    const uint64_t t0 = st.t0.load(std::memory_order_acquire);
    book::GeneratorConfig gc = generator_config(s);
    gc.seed = s.pub.seed + t;
    if (lane.ids.size() != s.pub.instruments) gc.ids = lane.ids;
    feed::Pace pace;
    pace.rate = s.pub.rate * static_cast<double>(lane.ids.size()) / std::max<uint32_t>(1, s.pub.instruments);
    pace.start_ns = t0;
    pace.end_ns = t0 + s.pub.duration_ns;
    pace.idle = s.feed.idle;
    struct Hooks {
      Lane& lane;
      const Start& st;
      feed::PublisherChannels<Medium>& ch;
      const book::Generator* gen;
      uint64_t last = 0;
      bool on_round(uint64_t now, uint64_t) noexcept {
        if (now - last >= 100 * kNsPerMs) {
          last = now;
          lane.generated.store(gen ? gen->produced() : 0, std::memory_order_relaxed);
          uint64_t ns = 0;
          for (size_t i = 0; i < ch.size(); ++i) ns += ch.agent(i).control_time_ns();
          lane.control_ns.store(ns, std::memory_order_relaxed);
        }
        return !g_stop && !st.failed.load(std::memory_order_relaxed);
      }
    };
    if (!lane.ids.empty()) {
      GeneratorSource src{book::Generator(gc)};
      Hooks hooks{lane, st, channels, &src.gen};
      lane.paced = feed::run_paced(channels, src, pace, hooks);
      lane.generated.store(src.gen.produced(), std::memory_order_relaxed);
      if (lane.paced.refused != feed::PublishResult::kOk)
        for (size_t i = 0; i < channels.size(); ++i)
          if (channels.agent(i).core().last_reject() != book::ApplyResult::kOk)
            lane.reject = book::to_string(channels.agent(i).core().last_reject());
    } else {
      // Channels no synthetic instrument is on: heartbeats only, for the duration.
      while (!g_stop && monotonic_ns() < pace.end_ns) {
        channels.do_work(monotonic_ns());
        sleep_ns(kNsPerMs);
      }
      lane.paced.end_ns = monotonic_ns();
    }

    // End the session, then keep serving recovery until every subscriber has
    // gone (they leave once caught up) or the linger time is up.
    uint64_t t_end = monotonic_ns();
    while (!channels.end_session(t_end) && !g_stop && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
    channels.linger(t_end + s.pub.linger_ns, 300 * kNsPerMs, 200 * kNsPerUs, [] { return g_stop != 0; });

    for (size_t i = 0; i < channels.size(); ++i) {
      const auto& a = channels.agent(i);
      const std::string at = s.feed.channels > 1 ? "@" + std::to_string(a.core().config().channel) : "";
      lane.last_sequence += a.core().last_committed();
      dump_counters(a.core().counters(), "pub" + at + ".", lane.counters);
      dump_counters(a.control().counters(), "ctl" + at + ".", lane.counters);
      MirroredCounters(channels.medium(i).counter_groups(), at).dump(lane.counters);
      const auto& books = a.core().books();
      for (uint32_t inst = 0; inst < books.max_instruments(); ++inst)
        if (map.of(inst) == channels.index(i) && books.book(inst).instrument_seq() > 0)
          lane.books.push_back({inst, books.book(inst).instrument_seq(), books.book(inst).checksum()});
    }
  } catch (const std::exception& e) {
    lane.error = lane.channels.size() == 1 || s.feed.channels == 1
                     ? std::string(e.what())
                     : fmt::format("publishing thread {}: {}", t, e.what());
    st.failed.store(true, std::memory_order_release);
  }
  st.finished.fetch_add(1, std::memory_order_release);
  while (!st.release.load(std::memory_order_acquire)) sleep_ns(kNsPerMs);
}

template <class E>
int publish(Settings& s) {
  const feed::ChannelMap map = channel_map(s);
  const uint64_t session = pick_session(s);
  const uint32_t n = map.count();
  const uint32_t threads = publishing_threads(s);
  publisher_config(s, session);  // refuses bad settings before any thread starts
  const auto split = feed::channels_per_thread(n, threads);

  std::vector<std::unique_ptr<Lane>> lanes;
  for (uint32_t t = 0; t < threads; ++t) {
    auto& l = *lanes.emplace_back(std::make_unique<Lane>());
    l.channels = split[t];
    for (uint32_t i = 0; i < s.pub.instruments; ++i)
      if (std::find(l.channels.begin(), l.channels.end(), map.of(i)) != l.channels.end()) l.ids.push_back(i);
    l.cpu = s.pub.cpus.empty() ? -1 : s.pub.cpus[t];
  }
  if (s.feed.idle != IdleMode::kBlock && s.feed.idle != IdleMode::kSleep) {
    std::vector<BusyThread> busy;
    for (uint32_t t = 0; t < threads; ++t) busy.push_back({fmt::format("publishing thread {}", t), lanes[t]->cpu});
    for (const std::string& w : placement_warnings(busy)) fmt::print(stderr, "mdcast publish: warning: {}\n", w);
  }

  // Before the threads (their media take its inboxes); gone after them.
  SharedControl<E> shared;
  shared.open(s, n);
  Start st;
  st.where.resize(n);
  // Ends and joins every thread however this ends: they watch st.failed and
  // g_stop, and wait for st.release before tearing their channels down.
  struct Joiner {
    std::vector<std::unique_ptr<Lane>>& lanes;
    Start& st;
    void join(bool stop) {
      if (stop) st.failed.store(true, std::memory_order_release);
      st.release.store(true, std::memory_order_release);
      for (auto& l : lanes)
        if (l->thread.joinable()) l->thread.join();
    }
    ~Joiner() { join(true); }
  } joiner{lanes, st};
  for (uint32_t t = 0; t < threads; ++t)
    lanes[t]->thread = std::thread([&, t] { run_lane<E>(*lanes[t], t, st, s, shared, map, session); });
  auto first_error = [&] {
    for (auto& l : lanes)
      if (!l->error.empty()) return l->error;
    return std::string("a publishing thread failed");
  };
  auto all = [&](const std::atomic<uint32_t>& c) { return c.load(std::memory_order_acquire) + 0 >= threads; };
  const auto finished_early = [&] { return st.finished.load(std::memory_order_acquire) > 0; };
  if (!wait_for(st, [&] { return all(st.media_built) || finished_early(); }) || finished_early()) {
    joiner.join(true);
    if (g_stop) return exit_code::kInterrupted;
    throw Error(first_error());
  }

  // Sections: with one channel as ever; with several, totals under the plain
  // names and each channel's under "<prefix>@<channel id>".
  const bool many = n > 1;
  std::vector<stats::Section> sections{
      {"pub", feed::PublisherCounters::kInfo}, {"ctl", feed::ControlCounters::kInfo}, {"app", AppPubCounters::kInfo}};
  std::vector<size_t> pub_at(n), ctl_at(n);
  std::vector<MirroredCounters> mirrored;
  std::vector<std::string> described(n);
  for (auto& l : lanes)
    for (size_t i = 0; i < l->channels.size(); ++i) {
      const uint32_t k = l->channels[i];
      const uint16_t id = static_cast<uint16_t>(s.feed.channel + k);
      described[k] = l->described[i];
      if (many) {
        pub_at[k] = sections.size();
        sections.push_back({channel_prefix("pub", id), feed::PublisherCounters::kInfo});
        ctl_at[k] = sections.size();
        sections.push_back({channel_prefix("ctl", id), feed::ControlCounters::kInfo});
      }
      mirrored.emplace_back(l->groups[i], many ? "@" + std::to_string(id) : std::string());
      mirrored.back().add_sections(sections);
    }
  // The shared control endpoint's, under "door".
  MirroredCounters door_counters(shared.counters());
  door_counters.add_sections(sections);
  stats::CountersFile cf("publisher", s.feed.name, std::string(E::kName), sections);
  // The threads write their engine counters into cf: on any way out they
  // stop before it goes.
  struct StopFirst {
    Joiner& j;
    ~StopFirst() { j.join(true); }
  } stop_first{joiner};
  auto* app = cf.section<AppPubCounters>(2);
  for (uint32_t k = 0; k < n; ++k)
    st.where[k] = many ? feed::PublisherAgentCounters{cf.section<feed::PublisherCounters>(pub_at[k]),
                                                      cf.section<feed::ControlCounters>(ctl_at[k])}
                       : feed::PublisherAgentCounters{cf.section<feed::PublisherCounters>(0),
                                                      cf.section<feed::ControlCounters>(1)};
  st.file_ready.store(true, std::memory_order_release);
  if (!wait_for(st, [&] { return all(st.agents_built) || finished_early(); }) || finished_early()) {
    joiner.join(true);
    if (g_stop) return exit_code::kInterrupted;
    throw Error(first_error());
  }

  app->target_rate.set(static_cast<uint64_t>(s.pub.rate));
  cf.set_state(stats::ProcessState::kRunning);
  const std::string where = many ? fmt::format("{} channels ({} to {}) on {} thread{}{}; channel {}: {}", n,
                                               s.feed.channel, s.feed.channel + n - 1, threads, threads == 1 ? "" : "s",
                                               s.pub.cpus.empty() ? "" : " pinned to CPUs " + format_cpu_list(s.pub.cpus),
                                               s.feed.channel, described[0])
                                 : described[0] + (s.pub.cpus.empty() ? "" : "; pinned to CPU " + format_cpu_list(s.pub.cpus));
  fmt::print(stderr, "mdcast publish: {}; session {:016x}; {:.0f} msg/s over {} instruments for {}\n", where, session,
             s.pub.rate, s.pub.instruments, format_duration(s.pub.duration_ns));

  auto refresh = [&](uint64_t now, uint64_t t0) {
    cf.touch(now);
    for (auto& m : mirrored) m.refresh(cf);
    door_counters.refresh(cf);
    if (many) {
      std::vector<Counter*> pubs, ctls;
      for (uint32_t k = 0; k < n; ++k) {
        pubs.push_back(cf.section_base(pub_at[k]));
        ctls.push_back(cf.section_base(ctl_at[k]));
      }
      sum_channels(feed::PublisherCounters::kInfo, cf.section_base(0), pubs);
      sum_channels(feed::ControlCounters::kInfo, cf.section_base(1), ctls);
    }
    uint64_t generated = 0, control_ns = 0;
    for (auto& l : lanes) {
      generated += l->generated.load(std::memory_order_relaxed);
      control_ns += l->control_ns.load(std::memory_order_relaxed);
    }
    app->generated.set(generated);
    app->control_clients.set(cf.section<feed::ControlCounters>(1)->clients_connected.get());
    app->control_time_us.set(control_ns / kNsPerUs);
    app->elapsed_ms.set(t0 && now > t0 ? (now - t0) / kNsPerMs : 0);
  };

  if (s.pub.wait_subscribers) {
    // Subscribers that are there from the first datagram need no recovery:
    // the demo and tests start this way so a clean run shows zero gaps. A
    // subscriber counts once per channel it takes.
    const uint64_t give_up = monotonic_ns() + 60 * kNsPerSec;
    auto subscribed = [&] {
      size_t v = 0;
      for (auto& l : lanes) v += l->subscribed.load(std::memory_order_relaxed);
      return v;
    };
    while (!g_stop && subscribed() < s.pub.wait_subscribers) {
      const uint64_t now = monotonic_ns();
      if (st.failed.load(std::memory_order_acquire)) break;
      if (now > give_up)
        fail("only {} of {} subscriptions arrived within 60 s", subscribed(), s.pub.wait_subscribers);
      refresh(now, 0);
      shared.wait(kNsPerMs);
    }
  }
  const uint64_t t0 = monotonic_ns();
  st.t0.store(t0, std::memory_order_release);
  st.go.store(true, std::memory_order_release);
  while (st.finished.load(std::memory_order_acquire) < threads) {
    refresh(monotonic_ns(), t0);
    shared.wait(100 * kNsPerMs);
  }
  refresh(monotonic_ns(), t0);
  joiner.join(false);
  for (auto& l : lanes)
    if (!l->error.empty()) {
      cf.set_state(stats::ProcessState::kFailed);
      throw Error(l->error);
    }
  cf.set_state(stats::ProcessState::kFinished);

  RunResult r;
  r.role = "publisher";
  r.name = s.feed.name;
  r.medium = E::kName;
  r.session = session;
  uint64_t end_ns = t0;
  for (auto& l : lanes) {
    if (l->paced.refused != feed::PublishResult::kOk)
      fail("generator message refused by the publisher ({}): a bug; please report it", l->reject);
    r.messages += l->paced.published;
    r.last_sequence += l->last_sequence;
    end_ns = std::max(end_ns, l->paced.end_ns);
    r.counters.insert(r.counters.end(), l->counters.begin(), l->counters.end());
    r.books.insert(r.books.end(), l->books.begin(), l->books.end());
  }
  if (many) {
    // The totals, as a one-channel publisher writes them.
    const auto* pub = cf.section<feed::PublisherCounters>(0);
    const auto* ctl = cf.section<feed::ControlCounters>(1);
    dump_counters(*pub, "pub.", r.counters);
    dump_counters(*ctl, "ctl.", r.counters);
  }
  door_counters.dump(r.counters);
  std::sort(r.books.begin(), r.books.end(), [](const auto& a, const auto& b) { return a.instrument < b.instrument; });
  r.seconds = static_cast<double>(end_ns - t0) / 1e9;
  if (!s.pub.result.empty()) write_result(s.pub.result, r);
  fmt::print(stderr,
             "mdcast publish: {} messages in {} datagrams over {:.2f} s ({:.0f} msg/s); {} retransmit requests, {} "
             "snapshots served\n",
             r.messages, r.last_sequence, r.seconds, static_cast<double>(r.messages) / std::max(r.seconds, 1e-9),
             r.counter("ctl.retransmit_requests"), r.counter("ctl.snapshot_requests"));
  if (!g_stop)
    if (const std::string why = rate_shortfall(r, s.pub.rate, pacing_name(s.pub.pacing)); !why.empty())
      fmt::print(stderr, "mdcast publish: {}\n", why);
  return g_stop ? exit_code::kInterrupted : exit_code::kOk;
}

}  // namespace

uint32_t publishing_threads(const Settings& s) {
  const uint32_t t = s.pub.threads ? s.pub.threads : s.pub.cpus.empty() ? 1 : static_cast<uint32_t>(s.pub.cpus.size());
  if (t > s.feed.channels)
    fail_usage("{} publishing threads{} for {} channels: a thread publishes at least one channel (raise feed.channels "
               "or lower publisher.threads)",
               t, s.pub.threads ? "" : fmt::format(" (one per publisher.cpus entry)"), s.feed.channels);
  if (!s.pub.cpus.empty() && s.pub.cpus.size() != t)
    fail_usage("publisher.cpus lists {} CPUs for {} publishing threads: one CPU per thread", s.pub.cpus.size(), t);
  return t;
}

int run_publish(Settings& s) {
  return with_medium(s.feed.medium, [&](auto entry) { return publish<decltype(entry)>(s); });
}

}  // namespace mdcast::app
