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
inline void sum_channels(std::span<const CounterInfo> info, Counter* total, std::span<Counter* const> channels) noexcept {
  for (size_t k = 0; k < info.size(); ++k) {
    const std::string_view n = info[k].name;
    const bool most = n.starts_with("longest") || n.ends_with("_max_ns");
    const bool least = n.starts_with("slowest");
    uint64_t v = 0;
    for (Counter* c : channels) {
      const uint64_t x = c[k].get();
      if (most)
        v = std::max(v, x);
      else if (least)
        v = x && (!v || x < v) ? x : v;
      else
        v += x;
    }
    total[k].set(v);
  }
}

// "prefix.name" = value of an engine's counters struct, for a result file.
template <class Counters>
void dump_counters(const Counters& c, const std::string& prefix, std::vector<std::pair<std::string, uint64_t>>& out) {
  for (size_t i = 0; i < Counters::kCount; ++i) out.emplace_back(prefix + std::string(Counters::kInfo[i].name), c.at(i).get());
}

}  // namespace mdcast::stats
