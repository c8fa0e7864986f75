// mdcast bench: in one run, side by side,
//   - core-to-core cache-line latency (the physical floor of shared memory),
//   - the raw baseline of the medium (a minimal ring for shm),
//   - mdcast over the medium: one-way latency at fixed offered rates,
//     the highest rate of 64-byte messages delivered with no loss at all,
//     fan-out to 1..N subscribers with the publisher's CPU time per message,
//   - with --control-clients N: latency and the publisher's CPU per message
//     with 0 and with N real control connections (control_bench.hpp),
// each optionally repeated (median and spread). docs/performance.md says
// what every number means. This file is the subcommand's flags and its
// course; plan.cpp decides what runs, run.cpp runs it, report.cpp and
// json.cpp say what came out.
#include "command.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "cli.hpp"
#include "exit_codes.hpp"
#include "control_load.hpp"
#include "json.hpp"
#include "measure/cpu.hpp"
#include "medium.hpp"
#include "mdcast/core/error.hpp"
#include "plan.hpp"
#include "progress.hpp"
#include "settings.hpp"
#include "report.hpp"
#include "run.hpp"
#include "runners.hpp"
#include "summary.hpp"

namespace mdcast::app {

namespace bench {

std::unique_ptr<MediumBench> make_medium_bench(MediumKind m, const Settings& s, const Placement& where) {
  return with_medium(m, [&](auto entry) { return medium_bench(entry, s, where); });
}

}  // namespace bench

using namespace bench;

CLI::App* add_bench_command(CLI::App& app, BenchArgs& a) {
  auto* b = app.add_subcommand("bench", "latency, throughput and fan-out over a medium, side by side with its raw baseline");
  // Every option's default in --help: the value itself where one is fixed,
  // in words where it depends on the medium or --quick.
  b->add_option("--medium", a.medium, "shm, udp (multicast on udp.interface, lo by default) or verbs")
      ->capture_default_str();
  b->add_flag("--quick", a.quick, "a short smoke run (seconds; rough numbers)");
  b->add_option("--repeat", a.repeat, "run everything N times; report median and spread")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  b->add_option("--json", a.json, "also write every number to this JSON file (default: none)")->type_name("FILE");
  b->add_option("--cpus", a.cpus, "CPUs to pin to, publisher first: 0,1 or 0-3 (default: all this process may use)");
  b->add_option("--rates", a.rates, "offered rates of the latency runs (default 100k,1M; Soft-RoCE 1k,5k)");
  b->add_option("--fanout", a.fanout, "subscriber counts of the fan-out runs (default 1,2,4,8; udp 1,2,4; --quick 1,2; Soft-RoCE 1,2,4)");
  b->add_option("--fanout-rate", a.fanout_rate, "offered rate of the fan-out runs (default 1M; udp 2M; --quick 200k; Soft-RoCE 50k, --quick 20k)");
  b->add_option("--sections", a.sections,
                "run only these: c2c,raw,latency,throughput,fanout,control,relay (default: all but relay, control "
                "only with --control-clients)");
  b->add_option("--control-clients", a.control_clients,
                "control section: publish latency and CPU with 0 and with N real control connections (subscribe, "
                "status every 100 ms, some retransmits and snapshots) from one load process; default 1024 when "
                "--sections names control")
      ->check(CLI::Range(1u, kMaxControlClients));
  b->add_option("--control-rate", a.control_rate, "offered rate of the control section's runs (default 100k)");
  b->add_option("--flow", a.flow, "latency runs: opaque 64-byte messages, or the synthetic order flow with books on")
      ->check(CLI::IsMember({"opaque", "orders"}))
      ->capture_default_str();
  b->add_option("--warmup", a.warmup, "warm-up before each measured window (default 1s; --quick 200ms)");
  b->add_option("--duration", a.duration, "measured window of the latency runs (default 5s; --quick 500ms); "
                                          "fan-out runs use half, throughput probes a quarter");
  b->add_option("--control-poll", a.control_poll,
                 "least time between control-plane polls in the duty loops (like feed.control_poll "
                 "in `mdcast publish/subscribe`; 0: every idle round)")
      ->capture_default_str();
  b->add_option_function<std::string>(
      "--progress", [&a](const std::string& v) { a.progress = v == "true" || v == "1" || v == "yes" ? 1 : 0; },
      "live progress line: true/false (default: when stderr is a terminal)");
  add_set_option(b, [&a](std::string k, std::string v) { a.set.emplace_back(std::move(k), std::move(v)); },
                 "set any setting: --set shm.slots=65536 (see --help-config)");
  return b;
}

int run_bench(Settings& s, const BenchArgs& a) {
  for (const auto& [k, v] : a.set) apply_setting(s, k, v, "--set " + k);
  apply_setting(s, "feed.medium", a.medium, "--medium");
  const std::vector<int> cpus = a.cpus.empty() ? allowed_cpus() : parse_cpu_list(a.cpus);
  if (cpus.empty()) fail("no CPU to run on");
  Placement where{cpus};
  auto medium = make_medium_bench(s.feed.medium, s, where);
  const Plan plan = make_plan(s, a, medium->defaults());
  Progress progress(a.progress < 0 ? isatty(STDERR_FILENO) != 0 : a.progress == 1);

  HostFacts host;
  host.cpus = cpus;
  host.online = sysconf(_SC_NPROCESSORS_ONLN);
  host.load_start = load_average();
  std::vector<std::string> warnings = start_warnings(host, plan);
  if (plan.control) {
    if (medium->name() == "verbs")
      fail("--control-clients: the verbs medium's control plane is RC queue pairs, not a stream socket; the load "
           "client speaks the shm medium's Unix socket and UDP's TCP port");
    // The publisher holds a descriptor per client, the load process one each too.
    if (std::string why = raise_open_files(uint64_t{plan.control_clients} + 256); !why.empty())
      warnings.push_back(std::move(why));
  }

  fmt::print("mdcast bench: medium {} ({}), CPUs {} of {}, {}{}\n", medium->name(), medium->describe(),
             format_cpu_list(cpus), host.online, a.quick ? "quick run" : "full run",
             a.repeat > 1 ? fmt::format(", {} repetitions", a.repeat) : "");
  const auto& load0 = host.load_start;
  fmt::print("load average at start {:.2f} {:.2f} {:.2f}\n", load0[0], load0[1], load0[2]);
  for (const auto& w : warnings) fmt::print("  ! {}\n", w);
  std::fflush(stdout);
  host.clock_read_ns = clock_read_ns();

  Runner runner(*medium, plan, cpus.size(), progress, a.repeat);
  std::vector<Rep> reps;
  for (unsigned i = 0; i < a.repeat && !g_stop.requested(); ++i) reps.push_back(runner.run_once(i, cpus));
  if (g_stop.requested()) {
    fmt::print(stderr, "mdcast bench: interrupted\n");
    return exit_code::kInterrupted;
  }
  host.load_end = load_average();
  add_end_warnings(warnings, reps, host, plan);
  const Summary S(reps);
  fmt::print("clock: CLOCK_MONOTONIC read costs {:.0f} ns (each latency includes one read at each end); "
             "control plane polled every {}\n",
             host.clock_read_ns, plan.control_poll_ns ? format_duration(plan.control_poll_ns) : "every idle round");
  print_report(S, reps, plan, *medium, warnings, a.repeat);
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    if (!f) fail_errno("cannot write {}", a.json);
    f << to_json(reps, S, plan, *medium, a, host, warnings);
    if (!f) fail_errno("cannot write {}", a.json);
    fmt::print("\nJSON written to {}\n", a.json);
  }
  // Failing to run is an error; slow numbers are not.
  bool ran = true;
  for (const auto& r : reps) {
    for (const auto& l : r.lat) ran &= (!l.raw || l.raw->ok) && (!l.md || l.md->completed);
    for (const auto& f : r.fan) ran &= f.r.completed;
    if (r.tp) ran &= !r.tp->probes.empty() && r.tp->probes[0].r.completed;
    // Clients refused or cut: the run with clients is not what was asked for.
    for (const auto& c : r.ctl)
      for (const bench::RunResult* x : {&c.lat, &c.cost}) ran &= x->completed && (!x->control || x->control->all_admitted());
  }
  // A run that did not complete is a setup problem (the machine, a medium), not lost data.
  return ran ? exit_code::kOk : exit_code::kSetup;
}

}  // namespace mdcast::app
