// `mdcast bench`: end-to-end numbers of one medium, side by side with the raw
// baseline of that medium (docs/performance.md explains every number).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "settings.hpp"

namespace mdcast::app {

struct BenchArgs {
  std::string medium = "shm";
  bool quick = false;
  unsigned repeat = 1;
  std::string json;
  std::string cpus;                  // empty: every CPU this process may use
  std::string rates;                 // latency rates; empty: 100k,1M
  std::string fanout;                // subscriber counts; empty: 1,2,4,8
  std::string fanout_rate;           // empty: 1M
  std::string sections;              // empty: all (control only with --control-clients)
  uint32_t control_clients = 0;      // the control section's clients; 0: 1024 when --sections names it
  std::string control_rate;          // its offered rate; empty: 100k
  std::string flow = "opaque";       // opaque | orders (latency runs)
  std::string warmup, duration;      // per measured run; empty: defaults (--quick: shorter)
  std::string control_poll = "100us";  // least time between control-plane polls (as feed.control_poll); 0: every idle round
  int progress = -1;                 // -1: when stderr is a terminal
  std::vector<std::pair<std::string, std::string>> set;  // --set key=value
};

// Registers the subcommand and its flags; returns it so main can ask parsed().
CLI::App* add_bench_command(CLI::App& app, BenchArgs& args);
int run_bench(Settings& s, const BenchArgs& args);

}  // namespace mdcast::app
