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
  std::vector<uint64_t> pids;  // one sample per process (and channel): pid << 17 | channel
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

std::string labels(const CountersSnapshot& s) {
  return fmt::format("pid=\"{}\",role=\"{}\",name=\"{}\",medium=\"{}\",state=\"{}\"", s.pid,
                     prometheus_label_value(s.role), prometheus_label_value(s.name), prometheus_label_value(s.medium),
                     to_string(s.state));
}

std::string format_value(double v) { return fmt::format("{}", v); }

}  // namespace

ChannelLabel split_channel(std::string_view label) {
  const size_t dot = label.find('.');
  const size_t at = label.substr(0, dot).find('@');
  if (dot == std::string_view::npos || at == std::string_view::npos) return {std::string(label), {}};
  const std::string_view id = label.substr(at + 1, dot - at - 1);
  if (id.empty() || id.size() > 5 || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {std::string(label), {}};
  return {std::string(label.substr(0, at)) + std::string(label.substr(dot)), std::string(id)};
}

std::string prometheus_name(std::string_view label, const MetricInfo& m) {
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

std::string to_json(const std::vector<CountersSnapshot>& snaps, uint64_t time_unix_ms) {
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
    out += "}}";
  }
  return out + "]}";
}

std::string to_prometheus(const std::vector<CountersSnapshot>& snaps, const Catalogue& cat, ExportStats* stats) {
  ExportStats local;
  ExportStats& st = stats ? *stats : local;
  std::vector<Family> families;
  std::unordered_map<std::string, size_t> index;
  std::string notes;

  Family alive{"mdcast_process_alive", "gauge", {{"", "1 while the process that wrote this counters file lives; 0: the "
                                                      "file is stale (`mdcast stat --clean` removes it)"}}, {}, {}};
  for (const auto& s : snaps) {
    alive.samples.push_back(fmt::format("mdcast_process_alive{{{}}} {}", labels(s), s.alive ? 1 : 0));
    const std::string l = labels(s);
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
      // One sample per process and channel (a channel id fits in 16 bits).
      const uint64_t key = (s.pid << 17) | (cl.channel.empty() ? 0 : 0x10000 | std::stoul(cl.channel));
      if (std::find(f.pids.begin(), f.pids.end(), key) != f.pids.end()) {
        ++st.duplicate_samples;
        continue;
      }
      const std::string help = std::string(m->help) + std::string(unit_note(m->unit));
      if (std::none_of(f.helps.begin(), f.helps.end(), [&](const auto& h) { return h.second == help; }))
        f.helps.emplace_back(m->section ? m->section->role : std::string_view{}, help);
      f.pids.push_back(key);
      f.samples.push_back(fmt::format("{}{{{}{}}} {}", name, l,
                                      cl.channel.empty() ? std::string() : ",channel=\"" + cl.channel + "\"",
                                      format_value(prometheus_value(raw, m->unit))));
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
  for (const auto& f : families) emit(f);
  return out + notes;
}

}  // namespace mdcast::stats
