// `mdcast replay FILE...`: flag handling and printing around the library's
// record::Replayer, which publishes a recording again through a publisher
// agent over any medium (docs/recording.md). Exit 1 (data lost) when it
// stopped at damage, 0 for a whole recording.
#include <fmt/format.h>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/record/replayer.hpp"
#include "mdcast/runtime/agent_result.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "record_commands.hpp"
#include "settings.hpp"
#include "runners.hpp"

namespace mdcast::app {

namespace {

// The replay's options from the command line; a bad one is the user's to fix.
record::ReplayOptions replay_options(const ReplayArgs& a) {
  record::ReplayOptions o;
  try {
    o.files = record::resolve_recording(a.files);
  } catch (const Error& e) {
    throw UsageError(e.with_context("replay"));
  }
  try {
    o.speed = record::parse_speed(a.speed);
    o.from = record::parse_from(a.from);
  } catch (const Error& e) {  // "--speed 'x': ..." names the flag
    throw UsageError(fmt::format("replay {}", e.what()));
  }
  return o;
}

template <class Medium>
int replay_loop(Settings& s, const ReplayArgs& a, Medium& medium, uint64_t session, std::string_view medium_name) {
  const record::ReplayOptions o = replay_options(a);
  MirroredCounters medium_counters(medium.counter_groups());
  std::vector<stats::Section> sections{{"pub", feed::PublisherCounters::kInfo},
                                       {"ctl", feed::ControlCounters::kInfo},
                                       {"rep", record::ReplayCounters::kInfo}};
  medium_counters.add_sections(sections);
  stats::CountersFile cf("publisher", s.feed.name, std::string(medium_name), sections);
  auto* rc = cf.section<record::ReplayCounters>(2);
  feed::PublisherAgent<Medium> agent(
      medium, publisher_config(s, session), control_config(s),
      {cf.section<feed::PublisherCounters>(0), cf.section<feed::ControlCounters>(1)}, {s.feed.control_poll_ns});
  record::Replayer replay(o, rc);

  struct Hooks {  // the counters file ten times a second; a stop request ends the replay where it is
    stats::CountersFile& cf;
    MirroredCounters& mc;
    uint64_t last = 0;
    bool on_work(uint64_t now, bool force = false) {
      if (force || now - last >= 100 * kNsPerMs) {
        last = now;
        cf.touch(now);
        mc.refresh(cf);
      }
      return !g_stop.requested();
    }
  } hooks{cf, medium_counters};

  if (o.from.seq)
    if (const auto at = record::locate(o.files, o.from.seq))
      fmt::print(stderr, "mdcast replay: --from {}: in {} after offset {} (indexed sequence {}); the books before it "
                         "are rebuilt from the recording\n", o.from.seq, at->file, at->entry.offset,
                 at->entry.sequence);
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast replay: {}; session {:016x}; {} file(s) from {} at {}{}\n", medium.describe(),
             agent.core().session(), o.files.size(), o.files.front(),
             o.speed > 0 ? fmt::format("{}x the recorded pace", o.speed) : std::string("full speed"),
             o.from.any() ? " from " + a.from : std::string());
  const uint64_t give_up = monotonic_ns() + 60 * kNsPerSec;
  while (!g_stop.requested() && agent.subscribed_clients() < s.pub.wait_subscribers) {
    const uint64_t now = monotonic_ns();
    if (now > give_up)
      fail("only {} of {} subscribers arrived within 60 s", agent.subscribed_clients(), s.pub.wait_subscribers);
    agent.do_work(now);
    hooks.on_work(now);
    sleep_ns(kNsPerMs);
  }
  const uint64_t t0 = monotonic_ns();
  if (!g_stop.requested()) replay.run(agent, hooks);
  const std::string& damage = replay.damage();
  if (!damage.empty())
    fmt::print(stderr, "mdcast replay: damaged recording: {}; everything before it was replayed (through recorded "
                       "sequence {})\n", damage, replay.last_sequence());
  if (!replay.note().empty()) fmt::print(stderr, "mdcast replay: {}\n", replay.note());
  if (o.from.any() && !replay.started() && damage.empty())
    fmt::print(stderr, "mdcast replay: --from {}: the recording ends before it (last sequence {})\n", a.from,
               replay.last_sequence());
  const double seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;

  // Stopped or not, the session ends where the replay did and subscribers
  // recover what they miss; only a second stop request cuts that short.
  uint64_t t_end = monotonic_ns();
  while (!agent.end_session(t_end) && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  agent.linger(t_end + s.pub.linger_ns, 300 * kNsPerMs, 200 * kNsPerUs, [&] {
    hooks.on_work(monotonic_ns(), true);
    return g_stop.urgent();
  });
  hooks.on_work(monotonic_ns(), true);
  cf.set_state(damage.empty() ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  RunResult res = runtime::publisher_result(agent);
  res.name = s.feed.name;
  res.medium = medium_name;
  res.outcome = damage.empty() ? "ok" : "error: " + damage;
  res.seconds = seconds;
  res.messages = replay.published();
  dump_counters(*rc, "rep.", res.counters);
  medium_counters.dump(res.counters);
  if (!s.pub.result.empty()) write_result(s.pub.result, res);
  fmt::print(stderr, "mdcast replay: {} recorded datagrams ({} messages{}) republished as {} datagrams in {:.2f} s\n",
             rc->datagrams.get(), replay.published(),
             rc->image_messages.get() ? fmt::format(", after a book image of {}", rc->image_messages.get()) : "",
             res.last_sequence, seconds);
  if (g_stop.urgent()) {
    fmt::print(stderr, "mdcast replay: stopped twice: the linger was cut short\n");
    return exit_code::kInterrupted;
  }
  if (!damage.empty() || !replay.note().empty()) return exit_code::kDataLost;
  if (g_stop.requested()) {
    fmt::print(stderr, "mdcast replay: stopped: the session was ended at sequence {} and recovery served\n",
               res.last_sequence);
    return exit_code::kOk;
  }
  return replay.started() ? exit_code::kOk : exit_code::kUsage;
}

}  // namespace

int run_replay(Settings& s, const ReplayArgs& a) {
  if (a.files.empty()) fail_usage("replay: a recording is required (mdcast replay FILE.pcap or BASE)");
  // The arguments are checked before a medium is set up (a ring, sockets).
  (void)replay_options(a);
  if (s.feed.channels > 1)
    fail_usage("replay publishes one channel (a recording is one channel's), not feed.channels {}",
               s.feed.channels);
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    const uint64_t session = pick_session(s);
    auto medium = E::publisher(s, session);
    return replay_loop(s, a, *medium, session, E::kName);
  });
}

}  // namespace mdcast::app
