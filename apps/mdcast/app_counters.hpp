// Counters of the command-line processes themselves (beyond the engines'):
// what `mdcast stat` and the demo's progress line show, and the medium's own
// counters mirrored into the same counters file.
#pragma once

#include <string>
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
  explicit MirroredCounters(std::vector<media::CounterGroup> groups) : groups_(std::move(groups)) {}
  // Sections to create in the counters file, after those already listed.
  void add_sections(std::vector<stats::Section>& sections) {
    first_ = sections.size();
    for (const auto& g : groups_) sections.push_back({g.prefix, g.info});
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
        out.emplace_back(g.prefix + "." + std::string(g.info[k].name), g.values[k].get());
  }

 private:
  std::vector<media::CounterGroup> groups_;
  size_t first_ = 0;
};

// "prefix.name" = value of an engine's counters struct, for a result file.
template <class Counters>
void dump_counters(const Counters& c, const std::string& prefix, std::vector<std::pair<std::string, uint64_t>>& out) {
  for (size_t i = 0; i < Counters::kCount; ++i) out.emplace_back(prefix + std::string(Counters::kInfo[i].name), c.at(i).get());
}

}  // namespace mdcast::app
