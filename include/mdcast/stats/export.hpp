// Counters files as machine-readable documents: JSON for scripts, the
// Prometheus text exposition format (version 0.0.4) for node_exporter's
// textfile collector or a scrape. Both are pure functions of snapshots
// (list_counters()) and a catalogue, so any application exports the same
// metrics as `mdcast stat`.
//
// JSON (one document; `mdcast stat --json --watch` prints one per line):
//   {"time_unix_ms": 1700000000000, "processes": [{"pid": 1234, "role": "subscriber",
//     "name": "feed1", "medium": "shm", "state": "running", "alive": true,
//     "counters": {"sub.messages_delivered": 123, ...},
//     "histograms": {"app.latency_ns": {"count": 123, "sum": 456789, "max": 9000,
//       "p50": 1500, "p99": 4000, "p99.9": 8000, "buckets": [[63, 0], [127, 2], ...]}},
//     "subscribers": [{"slot": 0, "channel": 1, "identity": "alice", "subscriber_pid": 4321, ...}],
//     "losses": [{"gap": 1, "channel": 1, "first_seq": 812, "datagrams": 3, "how": "retransmit", ...}]}]}
// Values are the file's, unconverted (a "_ns" counter is in ns); every label
// is there, also those the catalogue does not know. A histogram's buckets
// are cumulative at the Prometheus bounds (kHistogramBounds), its
// percentiles from the full log-linear histogram. "subscribers" (a
// publisher whose file has the table) has a publisher's row per subscriber:
// subscriber_json's fields; "losses" (a subscriber's) its loss report, the
// last gaps oldest first: loss_json's fields.
//
// Prometheus: one family per metric, `# HELP` and `# TYPE` once each, a
// sample per process with labels pid, role, name, medium, none of which
// changes while the process lives (its state is a sample, not a label: a
// label would make each state change a new series):
//   name  mdcast_<section>_<counter>, durations converted to base units:
//         "_ns"/"_us"/"_ms" become "_seconds" and the value is scaled
//         (longest_poll_ns 1500 -> longest_poll_seconds 1.5e-06); "_bytes"
//         stays; counters end in "_total", gauges do not.
//   rails  a counter of one rail of an A/B pair ("sub.rail_b_first") is
//         a sample of one family with a label rail="a"|"b"
//         (mdcast_sub_rail_first_total{rail="b"}): sum() and by (rail)
//         work, and no name holds a lone "b" (promtool reads it as bytes).
//   histograms  mdcast_<section>_<name> (app.latency_ns ->
//         mdcast_app_latency_seconds) as _bucket{le=...} (cumulative, at
//         kHistogramBounds, +Inf equal to _count), _sum and _count.
//   mdcast_process_alive  1 while the process that wrote the file lives,
//         0 for a stale file (`mdcast stat --clean` removes it).
//   mdcast_process_state  0 starting, 1 running, 2 finished, 3 failed.
//   mdcast_subscriber_*  a publisher's view of each subscriber (position,
//         lag, drops, requests, recoveries, status age), labelled with the
//         publisher's labels and channel, slot (the table row: bounded by
//         its size), identity (proven, else "") and subscriber_pid (Unix
//         peers, else ""): never an address, port or sequence, so the
//         series are as many as the rows at most.
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

#include "mdcast/core/histogram.hpp"
#include "mdcast/stats/catalogue.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {

// "mdcast_sub_gaps_total", "mdcast_app_latency_seconds", or "" when
// the label has no "section." prefix. Characters outside [a-zA-Z0-9_] become '_'.
[[nodiscard]] std::string prometheus_name(std::string_view label, const MetricInfo& m);
// The rail a label's counter is of ("a" of "udp.rail_a_datagrams"), which
// prometheus_name leaves out of the name; "" for other counters.
[[nodiscard]] std::string prometheus_rail(std::string_view label);

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

// The `le` bounds of exported histograms, in the histogram's unit (ns for
// latency): few enough for a scrape (28 and +Inf), half an octave apart from
// 127 ns to 32 us where mdcast's latencies live, an octave to 1 ms, then
// two octaves to 1 s. Each is the upper edge of a log-linear bucket, so a
// cumulative count "<= bound" is exact, never split from a bucket.
inline constexpr uint64_t kHistogramBounds[] = {
    63,      127,     191,      255,      383,      511,       767,        1023,      1535,     2047,
    3071,    4095,    6143,     8191,     12287,    16383,     24575,      32767,     65535,    131071,
    262143,  524287,  1048575,  4194303,  16777215, 67108863,  268435455,  1073741823};
consteval bool bounds_are_bucket_edges() {
  uint64_t prev = 0;
  for (const uint64_t b : kHistogramBounds) {
    if (b <= prev || Histogram::upper_edge(Histogram::index_of(b)) != b) return false;
    prev = b;
  }
  return true;
}
static_assert(bounds_are_bucket_edges(), "a bound inside a log-linear bucket would make its count a guess");

struct CumulativeBucket {
  uint64_t le;     // a kHistogramBounds value; UINT64_MAX for +Inf
  uint64_t count;  // samples <= le
};
// One per kHistogramBounds, then +Inf (== h.count()).
[[nodiscard]] std::vector<CumulativeBucket> cumulative_buckets(const Histogram& h);

struct ExportStats {
  uint64_t unknown_labels = 0;     // labels no catalogue section explains (left out of Prometheus output)
  uint64_t duplicate_samples = 0;  // a metric a process's file held twice (later ones left out)
};

// now_ns: CLOCK_MONOTONIC now, for the age of subscribers' status reports
// (0: the ages are left out).
[[nodiscard]] std::string to_json(const std::vector<CountersSnapshot>& snaps, uint64_t time_unix_ms,
                                  uint64_t now_ns = 0);
[[nodiscard]] std::string to_prometheus(const std::vector<CountersSnapshot>& snaps, const Catalogue& cat,
                                        ExportStats* stats = nullptr, uint64_t now_ns = 0);

// A publisher's row of one subscriber (export_subscribers.cpp).
// Who it is, for people: the proven identity, else "pid N" (Unix), else
// "tcp a.b.c.d:port", else "client N".
[[nodiscard]] std::string subscriber_name(const feed::SubscriberRow& r);
// {"slot":..,"channel":..,"identity":..,"authenticated":..,"subscriber_pid":..,"peer":..,"subscribed":..,
//  "position":..,"lag":..,"reported_lag":..,"drops":..,"capacity":..,"retransmit_requests":..,
//  "datagrams_retransmitted":..,"snapshot_requests":..,"recoveries":..,"refused":..,
//  "status_age_ns": (null before its first report, or without now_ns),"connected_ns":..,"whole":..}
[[nodiscard]] std::string subscriber_json(const CountersSnapshot::Subscriber& x, uint64_t now_ns);
// {"gap":..,"channel":..,"session":..,"first_seq":..,"datagrams":..,"detected_ns":..,"how":"retransmit",
//  "recovery_ns": (null while open),"retransmitted":..,"whole":..}
[[nodiscard]] std::string loss_json(const CountersSnapshot::Loss& x);
// The mdcast_subscriber_* families of every publisher's table.
[[nodiscard]] std::string subscribers_prometheus(const std::vector<CountersSnapshot>& snaps, uint64_t now_ns);

// Escapers, shared with the tests that check them.
[[nodiscard]] std::string json_string(std::string_view s);        // with the quotes
[[nodiscard]] std::string prometheus_label_value(std::string_view s);  // without the quotes
[[nodiscard]] std::string prometheus_help(std::string_view s);

}  // namespace mdcast::stats
