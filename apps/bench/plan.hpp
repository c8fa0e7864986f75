// What one `mdcast bench` invocation runs: the sections, the offered rates,
// the fan-out counts and the windows, from the flags over the medium's
// defaults (--quick shortens everything).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "command.hpp"
#include "medium.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

struct Plan {
  bool c2c = true, raw = true, latency = true, throughput = true, fanout = true;
  // The control-plane section: the feed at control_rate with 0, then
  // control_clients control clients (control_bench.hpp); on when
  // --control-clients is given or --sections names it.
  bool control = false;
  // The relay section (--sections relay): at each latency rate, one-way
  // latency straight from the publisher and through a relay, in one run.
  bool relay = false;
  uint32_t control_clients = 0;
  double control_rate = 100e3;
  std::vector<double> rates;
  std::vector<uint32_t> fanout_counts;
  double fanout_rate = 1e6;
  bool orders = false;
  Window lat_window, probe_window, fan_window;
  uint64_t c2c_round_trips = 0, c2c_warmup = 0;
  int probe_steps = 6;
  size_t message_bytes = 64;
  uint64_t flush_interval_ns = 0;  // batching runs (throughput, fan-out)
  uint64_t control_poll_ns = 0;
};

// The most control clients one load process opens (a descriptor each).
inline constexpr uint32_t kMaxControlClients = 65536;

// Throws Error naming the flag whose value is out of range.
Plan make_plan(const Settings& s, const BenchArgs& a, const PlanDefaults& d);

// A rate as the flags write it ("100k", "1M"); it names the rate's numbers
// in the summary and the JSON, so it must stay stable.
std::string rate_key(double r);

}  // namespace mdcast::app::bench
