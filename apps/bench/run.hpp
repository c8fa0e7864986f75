// Executing the plan once: what one repetition measured (Rep), the figures
// derived from a run of the mdcast processes, and the Runner that steps
// through the sections over a medium.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "measure/core_to_core.hpp"
#include "medium.hpp"
#include "mdcast/core/histogram.hpp"
#include "plan.hpp"
#include "progress.hpp"

namespace mdcast::app::bench {

struct LatencyPoint {
  double rate = 0;
  std::optional<RawResult> raw;
  std::optional<RunResult> md;
};

struct Probe {
  double offered = 0;  // 0: unpaced
  RunResult r;
  bool pass = false;
};

struct Throughput {
  std::optional<RawResult> raw;
  std::vector<Probe> probes;
  int best = -1;  // index of the fastest passing probe
  bool publisher_bound = false;
};

struct FanoutPoint {
  uint32_t n = 0;
  RunResult r;
  bool crowded = false;
};

// The control-plane section's runs with `clients` control clients (0:
// none): the same feed twice, as the latency runs measure it (a spinning
// publisher: one-way latency) and as the fan-out runs do (a publisher that
// sleeps between 1 ms bursts: its CPU time is its cost).
struct ControlPoint {
  uint32_t clients = 0;
  RunResult lat, cost;
};

// The relay section at `rate`: subscriber 1 reads the publisher, subscriber
// 2 the same feed through a relay process (one hop). Twice, as the control
// section does: every process spinning (one-way latency), then sleeping when
// idle with the publisher in 1 ms bursts (the relay's CPU time is its cost).
struct RelayPoint {
  double rate = 0;
  RunResult r, cost;
  bool crowded = false;  // more processes than CPUs: the latency run's spinners share cores
};

struct Rep {
  std::optional<CoreToCoreResult> c2c;
  std::string c2c_error;
  std::vector<LatencyPoint> lat;
  std::optional<Throughput> tp;
  std::vector<FanoutPoint> fan;
  std::vector<ControlPoint> ctl;
  std::vector<RelayPoint> relay;
  std::vector<std::pair<std::string, double>> metrics;  // flat, for the summary
};

// ------------------------------------------------------ figures of a run --

// The slowest subscriber's delivery rate: what "delivered per subscriber" means.
inline double min_sub_rate(const RunResult& r) {
  if (r.subs.empty()) return 0;
  double m = r.subs[0].rate;
  for (const auto& s : r.subs) m = std::min(m, s.rate);
  return m;
}

inline Histogram merged_latency(const RunResult& r) {
  Histogram h;
  for (const auto& s : r.subs) h.merge(s.latency);
  return h;
}

// A publisher total inside the window, per message published in it; NaN
// when nothing was.
inline double per_msg(const RunResult& r, uint64_t window_total) {
  return r.pub.window_messages ? static_cast<double>(window_total) / static_cast<double>(r.pub.window_messages)
                               : std::nan("");
}
inline double cpu_ns_per_msg(const RunResult& r) { return per_msg(r, r.pub.window_cpu_ns); }
inline double control_ns_per_msg(const RunResult& r) { return per_msg(r, r.pub.window_control_ns); }
inline double bytes_per_msg(const RunResult& r) { return per_msg(r, r.pub.window_bytes); }
inline double medium_bytes_per_msg(const RunResult& r) { return per_msg(r, r.pub.window_medium_bytes); }

// ------------------------------------- CPU utilisation, pages touched --

// The subscriber that spent the most CPU in its window (nullptr: none measured).
inline const SubscriberResult* busiest_sub(const RunResult& r) {
  const SubscriberResult* b = nullptr;
  for (const auto& s : r.subs)
    if (s.usage.wall_ns && (!b || s.usage.cpu_pct() > b->usage.cpu_pct())) b = &s;
  return b;
}
inline double ratio_or_nan(double a, double b) { return b > 0 ? a / b : std::nan(""); }
// Distinct 4 KiB pages of the engine ring entered per datagram / per message
// of the window (board.hpp); kernel: in the ring mapping's own page size.
inline double ring_pages_per_datagram(const RunResult& r) {
  return ratio_or_nan(static_cast<double>(r.pub.ring_pages_4k), static_cast<double>(r.pub.ring_swept));
}
inline double ring_pages_per_msg(const RunResult& r) {
  return ring_pages_per_datagram(r) * ratio_or_nan(static_cast<double>(r.pub.window_datagrams),
                                                   static_cast<double>(r.pub.window_messages));
}
inline double ring_kernel_pages_per_msg(const RunResult& r) {
  return ratio_or_nan(static_cast<double>(r.pub.ring_pages_kernel), static_cast<double>(r.pub.ring_swept)) *
         ratio_or_nan(static_cast<double>(r.pub.window_datagrams), static_cast<double>(r.pub.window_messages));
}
inline double minflt_per_msg(const Usage& u, uint64_t messages) {
  return ratio_or_nan(static_cast<double>(u.minflt), static_cast<double>(messages));
}
inline double dtlb_per_msg(const Usage& u, uint64_t messages) {
  return u.dtlb_misses == kNotCounted ? std::nan("")
                                      : ratio_or_nan(static_cast<double>(u.dtlb_misses), static_cast<double>(messages));
}
// The most any subscriber took per message it delivered in the window.
template <class F>
double max_over_subs(const RunResult& r, F&& per_sub) {
  double m = std::nan("");
  for (const auto& s : r.subs) {
    const double v = per_sub(s);
    if (!std::isnan(v) && (std::isnan(m) || v > m)) m = v;
  }
  return m;
}
inline double sub_minflt_per_msg(const RunResult& r) {
  return max_over_subs(r, [](const SubscriberResult& s) { return minflt_per_msg(s.usage, s.rx_window); });
}
inline double sub_dtlb_per_msg(const RunResult& r) {
  return max_over_subs(r, [](const SubscriberResult& s) { return dtlb_per_msg(s.usage, s.rx_window); });
}

inline uint64_t lost_total(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& s : r.subs) n += s.delivered < r.pub.published ? r.pub.published - s.delivered : 0;
  return n;
}
inline uint64_t lapped_total(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& s : r.subs) n += s.lapped;
  return n;
}
inline long preempted_total(const RunResult& r) {
  long n = r.pub.preempted;
  for (const auto& s : r.subs) n += s.preempted;
  return n;
}

// -------------------------------------------------------------- the runs --

class Runner {
 public:
  Runner(MediumBench& medium, const Plan& plan, size_t ncpus, Progress& progress, unsigned repeat);

  // Every section of the plan once; cpus[0] and cpus[1] for core-to-core.
  Rep run_once(unsigned rep_index, const std::vector<int>& cpus);

 private:
  void phase(const std::string& what);
  // What every run of the plan shares: message size, control-plane polling.
  RunSpec run_spec(const char* label, uint32_t subscribers, double rate, const Window& window) const;
  RunResult probe(double rate);
  Throughput throughput();

  MediumBench& m_;
  const Plan& plan_;
  size_t ncpus_;
  Progress& progress_;
  unsigned repeat_;
  unsigned rep_ = 0;
  size_t step_ = 0, steps_ = 0;
};

}  // namespace mdcast::app::bench
