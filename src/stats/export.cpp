#include "mdcast/stats/export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace mdcast::stats {
namespace {

struct Family {
  std::string name;
  std::string_view type;  // "counter" / "gauge"
  std::vector<std::pair<std::string_view, std::string>> helps;  // (role, help), distinct helps only
  std::vector<std::string> samples;
  std::vector<uint64_t> pids;  // one sample per process (rail, channel): pid << 22 | rail << 17 | channel
};

std::string strip_unit(std::string_view name, Unit u) {
  std::string n(name);
  if (u == Unit::kNanoseconds || u == Unit::kMicroseconds || u == Unit::kMilliseconds)
    n = n.substr(0, n.size() - 3) + "_seconds";
  return n;
}

std::string_view unit_note(Unit u) {
  switch (u) {
    case Unit::kNanoseconds: return " (exported in seconds; the counters file holds ns)";
    case Unit::kMicroseconds: return " (exported in seconds; the counters file holds microseconds)";
    case Unit::kMilliseconds: return " (exported in seconds; the counters file holds ms)";
    case Unit::kBytes:
    case Unit::kNone: break;
  }
  return "";
}

// Only what a process keeps for its life: a label that changed (a state)
// would end one series and start another.
std::string labels(const CountersSnapshot& s) {
  return fmt::format("pid=\"{}\",role=\"{}\",name=\"{}\",medium=\"{}\"", s.pid, prometheus_label_value(s.role),
                     prometheus_label_value(s.name), prometheus_label_value(s.medium));
}

std::string format_value(double v) { return fmt::format("{}", v); }

// Where "rail_<letter>" is in a counter's name (after the section's dot):
// the letter's position, or npos.
size_t rail_letter(std::string_view label) {
  const size_t dot = label.find('.');
  if (dot == std::string_view::npos) return std::string_view::npos;
  for (size_t p = label.find("rail_", dot + 1); p != std::string_view::npos; p = label.find("rail_", p + 1)) {
    const size_t x = p + 5;
    const bool starts = p == dot + 1 || label[p - 1] == '_';
    const bool one_letter = x < label.size() && label[x] >= 'a' && label[x] <= 'z' &&
                            (x + 1 == label.size() || label[x + 1] == '_');
    if (starts && one_letter) return x;
  }
  return std::string_view::npos;
}

// "rail A" in a rail's help becomes what the label says, so that both
// rails' samples share one HELP line.
std::string rail_help(std::string help, std::string_view rail) {
  const std::string mention = "rail " + std::string(1, static_cast<char>(rail[0] - 'a' + 'A'));
  for (size_t p = help.find(mention); p != std::string::npos; p = help.find(mention, p))
    help.replace(p, mention.size(), "the rail of label rail");
  return help;
}

// p50 ... as JSON keys: the percentile, a histogram's own reading.
constexpr std::pair<std::string_view, double> kJsonPercentiles[] = {{"p50", 50}, {"p99", 99}, {"p99.9", 99.9}};

std::string histograms_json(const CountersSnapshot& s) {
  std::string out = "{";
  std::vector<std::string_view> seen;
  for (const auto& x : s.histograms) {
    const std::string& label = x.label;
    const Histogram& h = x.hist;
    if (std::find(seen.begin(), seen.end(), label) != seen.end()) continue;
    seen.push_back(label);
    out += fmt::format("{}{}:{{\"count\":{},\"sum\":{},\"max\":{}", seen.size() == 1 ? "" : ",", json_string(label),
                       h.count(), h.sum(), h.max());
    for (const auto& [key, p] : kJsonPercentiles) out += fmt::format(",\"{}\":{}", key, h.percentile(p));
    out += ",\"buckets\":[";
    const auto buckets = cumulative_buckets(h);
    for (size_t i = 0; i + 1 < buckets.size(); ++i)
      out += fmt::format("{}[{},{}]", i ? "," : "", buckets[i].le, buckets[i].count);
    out += "]}";
  }
  return out + "}";
}

}  // namespace

std::vector<CumulativeBucket> cumulative_buckets(const Histogram& h) {
  std::vector<CumulativeBucket> out;
  out.reserve(std::size(kHistogramBounds) + 1);
  const auto& counts = h.buckets();
  uint64_t seen = 0;
  size_t i = 0;
  for (const uint64_t le : kHistogramBounds) {
    // Bounds are bucket edges (export.hpp): every bucket up to le's is <= le.
    for (const size_t last = Histogram::index_of(le); i <= last; ++i) seen += counts[i];
    out.push_back({le, seen});
  }
  out.push_back({UINT64_MAX, h.count()});
  return out;
}

ChannelLabel split_channel(std::string_view label) {
  const size_t dot = label.find('.');
  const size_t at = label.substr(0, dot).find('@');
  if (dot == std::string_view::npos || at == std::string_view::npos) return {std::string(label), {}};
  const std::string_view id = label.substr(at + 1, dot - at - 1);
  if (id.empty() || id.size() > 5 || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {std::string(label), {}};
  return {std::string(label.substr(0, at)) + std::string(label.substr(dot)), std::string(id)};
}

std::string prometheus_rail(std::string_view label) {
  const size_t x = rail_letter(label);
  return x == std::string_view::npos ? std::string() : std::string(1, label[x]);
}

std::string prometheus_name(std::string_view full_label, const MetricInfo& m) {
  std::string without_rail(full_label);
  if (const size_t x = rail_letter(full_label); x != std::string_view::npos) without_rail.erase(x - 1, 2);  // "_a"
  const std::string_view label = without_rail;
  const size_t dot = label.find('.');
  if (dot == std::string_view::npos) return {};
  std::string n = "mdcast_" + std::string(label.substr(0, dot)) + "_" + strip_unit(label.substr(dot + 1), m.unit);
  for (char& c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  if (m.type == MetricType::kCounter) n += "_total";
  return n;
}

double prometheus_value(uint64_t raw, Unit u) noexcept {
  const auto v = static_cast<double>(raw);
  switch (u) {
    case Unit::kNanoseconds: return v / 1e9;
    case Unit::kMicroseconds: return v / 1e6;
    case Unit::kMilliseconds: return v / 1e3;
    case Unit::kBytes:
    case Unit::kNone: break;
  }
  return v;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    // Control bytes, and bytes that are not ASCII (a name is not guaranteed
    // to be UTF-8), as code points: the document stays valid JSON.
    else if (c < 0x20 || c >= 0x7f) out += fmt::format("\\u{:04x}", c);
    else out += ch;
  }
  return out + "\"";
}

std::string prometheus_label_value(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c >= 0x7f) out += '?';  // the format wants UTF-8; a name need not be
    else out += ch;
  }
  return out;
}

std::string prometheus_help(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c < 0x20 || c >= 0x7f) out += '?';
    else out += ch;
  }
  return out;
}

std::string to_json(const std::vector<CountersSnapshot>& snaps, uint64_t time_unix_ms, uint64_t now_ns) {
  std::string out = fmt::format("{{\"time_unix_ms\":{},\"processes\":[", time_unix_ms);
  bool first = true;
  for (const auto& s : snaps) {
    out += first ? "" : ",";
    first = false;
    out += fmt::format("{{\"pid\":{},\"role\":{},\"name\":{},\"medium\":{},\"state\":\"{}\",\"alive\":{},\"counters\":{{",
                       s.pid, json_string(s.role), json_string(s.name), json_string(s.medium), to_string(s.state),
                       s.alive ? "true" : "false");
    // A file may hold a label twice (hostile, or a future layout): JSON
    // objects want unique keys, so the first one counts.
    std::vector<std::string_view> seen;
    seen.reserve(s.values.size());
    bool first_value = true;
    for (const auto& [k, v] : s.values) {
      if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
      seen.push_back(k);
      out += fmt::format("{}{}:{}", first_value ? "" : ",", json_string(k), v);
      first_value = false;
    }
    out += "},\"histograms\":" + histograms_json(s);
    if (s.subscriber_rows) {
      out += ",\"subscribers\":[";
      for (size_t i = 0; i < s.subscribers.size(); ++i) out += (i ? "," : "") + subscriber_json(s.subscribers[i], now_ns);
      out += "]";
    }
    if (s.loss_rows) {
      out += ",\"losses\":[";
      for (size_t i = 0; i < s.losses.size(); ++i) out += (i ? "," : "") + loss_json(s.losses[i]);
      out += "]";
    }
    out += "}";
  }
  return out + "]}";
}

std::string to_prometheus(const std::vector<CountersSnapshot>& snaps, const Catalogue& cat, ExportStats* stats,
                          uint64_t now_ns) {
  ExportStats local;
  ExportStats& st = stats ? *stats : local;
  std::vector<Family> families;
  std::unordered_map<std::string, size_t> index;
  std::string notes;

  Family alive{"mdcast_process_alive", "gauge", {{"", "1 while the process that wrote this counters file lives; 0: the "
                                                      "file is stale (`mdcast stat --clean` removes it)"}}, {}, {}};
  Family state{"mdcast_process_state", "gauge", {{"", "what the process is doing: 0 starting, 1 running, 2 finished, "
                                                      "3 failed"}}, {}, {}};
  for (const auto& s : snaps) {
    const std::string l = labels(s);
    alive.samples.push_back(fmt::format("mdcast_process_alive{{{}}} {}", l, s.alive ? 1 : 0));
    state.samples.push_back(fmt::format("mdcast_process_state{{{}}} {}", l, static_cast<uint32_t>(s.state)));
    // Sections this process writes per channel: their totals are left out,
    // so that sum() over the channel label does not count a channel twice.
    std::vector<std::string> per_channel;
    for (const auto& v : s.values)
      if (const ChannelLabel c = split_channel(v.first); !c.channel.empty()) {
        const std::string prefix = c.label.substr(0, c.label.find('.'));
        if (std::find(per_channel.begin(), per_channel.end(), prefix) == per_channel.end()) per_channel.push_back(prefix);
      }
    uint64_t unknown = 0;
    for (const auto& [raw_label, raw] : s.values) {
      const ChannelLabel cl = split_channel(raw_label);
      const std::string& label = cl.label;
      if (cl.channel.empty() &&
          std::find(per_channel.begin(), per_channel.end(), label.substr(0, label.find('.'))) != per_channel.end())
        continue;
      const auto m = cat.find(s.role, s.medium, label);
      if (!m) {
        ++unknown;
        continue;
      }
      const std::string name = prometheus_name(label, *m);
      auto [it, added] = index.try_emplace(name, families.size());
      if (added) families.push_back({name, to_string(m->type), {}, {}, {}});
      Family& f = families[it->second];
      const std::string rail = prometheus_rail(label);
      // One sample per process, rail and channel (a channel id fits in 16 bits).
      const uint64_t key = (s.pid << 22) | (rail.empty() ? 0 : static_cast<uint64_t>(rail[0] - 'a' + 1) << 17) |
                           (cl.channel.empty() ? 0 : 0x10000 | std::stoul(cl.channel));
      if (std::find(f.pids.begin(), f.pids.end(), key) != f.pids.end()) {
        ++st.duplicate_samples;
        continue;
      }
      std::string help = std::string(m->help) + std::string(unit_note(m->unit));
      if (!rail.empty()) help = rail_help(std::move(help), rail);
      if (std::none_of(f.helps.begin(), f.helps.end(), [&](const auto& h) { return h.second == help; }))
        f.helps.emplace_back(m->section ? m->section->role : std::string_view{}, help);
      f.pids.push_back(key);
      f.samples.push_back(fmt::format("{}{{{}{}{}}} {}", name, l,
                                      cl.channel.empty() ? std::string() : ",channel=\"" + cl.channel + "\"",
                                      rail.empty() ? std::string() : ",rail=\"" + rail + "\"",
                                      format_value(prometheus_value(raw, m->unit))));
    }
    for (const auto& hist : s.histograms) {
      const std::string& label = hist.label;
      const Histogram& h = hist.hist;
      const auto m = cat.find_histogram(s.role, s.medium, label);
      if (!m) {
        ++unknown;
        continue;
      }
      const std::string name = prometheus_name(label, *m);
      auto [it, added] = index.try_emplace(name, families.size());
      if (added) families.push_back({name, to_string(m->type), {}, {}, {}});
      Family& f = families[it->second];
      // A name a counter took already (of another type) or a histogram twice.
      if (f.type != to_string(m->type) || std::find(f.pids.begin(), f.pids.end(), s.pid << 22) != f.pids.end()) {
        ++st.duplicate_samples;
        continue;
      }
      f.pids.push_back(s.pid << 22);
      const std::string help = std::string(m->help) + std::string(unit_note(m->unit));
      if (std::none_of(f.helps.begin(), f.helps.end(), [&](const auto& x) { return x.second == help; }))
        f.helps.emplace_back(m->section ? m->section->role : std::string_view{}, help);
      for (const auto& b : cumulative_buckets(h))
        f.samples.push_back(fmt::format(
            "{}_bucket{{{},le=\"{}\"}} {}", name, l,
            b.le == UINT64_MAX ? std::string("+Inf") : format_value(prometheus_value(b.le, m->unit)), b.count));
      f.samples.push_back(fmt::format("{}_sum{{{}}} {}", name, l, format_value(prometheus_value(h.sum(), m->unit))));
      f.samples.push_back(fmt::format("{}_count{{{}}} {}", name, l, h.count()));
    }
    if (unknown) {
      st.unknown_labels += unknown;
      notes += fmt::format("# mdcast: {} counter{} of pid {} ({}) not in this mdcast's catalogue (a file of another "
                           "version?): left out\n",
                           unknown, unknown == 1 ? "" : "s", s.pid, prometheus_help(s.path));
    }
  }

  std::string out;
  auto emit = [&](const Family& f) {
    std::string help;
    if (f.helps.size() == 1) {
      help = f.helps[0].second;
    } else {
      // One name, several meanings by role (udp.announcements: sent by a
      // publisher, heard by a subscriber): one HELP line must say both.
      for (const auto& [role, h] : f.helps) help += fmt::format("{}{}: {}", help.empty() ? "" : "; ", role, h);
    }
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, prometheus_help(help), f.name, f.type);
    for (const auto& smp : f.samples) out += smp + "\n";
  };
  emit(alive);
  emit(state);
  for (const auto& f : families) emit(f);
  return out + subscribers_prometheus(snaps, now_ns) + notes;
}

}  // namespace mdcast::stats
