// `mdcast replay FILE...`: flag handling and printing around the library's
// record::Replayer, which publishes a recording again through a publisher
// agent over any medium (docs/recording.md). Exit 1 (data lost) when it
// stopped at damage, 0 for a whole recording.
#include <fmt/format.h>

#include <optional>

#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/record/replayer.hpp"
#include "mdcast/runtime/publisher_runtime.hpp"
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

// The runtime's one lane runs the replayer; the runtime ends the session
// where the replay did (stopped or not: subscribers recover what they miss)
// and serves the linger; only a second stop request cuts that short.
template <class E>
int replay(Settings& s, const ReplayArgs& a) {
  using Runtime = runtime::PublisherRuntime<typename E::Publisher, typename E::Door>;
  const record::ReplayOptions o = replay_options(a);
  const uint64_t session = pick_session(s);
  runtime::PublisherPlan plan = publisher_plan(s, session, E::kName);
  plan.counters.extra = {{"rep", record::ReplayCounters::kInfo}};
  Runtime rt(plan, nullptr, [&](uint32_t, auto) { return E::publisher(s, session); });

  if (o.from.seq)
    if (const auto at = record::locate(o.files, o.from.seq))
      fmt::print(stderr, "mdcast replay: --from {}: in {} after offset {} (indexed sequence {}); the books before it "
                         "are rebuilt from the recording\n", o.from.seq, at->file, at->entry.offset,
                 at->entry.sequence);
  record::ReplayCounters own;
  record::ReplayCounters* rc = &own;
  std::optional<record::Replayer> replay;
  typename Runtime::Hooks hooks;
  hooks.started = [&](Runtime& r) {
    fmt::print(stderr, "mdcast replay: {}; session {:016x}; {} file(s) from {} at {}{}\n", r.described(0), session,
               o.files.size(), o.files.front(),
               o.speed > 0 ? fmt::format("{}x the recorded pace", o.speed) : std::string("full speed"),
               o.from.any() ? " from " + a.from : std::string());
  };
  hooks.publish = [&](typename Runtime::Lane& lane) {
    if (stats::CountersFile* cf = rt.counters_file()) rc = cf->template section<record::ReplayCounters>(2);
    replay.emplace(o, rc);
    struct Work {  // a stop request ends the replay where it is
      typename Runtime::Lane& lane;
      bool on_work(uint64_t now) noexcept {
        lane.report(now);
        return !lane.stopping();
      }
    } work{lane};
    replay->run(lane.publisher().agent(0), work);
    return feed::PaceResult{replay->published(), monotonic_ns()};
  };
  const auto out = rt.run(std::move(hooks));
  if (!replay) return exit_code::kInterrupted;  // stopped before it began
  const std::string& damage = replay->damage();
  if (!damage.empty())
    fmt::print(stderr, "mdcast replay: damaged recording: {}; everything before it was replayed (through recorded "
                       "sequence {})\n", damage, replay->last_sequence());
  if (!replay->note().empty()) fmt::print(stderr, "mdcast replay: {}\n", replay->note());
  if (o.from.any() && !replay->started() && damage.empty())
    fmt::print(stderr, "mdcast replay: --from {}: the recording ends before it (last sequence {})\n", a.from,
               replay->last_sequence());

  RunResult res = rt.result(out);
  res.outcome = damage.empty() ? "ok" : "error: " + damage;
  stats::dump_counters(*rc, "rep.", res.counters);
  if (!s.pub.result.empty()) write_result(s.pub.result, res);
  fmt::print(stderr, "mdcast replay: {} recorded datagrams ({} messages{}) republished as {} datagrams in {:.2f} s\n",
             rc->datagrams.get(), replay->published(),
             rc->image_messages.get() ? fmt::format(", after a book image of {}", rc->image_messages.get()) : "",
             res.last_sequence, res.seconds);
  if (out.cut) {
    fmt::print(stderr, "mdcast replay: stopped twice: the linger was cut short\n");
    return exit_code::kInterrupted;
  }
  if (!damage.empty() || !replay->note().empty()) return exit_code::kDataLost;
  if (out.stopped) {
    fmt::print(stderr, "mdcast replay: stopped: the session was ended at sequence {} and recovery served\n",
               res.last_sequence);
    return exit_code::kOk;
  }
  return replay->started() ? exit_code::kOk : exit_code::kUsage;
}

}  // namespace

int run_replay(Settings& s, const ReplayArgs& a) {
  if (a.files.empty()) fail_usage("replay: a recording is required (mdcast replay FILE.pcap or BASE)");
  // The arguments are checked before a medium is set up (a ring, sockets).
  (void)replay_options(a);
  if (s.feed.channels > 1)
    fail_usage("replay publishes one channel (a recording is one channel's), not feed.channels {}",
               s.feed.channels);
  return with_medium(s.feed.medium, [&](auto entry) { return replay<decltype(entry)>(s, a); });
}

}  // namespace mdcast::app
