// mdcast stat: reads every process's counters file (read-only mappings; the
// processes are not disturbed) and shows them, once or refreshing, as text,
// JSON or Prometheus (the library's exporters, stats/export.hpp); --clean
// removes what dead processes left (stats/clean.hpp); --catalogue prints
// the counter reference of docs/operations.md.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/clean.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/export.hpp"
#include "mdcast/stats/text.hpp"
#include "runners.hpp"
#include "stat_catalogue.hpp"

namespace mdcast::app {
namespace {

int clean(const StatArgs& a) {
  stats::CleanOptions o = settings::clean_options();
  o.pids = a.pids;
  o.dry_run = a.dry_run;
  if (!a.shm_dir.empty()) o.ring_dirs = {a.shm_dir};
  const auto r = stats::clean_stale(o);
  fmt::print("{}", stats::clean_text(r, a.dry_run));
  return r.failed ? exit_code::kSetup : exit_code::kOk;
}

}  // namespace

int run_stat(const StatArgs& a) {
  if (a.clean) return clean(a);
  const stats::Catalogue catalogue = stat_catalogue();
  // The reference of docs/operations.md, so that the document lists what
  // the binary writes (stat_formats.sh checks it).
  if (a.catalogue) {
    fmt::print("{}", stats::catalogue_markdown(catalogue));
    return exit_code::kOk;
  }
  stats::TextView view({a.all, a.subscribers});
  for (;;) {
    auto snaps = stats::list_counters();
    if (!a.pids.empty())
      std::erase_if(snaps, [&](const auto& s) { return std::find(a.pids.begin(), a.pids.end(), s.pid) == a.pids.end(); });
    if (a.prometheus) {
      stats::ExportStats es;
      fmt::print("{}", stats::to_prometheus(snaps, catalogue, &es, monotonic_ns()));
      if (es.unknown_labels)
        fmt::print(stderr,
                   "mdcast stat: {} counter{} not in this mdcast's catalogue left out (files of another mdcast "
                   "version?)\n",
                   es.unknown_labels, es.unknown_labels == 1 ? "" : "s");
      return exit_code::kOk;
    }
    if (a.json) {
      // One document per line: a consumer reads line by line (jq -c, a log shipper).
      fmt::print("{}\n", stats::to_json(snaps, realtime_ns() / kNsPerMs, monotonic_ns()));
      std::fflush(stdout);
    } else {
      if (a.watch) fmt::print("\x1b[H\x1b[2J{}  (every {:.1f} s, Ctrl-C to stop)\n\n", "mdcast stat", a.interval_s);
      fmt::print("{}", view.render(snaps, monotonic_ns()));
    }
    // Ctrl-C is how a watch ends, not an interruption of work: ok.
    if (!a.watch || g_stop.requested()) return exit_code::kOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
    if (g_stop.requested()) return exit_code::kOk;
  }
}

}  // namespace mdcast::app
