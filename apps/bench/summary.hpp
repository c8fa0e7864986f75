// Every number of a repetition under a flat name ("latency.100k.mdcast_ns.p50"),
// and their median and spread over the repetitions: the report, the targets
// and the JSON summary read the numbers by these names.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "measure/stats.hpp"
#include "run.hpp"

namespace mdcast::app::bench {

// Fills rep.metrics from what the repetition measured.
void collect_metrics(Rep& rep);

class Summary {
 public:
  explicit Summary(const std::vector<Rep>& reps);
  // NaN when no repetition measured it.
  [[nodiscard]] double median(const std::string& k) const;
  // "[min-max]" of a repeated number in its own unit; empty for one run.
  template <class Fmt>
  [[nodiscard]] std::string range(const std::string& k, Fmt&& unit) const {
    const auto it = spreads_.find(k);
    if (it == spreads_.end() || it->second.n < 2) return "";
    return fmt::format("[{}-{}]", unit(it->second.min), unit(it->second.max));
  }
  [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return order_; }
  [[nodiscard]] const Spread& at(const std::string& k) const { return spreads_.at(k); }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<double>> values_;
  std::map<std::string, Spread> spreads_;
};

}  // namespace mdcast::app::bench
