// Counters files as machine-readable documents: JSON for scripts, the
// Prometheus text exposition format (version 0.0.4) for node_exporter's
// textfile collector or a scrape. Both are pure functions of snapshots
// (list_counters()) and a catalogue, so any application exports the same
// metrics as `mdcast stat`.
//
// JSON (one document; `mdcast stat --json --watch` prints one per line):
//   {"time_unix_ms": 1700000000000, "processes": [{"pid": 1234, "role": "publisher",
//     "name": "feed1", "medium": "shm", "state": "running", "alive": true,
//     "counters": {"pub.messages_published": 123, ...}}]}
// Values are the file's, unconverted (a "_ns" counter is in ns); every label
// is there, also those the catalogue does not know.
//
// Prometheus: one family per metric, `# HELP` and `# TYPE` once each, a
// sample per process with labels pid, role, name, medium, state:
//   name  mdcast_<section>_<counter>, durations converted to base units:
//         "_ns"/"_us"/"_ms" become "_seconds" and the value is scaled
//         (latency_p99_ns 1500 -> latency_p99_seconds 1.5e-06); "_bytes"
//         stays; counters end in "_total", gauges do not.
//   mdcast_process_alive  1 while the process that wrote the file lives,
//         0 for a stale file (`mdcast stat --clean` removes it).
// A label the catalogue does not know (a file of another mdcast version) is
// left out with a `# mdcast:` comment saying so: its type and help are
// unknown, and a guessed type could clash with a known family.
// Strings from a file (name, role, medium: anyone can write a counters file)
// are escaped, never trusted to be well formed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/stats/catalogue.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {

// "mdcast_sub_gaps_total", "mdcast_app_latency_p99_seconds", or "" when
// the label has no "section." prefix. Characters outside [a-zA-Z0-9_] become '_'.
[[nodiscard]] std::string prometheus_name(std::string_view label, const MetricInfo& m);

// A process of a feed over several channels writes each channel's counters
// under "<prefix>@<channel id>.<name>" and their totals under the plain
// label. Splits "pub@3.datagrams_sent" into {"pub.datagrams_sent", "3"};
// a label without a channel comes back whole, with an empty channel.
struct ChannelLabel {
  std::string label;
  std::string channel;
};
[[nodiscard]] ChannelLabel split_channel(std::string_view label);
// The value in the metric's base unit (seconds for durations).
[[nodiscard]] double prometheus_value(uint64_t raw, Unit u) noexcept;

struct ExportStats {
  uint64_t unknown_labels = 0;     // labels no catalogue section explains (left out of Prometheus output)
  uint64_t duplicate_samples = 0;  // a metric a process's file held twice (later ones left out)
};

[[nodiscard]] std::string to_json(const std::vector<CountersSnapshot>& snaps, uint64_t time_unix_ms);
[[nodiscard]] std::string to_prometheus(const std::vector<CountersSnapshot>& snaps, const Catalogue& cat,
                                        ExportStats* stats = nullptr);

// Escapers, shared with the tests that check them.
[[nodiscard]] std::string json_string(std::string_view s);        // with the quotes
[[nodiscard]] std::string prometheus_label_value(std::string_view s);  // without the quotes
[[nodiscard]] std::string prometheus_help(std::string_view s);

}  // namespace mdcast::stats
