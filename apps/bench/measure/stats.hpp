// Summaries for benchmark reports: a latency histogram reduced to the
// percentiles we print, and the spread of one number over repeated runs
// (median, min, max: repeated runs on a shared machine are not normal, so no
// mean and standard deviation).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "mdcast/core/histogram.hpp"

namespace mdcast::app::bench {

struct Percentiles {
  uint64_t count = 0;
  double mean = 0;
  uint64_t min = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0;

  static Percentiles of(const Histogram& h) noexcept {
    Percentiles p;
    p.count = h.count();
    p.mean = h.mean();
    p.min = h.min();
    p.p50 = h.percentile(50);
    p.p90 = h.percentile(90);
    p.p99 = h.percentile(99);
    p.p999 = h.percentile(99.9);
    p.p9999 = h.percentile(99.99);
    p.max = h.max();
    return p;
  }
};

struct Spread {
  size_t n = 0;
  double median = std::numeric_limits<double>::quiet_NaN();
  double min = median, max = median;

  // (max - min) / median, in percent; 0 for a single value.
  [[nodiscard]] double spread_pct() const noexcept {
    return n > 1 && median != 0 ? 100.0 * (max - min) / std::fabs(median) : 0.0;
  }

  // NaN values (a run that could not measure it) are left out.
  static Spread of(std::vector<double> v) {
    v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
    Spread s;
    s.n = v.size();
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    s.min = v.front();
    s.max = v.back();
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    return s;
  }
};

}  // namespace mdcast::app::bench
