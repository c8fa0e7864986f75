// Counters files as a person reads them: the text view `mdcast stat`
// prints, beside the JSON and Prometheus exports (export.hpp), so that an
// application's own console shows its processes as the operator's tool
// does. Pure functions of snapshots (list_counters()); nothing is printed.
//
//   pid 4242     subscriber  feed1                shm    running
//       sub.messages_delivered                   1200000  (250000/s)
//       app.latency_ns                     p50 1500 p99 4000 p99.9 8000 max 9000 (1200000 samples)
//
// A role's main counters are shown unless `all`; a feed over channels shows
// each channel's main counters too. `subscribers` shows instead a
// publisher's table of its subscribers and a subscriber's loss report.
// Strings from a file (anyone can write one) lose their control bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/stats/catalogue.hpp"
#include "mdcast/stats/clean.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {

// A latency as a person reads it: 850 ns, 3.1 us, 3.11 ms, 1.20 s.
[[nodiscard]] std::string format_latency(uint64_t ns);
// 1234567 -> "1,234,567": counts a person compares at a glance.
[[nodiscard]] std::string grouped(uint64_t v);
// Control bytes (escape sequences) as '?': what a file says reaches a terminal inert.
[[nodiscard]] std::string printable(std::string_view s);

class TextView {
 public:
  struct Options {
    bool all = false;          // every counter, not only the role's main ones
    bool subscribers = false;  // the subscriber table / loss report instead of the counters
  };
  explicit TextView(Options o) : opt_(o) {}

  // The processes' view at now_ns (monotonic), with the rate of each counting
  // counter since the last render() of the same process.
  [[nodiscard]] std::string render(const std::vector<CountersSnapshot>& snaps, uint64_t now_ns);

 private:
  Options opt_;
  std::map<std::string, uint64_t> prev_;  // "pid/label" -> value at prev_ns_
  uint64_t prev_ns_ = 0;
};

// What clean_stale removed (or, dry_run, would remove) and kept, a line
// each, then the totals.
[[nodiscard]] std::string clean_text(const CleanReport& r, bool dry_run);

// The counter reference (docs/operations.md's appendix) as Markdown tables,
// one per section, from the catalogue itself: the document lists what the
// binary writes.
[[nodiscard]] std::string catalogue_markdown(const Catalogue& cat);

}  // namespace mdcast::stats
