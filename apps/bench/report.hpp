// What the bench tells its user: the tables (medians, [min-max] over
// repetitions), the targets with their verdicts, and the warnings that say
// when the numbers mean less than they seem to.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "medium.hpp"
#include "plan.hpp"
#include "run.hpp"
#include "summary.hpp"

namespace mdcast::app::bench {

// The machine the bench ran on, as the warnings and the JSON describe it.
struct HostFacts {
  std::vector<int> cpus;  // pinned to, publisher first
  long online = 0;        // CPUs online
  std::array<double, 3> load_start{}, load_end{};
  double clock_read_ns = 0;
};

struct Target {
  std::string what, target, measured, verdict;
  bool measured_ok = false, met = false;
};
// The design targets of this medium against the medians.
std::vector<Target> targets(const Summary& S, const Plan& plan, const MediumBench& m);

// Durations in ns/us/ms, rates in /s, k/s, M/s ("-" for NaN), as every table writes them.
std::string ns_str(double v);
std::string rate_str(double v);

// "ok", or why a throughput probe did not pass.
std::string probe_verdict(const Probe& p);

// Before the runs: what about the host will make the numbers noisy.
std::vector<std::string> start_warnings(const HostFacts& host, const Plan& plan);
// After them: what the runs ran into (failures, crowding, a publisher short of
// the offered rate, preemption; the same text from several runs once, naming
// them), and load that came up meanwhile.
void add_end_warnings(std::vector<std::string>& out, const std::vector<Rep>& reps, const HostFacts& host,
                      const Plan& plan);

void print_report(const Summary& S, const std::vector<Rep>& reps, const Plan& plan, const MediumBench& m,
                  const std::vector<std::string>& warnings, unsigned repeat);

}  // namespace mdcast::app::bench
