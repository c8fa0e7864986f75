// `mdcast record`: flag handling and printing around the library's
// record::Recorder (a subscriber of every instrument whose delivery hook
// writes what it is delivered into pcap files, docs/recording.md).
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/record/recorder.hpp"
#include "mdcast/runtime/agent_result.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "record_commands.hpp"
#include "settings.hpp"
#include "runners.hpp"

namespace mdcast::app {

namespace {

// The recorder, saying what its subscriber meets.
struct RecordHandler : record::Recorder {
  using Recorder::Recorder;
  void on_event(feed::SubscriberEvent e, std::string_view detail) noexcept {
    fmt::print(stderr, "mdcast record: {}{}{}\n", to_string(e), detail.empty() ? "" : ": ", detail);
  }
};

template <class Medium>
int record_loop(Settings& s, record::WriterOptions wo, Medium& medium, std::string_view medium_name) {
  MirroredCounters medium_counters(medium.counter_groups());
  std::vector<stats::Section> sections{{"sub", feed::SubscriberCounters::kInfo},
                                       {"rec", record::RecordCounters::kInfo}};
  medium_counters.add_sections(sections);
  stats::CountersFile cf("recorder", s.feed.name, std::string(medium_name), sections);
  auto* rc = cf.section<record::RecordCounters>(1);
  RecordHandler rec(std::move(wo), rc);
  feed::SubscriberAgentOptions opts{s.feed.control_poll_ns, s.feed.idle};
  opts.idle_params = s.feed.idle_params;
  feed::SubscriberAgent<Medium, RecordHandler> agent(medium, subscriber_config(s), rec,
                                                     cf.section<feed::SubscriberCounters>(0), opts);
  rec.attach(agent.subscriber().books());
  const record::RecordingWriter& writer = rec.writer();
  cf.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast record: {}; into {}{}\n", medium.describe(), writer.current_file(),
             writer.options().rotate_bytes || writer.options().rotate_ns ? " (rotating)" : "");
  agent.start();
  const uint64_t t0 = monotonic_ns();
  std::string outcome = "ok";
  struct Hooks {
    decltype(agent)& ag;
    Medium& m;
    RecordHandler& rec;
    const Settings& s;
    uint64_t t0;
    std::string& outcome;
    stats::CountersFile& cf;
    MirroredCounters& mc;
    uint64_t last_stats = 0;
    bool on_control_round(uint64_t now) {
      // A control round is every control_poll_ns (100 us): the counters file a few times a second is enough.
      if (now - last_stats > 250 * kNsPerMs) {
        last_stats = now;
        cf.touch(now);
        mc.refresh(cf);
      }
      rec.learn_source(m);
      if (g_stop.requested()) return false;
      if (rec.failed()) {
        outcome = "error: " + rec.writer().error();
        return false;
      }
      return !subscriber_done(ag, s, t0, now, outcome);
    }
  } hooks{agent, medium, rec, s, t0, outcome, cf, medium_counters};
  agent.run(hooks);
  std::string write_error;
  try {
    rec.close();
  } catch (const Error& e) {
    write_error = e.what();
  }
  medium_counters.refresh(cf);
  const auto& sub = agent.subscriber();
  const bool clean = (outcome == "ok" || outcome == "duration") && write_error.empty() && rec.replayable();
  cf.set_state(clean ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  if (!s.sub.result.empty()) {
    RunResult r = runtime::subscriber_result(agent);
    r.name = s.feed.name;
    r.medium = medium_name;
    r.outcome = g_stop.requested() ? "interrupted" : outcome;
    r.seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;
    r.messages = rec.delivered();
    dump_counters(*rc, "rec.", r.counters);
    write_result(s.sub.result, r);
  }
  fmt::print(stderr,
             "mdcast record: {} (session {:016x}): {} datagrams through sequence {} in {} file(s) from {} ({}); {} "
             "gap marker(s), {} not recorded\n",
             g_stop.requested() ? "interrupted" : clean || outcome != "ok" ? outcome : "incomplete", sub.session(),
             rc->datagrams.get(), rec.last_sequence(), writer.files(),
             record::recording_file(writer.options().base, 0), format_bytes(writer.bytes()), rc->gap_markers.get(),
             rc->dropped.get());
  if (!write_error.empty()) fmt::print(stderr, "mdcast record: {}\n", write_error);
  if (rc->gap_markers.get())
    fmt::print(stderr, "mdcast record: the recording has {} gap(s) (a snapshot replaced datagrams, or it began after "
                       "sequence 1){}; start the recorder before the publisher (publish --wait-subscribers) for a "
                       "whole session\n", rc->gap_markers.get(),
               rec.images() ? ", each followed by the books the snapshot gave (a replay goes on from them)" : "");
  if (g_stop.requested()) return exit_code::kInterrupted;
  if (outcome == "publisher-lost") return rc->datagrams.get() ? exit_code::kDataLost : exit_code::kSetup;
  return clean ? exit_code::kOk : exit_code::kDataLost;
}

}  // namespace

int run_record(Settings& s, const RecordArgs& a) {
  if (a.out.empty()) fail_usage("record: --out BASE is required (files BASE.0000.pcap, BASE.0001.pcap, ...)");
  // Everything is recorded, whatever a config file says about the filter.
  s.sub.all_instruments = true;
  s.sub.instruments.clear();
  namespace fs = std::filesystem;
  const fs::path base(a.out);
  const std::string dir = base.has_parent_path() ? base.parent_path().string() : std::string(".");
  if (!fs::is_directory(dir)) fail_usage("record --out {}: directory {} does not exist", a.out, dir);
  record::WriterOptions wo;
  wo.base = a.out;
  // A bad value is the command line's: named by its flag, exit 2.
  auto flag_value = [](const char* name, auto parse) {
    try {
      return parse();
    } catch (const Error& e) {
      throw UsageError(e.with_context(name));
    }
  };
  wo.rotate_bytes = flag_value("--rotate-size", [&] { return a.rotate_size.empty() ? 0 : parse_size(a.rotate_size); });
  wo.rotate_ns = flag_value("--rotate-time", [&] { return a.rotate_time.empty() ? 0 : parse_duration(a.rotate_time); });
  wo.index_every = a.index_every;
  wo.max_datagram = record::kMaxPayload;
  wo.address = recording_address(s);
  const uint64_t need =
      !a.min_free.empty() ? flag_value("--min-free", [&] { return parse_size(a.min_free); })
                          : std::max<uint64_t>(wo.rotate_bytes, uint64_t{256} << 20);
  check_room(need, dir, fmt::format("recording {}.*.pcap", a.out),
             "record elsewhere (--out), or lower --min-free / --rotate-size");
  if (s.feed.channels > 1)
    fail_usage("record takes one channel, and the feed has {} (feed.channels): one recorder per channel "
               "is not built yet", s.feed.channels);
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    auto medium = E::subscriber(s);
    // Through the fault injector, as `mdcast subscribe` is: the tests record
    // with loss to show that recovered datagrams are recorded in order.
    media::fault::FaultyMedium<typename E::Subscriber> faulty(*medium,
                                                              injected_faults(s, static_cast<uint64_t>(::getpid())));
    return record_loop(s, std::move(wo), faulty, E::kName);
  });
}

}  // namespace mdcast::app
