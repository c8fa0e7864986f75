#include "mdcast/stats/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "mdcast/core/clock.hpp"
#include "mdcast/stats/export.hpp"

namespace mdcast::stats {
namespace {

// The counters worth a glance, per role; `all` shows the rest.
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

using Out = std::back_insert_iterator<std::string>;

// A publisher's view of each subscriber (its counters file's table): a line
// each, for the operator who asks "who is behind, who loses, who asks".
void subscribers_text(Out out, const CountersSnapshot& s, uint64_t now) {
  if (s.subscriber_rows == 0) return;
  if (s.subscribers.empty()) {
    fmt::format_to(out, "    no subscribers\n");
    return;
  }
  fmt::format_to(out, "    {:<4} {:>5} {:<22} {:>12} {:>8} {:>7} {:>9} {:>11} {:>6} {:>6} {:>7} {:>9} {:>10} {:>10}\n",
                 "slot", "chan", "subscriber", "position", "lag", "gaps", "rtx req", "rtx dgrams", "snaps", "recov",
                 "refused", "status", "lat p50", "lat p99");
  for (const auto& x : s.subscribers) {
    const feed::SubscriberRow& r = x.row;
    std::string name = printable(subscriber_name(r));
    if (name.size() > 22) name = name.substr(0, 21) + "~";
    const std::string age = r.report_ns == 0 ? "none yet" : age_text(now > r.report_ns ? now - r.report_ns : 0);
    // Latency as the subscriber's application reported it ("-": it reported none).
    const bool lat = r.latency_count != 0;
    fmt::format_to(out, "    {:<4} {:>5} {:<22} {:>12} {:>8} {:>7} {:>9} {:>11} {:>6} {:>6} {:>7} {:>9} {:>10} {:>10}{}\n",
                   x.slot, r.channel, name, r.position, r.lag, r.drops, r.retransmit_requests, r.datagrams_retransmitted,
                   r.snapshot_requests, r.recoveries, r.refused, age, lat ? format_latency(r.latency_p50_ns) : "-",
                   lat ? format_latency(r.latency_p99_ns) : "-", x.whole ? "" : "  (torn: writer stopped mid-row)");
  }
}

// A subscriber's loss report: its last gaps, oldest first.
void losses_text(Out out, const CountersSnapshot& s, uint64_t now) {
  if (s.loss_rows == 0) return;
  if (s.losses.empty()) {
    fmt::format_to(out, "    no gaps\n");
    return;
  }
  const uint64_t total = s.losses.back().record.ordinal;
  fmt::format_to(out, "    {} gap{}{}\n", total, total == 1 ? "" : "s",
                 total > s.losses.size() ? fmt::format(", the last {} shown", s.losses.size()) : std::string());
  fmt::format_to(out, "    {:>6} {:>5} {:>12} {:>9} {:>10} {:<12} {:>10} {:>9}\n", "gap", "chan", "first seq",
                 "datagrams", "detected", "recovered by", "took", "rtx dgrams");
  for (const auto& x : s.losses) {
    const feed::LossRecord& r = x.record;
    const std::string ago = now > r.detected_ns ? age_text(now - r.detected_ns) + " ago" : "now";
    const std::string took = r.closed_ns == 0 ? "-" : duration_text(r.closed_ns - r.detected_ns);
    fmt::format_to(out, "    {:>6} {:>5} {:>12} {:>9} {:>10} {:<12} {:>10} {:>9}{}\n", r.ordinal, r.channel,
                   r.first_seq, r.datagrams, ago, feed::to_string(r.method()), took, r.retransmitted,
                   x.whole ? "" : "  (torn: writer stopped mid-row)");
  }
}

}  // namespace

std::string format_latency(uint64_t ns) {
  if (ns < 1'000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000'000) return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  return out;
}

std::string TextView::render(const std::vector<CountersSnapshot>& snaps, uint64_t now) {
  std::string text;
  const Out out(text);
  const double dt = prev_ns_ && now > prev_ns_ ? static_cast<double>(now - prev_ns_) / 1e9 : 0;
  if (snaps.empty()) fmt::format_to(out, "no mdcast processes (no counters files in {})\n", stat_dir());
  for (const auto& s : snaps) {
    fmt::format_to(out, "pid {:<8} {:<11} {:<20} {:<6} {}{}\n", s.pid, printable(s.role), printable(s.name),
                   printable(s.medium), to_string(s.state),
                   s.alive ? "" : "  [STALE: process gone; `mdcast stat --clean` removes it]");
    if (opt_.subscribers) {  // the table instead of the counters
      subscribers_text(out, s, now);
      losses_text(out, s, now);
      continue;
    }
    const auto& main = s.role == "publisher" ? kMainPub : s.role == "relay" ? kMainRelay : kMainSub;
    for (const auto& [k, v] : s.values) {
      // A feed over channels: each channel's main counters too ("pub@3.datagrams_sent").
      const std::string plain = split_channel(k).label;
      if (!opt_.all && std::find(main.begin(), main.end(), plain) == main.end()) continue;
      std::string rate;
      const auto it = prev_.find(fmt::format("{}/{}", s.pid, k));
      if (dt > 0 && it != prev_.end() && is_rate_counter(k) && v >= it->second)
        rate = fmt::format("  ({:.0f}/s)", static_cast<double>(v - it->second) / dt);
      fmt::format_to(out, "    {:<34} {:>16}{}\n", printable(k), v, rate);
    }
    // People read percentiles; the file holds the whole histogram, so they
    // are as exact as the subscriber's own report.
    for (const auto& x : s.histograms) {
      const Histogram& h = x.hist;
      if (h.count() == 0) {
        fmt::format_to(out, "    {:<34} {:>16}\n", printable(x.label), "no samples");
        continue;
      }
      fmt::format_to(out, "    {:<34} p50 {} p99 {} p99.9 {} max {} ({} samples)\n", printable(x.label),
                     h.percentile(50), h.percentile(99), h.percentile(99.9), h.max(), h.count());
    }
  }
  prev_.clear();
  for (const auto& s : snaps)
    for (const auto& [k, v] : s.values) prev_[fmt::format("{}/{}", s.pid, k)] = v;
  prev_ns_ = now;
  return text;
}

std::string clean_text(const CleanReport& r, bool dry_run) {
  std::string text;
  const Out out(text);
  auto mib = [](uint64_t b) {
    if (b >= 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024.0 * 1024.0));
    return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024.0);
  };
  auto size = [&](uint64_t b) { return b ? " (" + mib(b) + ")" : std::string{}; };  // a socket has no size worth telling
  const char* verb = dry_run ? "would remove" : "removed";
  for (const auto& it : r.removed)
    fmt::format_to(out, "{} {}{}: {}\n", verb, printable(it.path), size(it.bytes), printable(it.what));
  for (const auto& it : r.kept)
    fmt::format_to(out, "kept {}{}: {}: {}\n", printable(it.path), size(it.bytes), printable(it.what),
                   printable(it.error));
  fmt::format_to(out, "{} {} stale counters file{}, {} shm ring{} and {} control socket{}: {}\n", verb,
                 r.counters_files, r.counters_files == 1 ? "" : "s", r.rings, r.rings == 1 ? "" : "s", r.sockets,
                 r.sockets == 1 ? "" : "s", mib(r.bytes));
  return text;
}

std::string catalogue_markdown(const Catalogue& cat) {
  std::string text;
  const Out out(text);
  auto cell = [](std::string_view s) {
    std::string c;
    for (const char ch : s) c += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return c;
  };
  auto where = [](const auto& s) {
    return fmt::format("{}, {}", s.role.empty() ? "publisher or subscriber" : s.role,
                       s.medium.empty() ? "every medium" : fmt::format("medium {}", s.medium));
  };
  for (const auto& s : cat.sections()) {
    fmt::format_to(out, "\n#### `{}.*` - {} ({})\n\n| counter | Prometheus | type | meaning |\n|---|---|---|---|\n",
                   s.prefix, s.source, where(s));
    for (const auto& c : s.counters) {
      const std::string label = fmt::format("{}.{}", s.prefix, c.name);
      const auto m = cat.find(s.role.empty() ? "subscriber" : s.role, s.medium.empty() ? "shm" : s.medium, label);
      if (!m || m->section != &s) continue;  // shadowed by an earlier section (a catalogue test prevents it)
      const std::string rail = prometheus_rail(label);
      fmt::format_to(out, "| `{}` | `{}{}` | {} | {} |\n", label, prometheus_name(label, *m),
                     rail.empty() ? "" : fmt::format("{{rail=\"{}\"}}", rail), to_string(m->type), cell(m->help));
    }
  }
  for (const auto& s : cat.histogram_sections()) {
    fmt::format_to(out, "\n#### `{}.*` histograms - {} ({})\n\n| histogram | Prometheus (`_bucket`, `_sum`, `_count`) | "
                        "type | meaning |\n|---|---|---|---|\n",
                   s.prefix, s.source, where(s));
    for (const auto& c : s.counters) {
      const std::string label = fmt::format("{}.{}", s.prefix, c.name);
      const auto m = cat.find_histogram(s.role.empty() ? "subscriber" : s.role, s.medium.empty() ? "shm" : s.medium, label);
      if (!m || m->section != &s) continue;
      fmt::format_to(out, "| `{}` | `{}` | {} | {} |\n", label, prometheus_name(label, *m), to_string(m->type),
                     cell(m->help));
    }
  }
  return text;
}

}  // namespace mdcast::stats
