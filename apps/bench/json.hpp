// The JSON document of `mdcast bench --json`: every number of every
// repetition, the summary, the targets. docs/performance.md and
// tests/system/bench_quick.sh read its keys: keep them stable.
#pragma once

#include <string>
#include <vector>

#include "command.hpp"
#include "medium.hpp"
#include "plan.hpp"
#include "report.hpp"
#include "run.hpp"
#include "summary.hpp"

namespace mdcast::app::bench {

std::string to_json(const std::vector<Rep>& reps, const Summary& S, const Plan& plan, const MediumBench& m,
                    const BenchArgs& a, const HostFacts& host, const std::vector<std::string>& warnings);

}  // namespace mdcast::app::bench
