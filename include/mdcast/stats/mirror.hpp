// Counters that live elsewhere, shown in a process's counters file.
//
// A medium keeps its counters in its own memory; MirroredCounters copies
// them into sections of the counters file on every refresh (control code, a
// few times a second), so `mdcast stat` sees them too. A feed over several
// channels writes each channel's engine counters in a section of its own
// ("pub@3", "sub@9": the wire channel id); the plain section ("pub", "sub")
// holds their totals (sum_channels), so everything that reads a one-channel
// process (dashboards, the demo) reads a feed over many alike.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {

class MirroredCounters {
 public:
  // `suffix`: a channel's ("@3") when a process has several.
  explicit MirroredCounters(std::vector<media::CounterGroup> groups, std::string suffix = {})
      : groups_(std::move(groups)), suffix_(std::move(suffix)) {}
  // Sections to create in the counters file, after those already listed.
  void add_sections(std::vector<Section>& sections) {
    first_ = sections.size();
    for (const auto& g : groups_) sections.push_back({g.prefix + suffix_, g.info});
  }
  void refresh(CountersFile& f) noexcept {
    for (size_t i = 0; i < groups_.size(); ++i) {
      Counter* out = f.section_base(first_ + i);
      for (size_t k = 0; k < groups_[i].info.size(); ++k) out[k].set(groups_[i].values[k].get());
    }
  }
  // "prefix.name" = value, for a result file.
  void dump(std::vector<std::pair<std::string, uint64_t>>& out) const {
    for (const auto& g : groups_)
      for (size_t k = 0; k < g.info.size(); ++k)
        out.emplace_back(g.prefix + suffix_ + "." + std::string(g.info[k].name), g.values[k].get());
  }

 private:
  std::vector<media::CounterGroup> groups_;
  std::string suffix_;
  size_t first_ = 0;
};

inline std::string channel_prefix(std::string_view prefix, uint16_t channel) {
  return std::string(prefix) + "@" + std::to_string(channel);
}

// A total is the sum, but for the longest (the most) and the slowest (the
// least of those reported).
inline uint64_t add_to_total(std::string_view name, uint64_t total, uint64_t x) noexcept {
  if (name.starts_with("longest") || name.ends_with("_max_ns")) return std::max(total, x);
  if (name.starts_with("slowest")) return x && (!total || x < total) ? x : total;
  return total + x;
}
inline void sum_channels(std::span<const CounterInfo> info, Counter* total, std::span<Counter* const> channels) noexcept {
  for (size_t k = 0; k < info.size(); ++k) {
    uint64_t v = 0;
    for (Counter* c : channels) v = add_to_total(info[k].name, v, c[k].get());
    total[k].set(v);
  }
}

// "prefix.name" = value of an engine's counters struct, for a result file.
template <class Counters>
void dump_counters(const Counters& c, const std::string& prefix, std::vector<std::pair<std::string, uint64_t>>& out) {
  for (size_t i = 0; i < Counters::kCount; ++i) out.emplace_back(prefix + std::string(Counters::kInfo[i].name), c.at(i).get());
}

// The totals of a result file's "prefix@C.name" pairs, appended as
// "prefix.name" (what sum_channels puts in a counters file).
inline void total_channels(std::span<const CounterInfo> info, std::string_view prefix,
                           std::vector<std::pair<std::string, uint64_t>>& pairs) {
  const std::string at = std::string(prefix) + "@";
  const size_t n = pairs.size();
  for (const CounterInfo& c : info) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      const std::string_view k = pairs[i].first;
      const size_t dot = k.find('.');
      if (k.starts_with(at) && dot != std::string_view::npos && k.substr(dot + 1) == c.name)
        v = add_to_total(c.name, v, pairs[i].second);
    }
    pairs.emplace_back(std::string(prefix) + "." + std::string(c.name), v);
  }
}

}  // namespace mdcast::stats
