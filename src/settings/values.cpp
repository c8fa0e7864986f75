#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "mdcast/settings/values.hpp"

namespace mdcast::settings {


std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

double number_with_suffix(const std::string& raw, const std::map<std::string, double>& suffixes, double dflt_mult,
                          const char* what, const char* example) {
  const std::string v = trim(raw);
  size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) ++i;
  const std::string num = v.substr(0, i);
  const std::string suf = trim(v.substr(i));
  if (num.empty()) fail("'{}' is not {} (example: {})", raw, what, example);
  double x = 0;
  try {
    size_t used = 0;
    x = std::stod(num, &used);
    if (used != num.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    fail("'{}' is not {} (example: {})", raw, what, example);
  }
  double mult = dflt_mult;
  if (!suf.empty()) {
    auto it = suffixes.find(suf);
    if (it == suffixes.end()) fail("'{}' is not {}: unknown unit '{}' (example: {})", raw, what, suf, example);
    mult = it->second;
  }
  if (!std::isfinite(x * mult)) fail("'{}' is out of range", raw);
  return x * mult;
}

uint64_t parse_whole(const std::string& raw, uint64_t lo, uint64_t hi) {
  const std::string v = trim(raw);
  auto refuse = [&] { fail("'{}' must be a whole number in [{}, {}]", raw, lo, hi); };
  if (v.find('.') != std::string::npos) {
    // "1.5k": a fraction only makes sense with a unit; the product must still be whole.
    const double x = number_with_suffix(v, {{"k", 1e3}, {"M", 1e6}}, 1, "a whole number", "16, 1k");
    if (x != std::floor(x) || x >= 0x1p63 || x < static_cast<double>(lo) || x > static_cast<double>(hi)) refuse();
    return static_cast<uint64_t>(x);
  }
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) ++i;
  const std::string suf = trim(v.substr(i));
  if (i == 0) fail("'{}' is not a whole number (example: 16, 1k)", raw);
  uint64_t mult = 1;
  if (suf == "k")
    mult = 1000;
  else if (suf == "M")
    mult = 1000000;
  else if (!suf.empty())
    fail("'{}' is not a whole number: unknown unit '{}' (example: 16, 1k)", raw, suf);
  uint64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + i, x);
  if (ec == std::errc::result_out_of_range || end != v.data() + i) refuse();
  if (x > hi / mult) refuse();  // before multiplying: the product must not wrap either
  x *= mult;
  if (x < lo || x > hi) refuse();
  return x;
}

bool parse_bool(const std::string& v) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "0" || v == "no" || v == "off") return false;
  fail("'{}' is not a boolean (true or false)", v);
}

double parse_fraction(const std::string& v) {
  const double x = number_with_suffix(v, {{"%", 0.01}}, 1, "a fraction", "0.01 or 1%");
  if (x < 0 || x >= 1) fail("'{}' must be a fraction in [0, 1)", v);
  return x;
}

uint64_t parse_duration(const std::string& v) {
  const double x = number_with_suffix(v, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}},
                                      1e9, "a duration", "10s, 250ms, 20us");
  if (x > 1e18) fail("'{}' is too long a duration", v);
  return static_cast<uint64_t>(x);
}

uint64_t parse_size(const std::string& v) {
  const double x = number_with_suffix(
      v, {{"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"k", 1e3}, {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}},
      1, "a size", "4096, 64MiB");
  if (x != std::floor(x) || x > 1e15) fail("'{}' is not a whole number of bytes", v);
  return static_cast<uint64_t>(x);
}

double parse_rate(const std::string& v) {
  return number_with_suffix(v, {{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}}, 1, "a rate", "100000, 250k, 1.5M");
}

std::vector<uint32_t> parse_id_list(const std::string& v) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i <= v.size()) {
    const size_t comma = v.find(',', i);
    const std::string part = trim(v.substr(i, comma == std::string::npos ? std::string::npos : comma - i));
    if (part.empty()) fail("'{}' is not an instrument list (example: 0-9,20,31)", v);
    const size_t dash = part.find('-');
    auto num = [&](const std::string& t) {
      if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 9)
        fail("'{}' is not an instrument list: '{}' is not an id (example: 0-9,20,31)", v, t);
      return static_cast<uint32_t>(std::stoul(t));
    };
    if (dash == std::string::npos) {
      out.push_back(num(part));
    } else {
      const uint32_t a = num(trim(part.substr(0, dash))), b = num(trim(part.substr(dash + 1)));
      if (b < a || b - a > (1u << 20)) fail("'{}' is not an instrument list: bad range '{}'", v, part);
      for (uint32_t x = a; x <= b; ++x) out.push_back(x);
    }
    if (comma == std::string::npos) break;
    i = comma + 1;
  }
  return out;
}

std::string format_duration(uint64_t ns) {
  if (ns % kNsPerSec == 0) return fmt::format("{}s", ns / kNsPerSec);
  if (ns % kNsPerMs == 0) return fmt::format("{}ms", ns / kNsPerMs);
  if (ns % kNsPerUs == 0) return fmt::format("{}us", ns / kNsPerUs);
  return fmt::format("{}ns", ns);
}

std::string format_size(uint64_t b) {
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {{1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (const auto& [unit, name] : kUnits)
    if (b >= unit && b % unit == 0) return fmt::format("{}{}", b / unit, name);
  return std::to_string(b);
}

std::string format_rate(double r) {
  if (r >= 1e6 && std::fmod(r, 1e5) == 0) return fmt::format("{}M", r / 1e6);
  if (r >= 1e3 && std::fmod(r, 1e2) == 0) return fmt::format("{}k", r / 1e3);
  return fmt::format("{}", r);
}

std::string format_id_list(const std::vector<uint32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(ids[i]) : fmt::format("{}-{}", ids[i], ids[j]);
    i = j + 1;
  }
  return out;
}

std::string_view pacing_name(feed::PacingMode m) {
  switch (m) {
    case feed::PacingMode::kNone: return "none";
    case feed::PacingMode::kFixed: return "fixed";
    case feed::PacingMode::kSlowest: return "slowest";
  }
  return "?";
}

}  // namespace mdcast::settings
