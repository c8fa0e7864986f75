// `mdcast record`: flag handling and printing around the library's
// record::Recorder (a subscriber of every instrument whose delivery hook
// writes what it is delivered into pcap files, docs/recording.md).
#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <optional>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/record/recorder.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
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

// The library's SubscriberRuntime with the recorder as its handler; the
// counters file says "recorder" and has the recorder's "rec" section.
template <class E>
int record_feed(Settings& s, record::WriterOptions wo) {
  using Runtime = runtime::SubscriberRuntime<media::fault::FaultyMedium<typename E::Subscriber>, RecordHandler>;
  runtime::SubscriberPlan plan = subscriber_plan(s, E::kName);
  plan.role = "recorder";
  plan.sections = {{"rec", record::RecordCounters::kInfo}};
  std::optional<RecordHandler> rec;  // its counters are in the file the runtime makes
  Runtime rt(std::move(plan), [&](uint32_t) -> RecordHandler& { return *rec; },
             [&s](uint32_t k) { return open_faulty<E>(s, k); });
  auto* rc = rt.template section<record::RecordCounters>(0);
  rec.emplace(std::move(wo), rc);
  const record::RecordingWriter& writer = rec->writer();
  fmt::print(stderr, "mdcast record: {}; into {}{}\n", rt.described(), writer.current_file(),
             writer.options().rotate_bytes || writer.options().rotate_ns ? " (rotating)" : "");
  typename Runtime::RunHooks hooks;
  hooks.started = [&](Runtime& r) { rec->attach(r.channels().agent(0).subscriber().books()); };
  hooks.round = [&](uint64_t, std::string& error) {
    rec->learn_source(rt.channels().medium(0));
    if (rec->failed()) error = rec->writer().error();
    return !rec->failed();
  };
  const auto out = rt.run(hooks);
  std::string write_error;
  try {
    rec->close();
  } catch (const Error& e) {
    write_error = e.what();
  }
  const bool stopped = out.ending == runtime::SubscriberEnding::kStopped;
  const bool ended = out.ending == runtime::SubscriberEnding::kEnded || out.ending == runtime::SubscriberEnding::kDuration;
  const bool clean = ended && write_error.empty() && rec->replayable();
  RunResult r = rt.result(out);
  r.messages = rec->delivered();
  dump_counters(*rc, "rec.", r.counters);
  if (!s.sub.result.empty()) write_result(s.sub.result, r);
  fmt::print(stderr,
             "mdcast record: {} (session {:016x}): {} datagrams through sequence {} in {} file(s) from {} ({}); {} "
             "gap marker(s), {} not recorded\n",
             clean || r.outcome != "ok" ? r.outcome : "incomplete", r.session, rc->datagrams.get(), rec->last_sequence(),
             writer.files(), record::recording_file(writer.options().base, 0), format_bytes(writer.bytes()),
             rc->gap_markers.get(), rc->dropped.get());
  if (!write_error.empty()) fmt::print(stderr, "mdcast record: {}\n", write_error);
  if (rc->gap_markers.get())
    fmt::print(stderr, "mdcast record: the recording has {} gap(s) (a snapshot replaced datagrams, or it began after "
                       "sequence 1){}; start the recorder before the publisher (publish --wait-subscribers) for a "
                       "whole session\n", rc->gap_markers.get(),
               rec->images() ? ", each followed by the books the snapshot gave (a replay goes on from them)" : "");
  if (stopped) return exit_code::kInterrupted;
  if (out.ending == runtime::SubscriberEnding::kPublisherLost)
    return rc->datagrams.get() ? exit_code::kDataLost : exit_code::kSetup;
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
  return with_medium(s.feed.medium, [&](auto entry) { return record_feed<decltype(entry)>(s, std::move(wo)); });
}

}  // namespace mdcast::app
