// `mdcast bench` in a build without benchmarks (MDCAST_BUILD_BENCH=OFF, the
// sanitizer presets): the subcommand exists, so `mdcast --help` reads the
// same in every build, and says where the benchmarks are instead of running.
// A sanitizer's numbers would be the sanitizer's, and compiling the bench is
// a fifth of such a build.
#include "command.hpp"

#include <fmt/format.h>

#include <cstdio>

#include "exit_codes.hpp"

namespace mdcast::app {

CLI::App* add_bench_command(CLI::App& app, BenchArgs&) {
  auto* b = app.add_subcommand("bench", "latency, throughput and fan-out over a medium (not in this build: MDCAST_BUILD_BENCH=OFF)");
  b->fallthrough(false)->allow_extras();  // whatever flags follow: the answer is the same
  return b;
}

int run_bench(Settings&, const BenchArgs&) {
  fmt::print(stderr,
             "mdcast bench: this build has no benchmarks (configured with MDCAST_BUILD_BENCH=OFF, as the asan and tsan "
             "presets are); run it from the release build: make bench\n");
  return exit_code::kUsage;
}

}  // namespace mdcast::app
