// Settings values as text, both ways: the parsers every key shares (a bad
// value reads the same from a file or a flag) and the formatters that show a
// value the way it would be written (--help, --help-config).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "mdcast/core/error.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

std::string trim(std::string s);
// A non-negative decimal number with an optional unit from `suffixes`.
double number_with_suffix(const std::string& raw, const std::map<std::string, double>& suffixes, double dflt_mult,
                          const char* what, const char* example);
bool parse_bool(const std::string& v);
double parse_fraction(const std::string& v);

// A whole number with an optional k (10^3) or M (10^6), exact: digits are
// read as integers, not through a double, so 2^64 and 2^64+1 are refused
// rather than rounded to a value that then wraps in T. Throws Error naming
// [lo, hi] when the value is outside it.
uint64_t parse_whole(const std::string& v, uint64_t lo, uint64_t hi);

template <class T>
T parse_uint(const std::string& v, uint64_t lo, uint64_t hi) {
  return static_cast<T>(parse_whole(v, lo, hi));
}

std::string format_size(uint64_t bytes);       // 67108864 -> "64MiB"
std::string format_rate(double per_s);         // 100000 -> "100k"
std::string format_id_list(const std::vector<uint32_t>& ids);  // 0,1,2,3,7 -> "0-3,7"
std::string_view pacing_name(feed::PacingMode m);

// One settings key: how to read it, how to show it.
struct SettingKey {
  std::string type;  // what --help shows for its value: N, DURATION, SIZE, RATE, BOOL, FILE ...
  std::string help;
  std::function<void(Settings&, const std::string&)> set;
  std::function<std::string(const Settings&)> get;
};
using KeyTable = std::map<std::string, SettingKey>;
const KeyTable& setting_keys();
// Adds one key to a table (each section's keys: keys.cpp, and each medium's
// own, settings/media/<name>_keys.cpp).
void add_key(KeyTable& t, std::string key, std::string type, std::string help,
             std::function<void(Settings&, const std::string&)> set, std::function<std::string(const Settings&)> get);

}  // namespace mdcast::settings
