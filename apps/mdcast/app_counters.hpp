// Counters of the command-line processes themselves (beyond the engines'):
// what `mdcast stat` and the demo's progress line show, and the medium's own
// counters mirrored into the same counters file.
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

namespace mdcast::app {

#define MDCAST_APP_SUB_COUNTERS(X)                                                          \
  X(lost, "datagrams lost before the engine saw them (lapped ring, injected loss)")        \
  X(latency_p50_ns, "one-way latency p50 so far, ns")                                       \
  X(latency_p99_ns, "one-way latency p99 so far, ns")                                       \
  X(latency_max_ns, "one-way latency max so far, ns")

#define MDCAST_APP_PUB_COUNTERS(X)                                         \
  X(target_rate, "configured synthetic rate, messages/s")                  \
  X(generated, "synthetic messages generated")                             \
  X(control_clients, "connected control clients")                          \
  X(control_time_us, "time spent polling the control plane, microseconds") \
  X(elapsed_ms, "milliseconds since publishing started")

MDCAST_DEFINE_COUNTER_STRUCT(AppSubCounters, MDCAST_APP_SUB_COUNTERS);
MDCAST_DEFINE_COUNTER_STRUCT(AppPubCounters, MDCAST_APP_PUB_COUNTERS);

// A medium keeps its counters in its own memory; these are copied into
// sections of the process's counters file on every refresh (control code,
// a few times a second), so `mdcast stat` sees them too.
class MirroredCounters {
 public:
  // `suffix`: a channel's ("@3") when a process has several.
  explicit MirroredCounters(std::vector<media::CounterGroup> groups, std::string suffix = {})
      : groups_(std::move(groups)), suffix_(std::move(suffix)) {}
  // Sections to create in the counters file, after those already listed.
  void add_sections(std::vector<stats::Section>& sections) {
    first_ = sections.size();
    for (const auto& g : groups_) sections.push_back({g.prefix + suffix_, g.info});
  }
  void refresh(stats::CountersFile& f) noexcept {
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

// A feed over several channels writes each channel's engine counters in a
// section of its own ("pub@3", "sub@9": the wire channel id); the plain
// section ("pub", "sub") holds their totals, refreshed here, so everything
// that reads one channel's process (the demo, dashboards) reads a feed over
// many alike. A total is the sum, but for the longest (the most) and the
// slowest (the least of those reported).
inline std::string channel_prefix(std::string_view prefix, uint16_t channel) {
  return std::string(prefix) + "@" + std::to_string(channel);
}
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

}  // namespace mdcast::app
