#include "mdcast/settings/suggest.hpp"

#include <algorithm>

#include "mdcast/settings/values.hpp"

namespace mdcast::settings {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: a swapped pair (--raet) is one typo, not two.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string nearest(std::string_view typed, const std::vector<std::string>& candidates) {
  if (typed.empty()) return {};
  // Leading dashes are not part of what was mistyped: --rat is "rat".
  auto bare = [](std::string_view s) {
    while (!s.empty() && s.front() == '-') s.remove_prefix(1);
    return s;
  };
  const std::string_view t = bare(typed);
  if (t.empty()) return {};
  const size_t limit = std::clamp<size_t>(t.size() / 3, 1, 3);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    const std::string_view b = bare(c);
    if (b == t) return c;
    size_t dist = edit_distance(t, b);
    // A prefix or suffix of a longer name (--rat for --rate, --map for
    // --channel-map) is as good as one edit, however many letters are missing.
    if (t.size() >= 3 && b.size() > t.size() && (b.substr(0, t.size()) == t || b.substr(b.size() - t.size()) == t))
      dist = std::min<size_t>(dist, 1);
    if (dist < best_d) {
      best_d = dist;
      best = c;
    }
  }
  return best;
}

std::string nearest_setting(std::string_view key) {
  std::vector<std::string> all, in_section;
  const size_t dot = key.find('.');
  const std::string_view section = dot == std::string_view::npos ? std::string_view{} : key.substr(0, dot + 1);
  for (const auto& [k, _] : setting_keys()) {
    all.push_back(k);
    if (!section.empty() && k.compare(0, section.size(), section) == 0) in_section.push_back(k.substr(section.size()));
  }
  // A known section was meant: a guess from another one (subscriber.rate ->
  // subscriber.wait is near; publisher.rate is not) would mislead.
  if (!in_section.empty()) {
    const std::string n = nearest(key.substr(section.size()), in_section);
    return n.empty() ? n : std::string(section) + n;
  }
  return nearest(key, all);
}

}  // namespace mdcast::settings
