// mdcast stat: reads every process's counters file (read-only mappings; the
// processes are not disturbed) and shows them, once or refreshing, as text,
// JSON or Prometheus (the library's exporters, stats/export.hpp); --clean
// removes what dead processes left (stats/clean.hpp); --catalogue prints
// the counter reference of docs/operations.md.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "print.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/clean.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/export.hpp"
#include "runners.hpp"
#include "stat_catalogue.hpp"

namespace mdcast::app {
namespace {

// The counters worth a glance, per role; --all shows the rest.
const std::vector<std::string> kMainPub = {"pub.messages_published", "pub.datagrams_sent", "pub.bytes_sent", "pub.heartbeats_sent",
                                           "pub.last_sequence", "ctl.clients_connected", "ctl.retransmit_requests",
                                           "ctl.datagrams_retransmitted", "ctl.snapshot_requests", "ctl.requests_rejected",
                                           "udp.back_pressured", "udp.send_errors"};
const std::vector<std::string> kMainSub = {"sub.messages_delivered", "sub.datagrams_received", "sub.next_sequence",
                                           "sub.highest_sequence", "sub.gaps", "sub.datagrams_recovered",
                                           "sub.snapshots_applied", "sub.duplicates", "sub.checksum_ok", "sub.checksum_mismatch",
                                           "app.lost", "app.latency_max_ns",
                                           // UDP: the kernel's drops beside ours, and which rail carried the feed
                                           "udp.kernel_drops", "sub.rail_a_first", "sub.rail_b_first",
                                           // a pair member lost (a rail silent), its cost, and the control plane moving
                                           "sub.rail_a_silences", "sub.rail_b_silences", "sub.silence_gap_ns",
                                           "sub.longest_data_gap_ns", "udp.announce_left"};

// A relay: what it forwards, what its upstream subscriber recovered, what
// its downstream subscribers asked of it.
const std::vector<std::string> kMainRelay = {"relay.messages", "relay.datagrams", "relay.upstream_sequence",
                                             "relay.sequence_mismatches", "sub.gaps", "sub.datagrams_recovered",
                                             "pub.datagrams_sent", "pub.last_sequence", "ctl.clients_connected",
                                             "ctl.retransmit_requests", "ctl.snapshot_requests"};

// Anyone can write a counters file (or name a feed): what one says reaches
// the operator's terminal without its control bytes (no escape sequences).
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  return out;
}

bool is_rate_counter(const std::string& k) {
  return k.find("messages") != std::string::npos || k.find("datagrams") != std::string::npos || k.find("bytes") != std::string::npos;
}

std::string age_text(uint64_t ns) {
  if (ns < kNsPerSec) return fmt::format("{} ms", ns / kNsPerMs);
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

std::string duration_text(uint64_t ns) {
  if (ns < kNsPerMs) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < kNsPerSec) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

// A publisher's view of each subscriber (its counters file's table): a line
// each, for the operator who asks "who is behind, who loses, who asks".
void show_subscribers(const stats::CountersSnapshot& s, uint64_t now) {
  if (s.subscriber_rows == 0) return;
  if (s.subscribers.empty()) {
    fmt::print("    no subscribers\n");
    return;
  }
  fmt::print("    {:<4} {:>5} {:<22} {:>12} {:>8} {:>7} {:>9} {:>11} {:>6} {:>6} {:>7} {:>9} {:>10} {:>10}\n", "slot",
             "chan", "subscriber", "position", "lag", "gaps", "rtx req", "rtx dgrams", "snaps", "recov", "refused",
             "status", "lat p50", "lat p99");
  for (const auto& x : s.subscribers) {
    const feed::SubscriberRow& r = x.row;
    std::string name = printable(stats::subscriber_name(r));
    if (name.size() > 22) name = name.substr(0, 21) + "~";
    const std::string age = r.report_ns == 0 ? "none yet" : age_text(now > r.report_ns ? now - r.report_ns : 0);
    // Latency as the subscriber's application reported it ("-": it reported none).
    const bool lat = r.latency_count != 0;
    fmt::print("    {:<4} {:>5} {:<22} {:>12} {:>8} {:>7} {:>9} {:>11} {:>6} {:>6} {:>7} {:>9} {:>10} {:>10}{}\n", x.slot,
               r.channel, name, r.position, r.lag, r.drops, r.retransmit_requests, r.datagrams_retransmitted,
               r.snapshot_requests, r.recoveries, r.refused, age, lat ? format_latency(r.latency_p50_ns) : "-",
               lat ? format_latency(r.latency_p99_ns) : "-", x.whole ? "" : "  (torn: writer stopped mid-row)");
  }
}

// A subscriber's loss report: its last gaps, oldest first.
void show_losses(const stats::CountersSnapshot& s, uint64_t now) {
  if (s.loss_rows == 0) return;
  uint64_t total = s.losses.empty() ? 0 : s.losses.back().record.ordinal;
  if (s.losses.empty()) {
    fmt::print("    no gaps\n");
    return;
  }
  fmt::print("    {} gap{}{}\n", total, total == 1 ? "" : "s",
             total > s.losses.size() ? fmt::format(", the last {} shown", s.losses.size()) : std::string());
  fmt::print("    {:>6} {:>5} {:>12} {:>9} {:>10} {:<12} {:>10} {:>9}\n", "gap", "chan", "first seq", "datagrams",
             "detected", "recovered by", "took", "rtx dgrams");
  for (const auto& x : s.losses) {
    const feed::LossRecord& r = x.record;
    const std::string ago = now > r.detected_ns ? age_text(now - r.detected_ns) + " ago" : "now";
    const std::string took = r.closed_ns == 0 ? "-" : duration_text(r.closed_ns - r.detected_ns);
    fmt::print("    {:>6} {:>5} {:>12} {:>9} {:>10} {:<12} {:>10} {:>9}{}\n", r.ordinal, r.channel, r.first_seq,
               r.datagrams, ago, feed::to_string(r.method()), took, r.retransmitted,
               x.whole ? "" : "  (torn: writer stopped mid-row)");
  }
}

void show(const std::vector<stats::CountersSnapshot>& snaps, const std::map<std::string, uint64_t>& prev, double dt, bool all,
          bool subscribers) {
  if (snaps.empty()) {
    fmt::print("no mdcast processes (no counters files in {})\n", stats::stat_dir());
    return;
  }
  for (const auto& s : snaps) {
    fmt::print("pid {:<8} {:<11} {:<20} {:<6} {}{}\n", s.pid, printable(s.role), printable(s.name), printable(s.medium),
               stats::to_string(s.state),
               s.alive ? "" : "  [STALE: process gone; `mdcast stat --clean` removes it]");
    if (subscribers) {  // the table instead of the counters
      show_subscribers(s, monotonic_ns());
      show_losses(s, monotonic_ns());
      continue;
    }
    const auto& main = s.role == "publisher" ? kMainPub : s.role == "relay" ? kMainRelay : kMainSub;
    for (const auto& [k, v] : s.values) {
      // A feed over channels: each channel's main counters too ("pub@3.datagrams_sent").
      const std::string plain = stats::split_channel(k).label;
      const bool wanted = all || std::find(main.begin(), main.end(), plain) != main.end();
      if (!wanted) continue;
      std::string rate;
      auto it = prev.find(fmt::format("{}/{}", s.pid, k));
      if (dt > 0 && it != prev.end() && is_rate_counter(k) && v >= it->second)
        rate = fmt::format("  ({:.0f}/s)", static_cast<double>(v - it->second) / dt);
      fmt::print("    {:<34} {:>16}{}\n", printable(k), v, rate);
    }
    // People read percentiles; the file holds the whole histogram, so they
    // are as exact as the subscriber's own report.
    for (const auto& x : s.histograms) {
      const std::string& label = x.label;
      const Histogram& h = x.hist;
      if (h.count() == 0) {
        fmt::print("    {:<34} {:>16}\n", printable(label), "no samples");
        continue;
      }
      fmt::print("    {:<34} p50 {} p99 {} p99.9 {} max {} ({} samples)\n", printable(label), h.percentile(50),
                 h.percentile(99), h.percentile(99.9), h.max(), h.count());
    }
  }
}

std::string size_text(uint64_t b) {
  if (b >= 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
}

int clean(const StatArgs& a) {
  stats::CleanOptions o = settings::clean_options();
  o.pids = a.pids;
  o.dry_run = a.dry_run;
  if (!a.shm_dir.empty()) o.ring_dirs = {a.shm_dir};
  const auto r = stats::clean_stale(o);
  const char* verb = a.dry_run ? "would remove" : "removed";
  // A socket has no size worth telling.
  auto size = [](uint64_t b) { return b ? " (" + size_text(b) + ")" : std::string{}; };
  for (const auto& it : r.removed)
    fmt::print("{} {}{}: {}\n", verb, printable(it.path), size(it.bytes), printable(it.what));
  for (const auto& it : r.kept)
    fmt::print("kept {}{}: {}: {}\n", printable(it.path), size(it.bytes), printable(it.what), printable(it.error));
  fmt::print("{} {} stale counters file{}, {} shm ring{} and {} control socket{}: {}\n", verb, r.counters_files,
             r.counters_files == 1 ? "" : "s", r.rings, r.rings == 1 ? "" : "s", r.sockets, r.sockets == 1 ? "" : "s",
             size_text(r.bytes));
  return r.failed ? exit_code::kSetup : exit_code::kOk;
}

// The reference of docs/operations.md, from the catalogue itself, so that
// the document lists what the binary writes (stat_formats.sh checks it).
int print_catalogue(const stats::Catalogue& cat) {
  auto cell = [](std::string_view s) {
    std::string out;
    for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  for (const auto& s : cat.sections()) {
    fmt::print("\n#### `{}.*` - {} ({}, {})\n\n| counter | Prometheus | type | meaning |\n|---|---|---|---|\n", s.prefix,
               s.source, s.role.empty() ? "publisher or subscriber" : s.role,
               s.medium.empty() ? "every medium" : fmt::format("medium {}", s.medium));
    for (const auto& c : s.counters) {
      const std::string label = fmt::format("{}.{}", s.prefix, c.name);
      const auto m = cat.find(s.role.empty() ? "subscriber" : s.role, s.medium.empty() ? "shm" : s.medium, label);
      if (!m || m->section != &s) continue;  // shadowed by an earlier section (a catalogue test prevents it)
      const std::string rail = stats::prometheus_rail(label);
      fmt::print("| `{}` | `{}{}` | {} | {} |\n", label, stats::prometheus_name(label, *m),
                 rail.empty() ? "" : fmt::format("{{rail=\"{}\"}}", rail), stats::to_string(m->type), cell(m->help));
    }
  }
  for (const auto& s : cat.histogram_sections()) {
    fmt::print("\n#### `{}.*` histograms - {} ({}, {})\n\n| histogram | Prometheus (`_bucket`, `_sum`, `_count`) | type | "
               "meaning |\n|---|---|---|---|\n",
               s.prefix, s.source, s.role.empty() ? "publisher or subscriber" : s.role,
               s.medium.empty() ? "every medium" : fmt::format("medium {}", s.medium));
    for (const auto& c : s.counters) {
      const std::string label = fmt::format("{}.{}", s.prefix, c.name);
      const auto m =
          cat.find_histogram(s.role.empty() ? "subscriber" : s.role, s.medium.empty() ? "shm" : s.medium, label);
      if (!m || m->section != &s) continue;
      fmt::print("| `{}` | `{}` | {} | {} |\n", label, stats::prometheus_name(label, *m), stats::to_string(m->type),
                 cell(m->help));
    }
  }
  return exit_code::kOk;
}

uint64_t unix_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

int run_stat(const StatArgs& a) {
  if (a.clean) return clean(a);
  const stats::Catalogue catalogue = stat_catalogue();
  if (a.catalogue) return print_catalogue(catalogue);
  std::map<std::string, uint64_t> prev;
  uint64_t prev_t = 0;
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
      fmt::print("{}\n", stats::to_json(snaps, unix_ms(), monotonic_ns()));
      std::fflush(stdout);
    } else {
      const uint64_t now = monotonic_ns();
      const double dt = prev_t ? static_cast<double>(now - prev_t) / 1e9 : 0;
      if (a.watch) fmt::print("\x1b[H\x1b[2J{}  (every {:.1f} s, Ctrl-C to stop)\n\n", "mdcast stat", a.interval_s);
      show(snaps, prev, dt, a.all, a.subscribers);
      prev.clear();
      for (const auto& s : snaps)
        for (const auto& [k, v] : s.values) prev[fmt::format("{}/{}", s.pid, k)] = v;
      prev_t = now;
    }
    // Ctrl-C is how a watch ends, not an interruption of work: ok.
    if (!a.watch || g_stop.requested()) return exit_code::kOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
    if (g_stop.requested()) return exit_code::kOk;
  }
}

}  // namespace mdcast::app
