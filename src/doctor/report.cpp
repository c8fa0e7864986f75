// `mdcast doctor`: running the checks and writing the report as text or JSON.
#include <fmt/format.h>

#include "checks.hpp"

namespace mdcast::doctor {

std::string_view to_string(Level l) noexcept {
  switch (l) {
    case Level::kOk: return "ok";
    case Level::kWarning: return "warning";
    case Level::kError: return "error";
  }
  return "?";
}

std::string_view to_string(Medium m) noexcept {
  switch (m) {
    case Medium::kShm: return "shm";
    case Medium::kUdp: return "udp";
    case Medium::kVerbs: return "verbs";
  }
  return "?";
}

void Report::add(std::string area, std::string check, Level level, std::string value, std::string advice) {
  findings.push_back({std::move(area), std::move(check), level, std::move(value), std::move(advice)});
}

size_t Report::count(Level l) const noexcept {
  size_t n = 0;
  for (const auto& f : findings) n += f.level == l;
  return n;
}

const Finding* Report::find(std::string_view area, std::string_view check) const noexcept {
  for (const auto& f : findings)
    if (f.area == area && f.check == check) return &f;
  return nullptr;
}

Report diagnose(const Options& o) {
  Report r;
  r.medium = std::string(to_string(o.medium));
  detail::check_host(o, r);
  if (o.medium == Medium::kShm) detail::check_shm(o, r);
  if (o.medium == Medium::kUdp) detail::check_udp(o, r);
  detail::check_rdma(o, r);
  detail::check_fanout(o, r);
  return r;
}

std::string format_text(const Report& r) {
  std::string out = fmt::format("mdcast doctor: judged for the {} medium\n", r.medium);
  for (const auto& n : r.notes) out += "\n" + n + "\n";
  out += "\n";
  std::string area;
  for (const auto& f : r.findings) {
    if (f.area != area) {
      area = f.area;
      out += fmt::format("{}\n", area);
    }
    const char* tag = f.level == Level::kOk ? "  ok   " : f.level == Level::kWarning ? "  WARN " : "  ERROR";
    out += fmt::format("{} {}: {}\n", tag, f.check, f.value);
    if (!f.advice.empty()) out += fmt::format("          -> {}\n", f.advice);
  }
  const size_t e = r.count(Level::kError), w = r.count(Level::kWarning);
  out += fmt::format("\n{} error{}, {} warning{}{}\n", e, e == 1 ? "" : "s", w, w == 1 ? "" : "s",
                     e ? ": the feed would not run as configured (fix the errors above)" : "");
  return out;
}

namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  return out + "\"";
}

}  // namespace

std::string format_json(const Report& r) {
  std::string out = fmt::format("{{\"medium\": {}, \"errors\": {}, \"warnings\": {}, \"notes\": [", json_string(r.medium),
                                r.count(Level::kError), r.count(Level::kWarning));
  for (size_t i = 0; i < r.notes.size(); ++i) out += (i ? ", " : "") + json_string(r.notes[i]);
  out += "], \"findings\": [";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const auto& f = r.findings[i];
    out += fmt::format("{}\n  {{\"area\": {}, \"check\": {}, \"level\": {}, \"value\": {}, \"advice\": {}}}", i ? "," : "",
                       json_string(f.area), json_string(f.check), json_string(to_string(f.level)),
                       json_string(f.value), json_string(f.advice));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace mdcast::doctor
