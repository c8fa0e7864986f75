// mdcast demo: a publisher and N subscriber processes on the best medium
// available, a live progress line read from their counters files (the same
// files `mdcast stat` reads), then a report from their result files with the
// books of every subscriber verified against the publisher's.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/affinity.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/runtime/child_process.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/progress.hpp"
#include "mdcast/stats/text.hpp"
#include "settings.hpp"
#include "runners.hpp"

namespace mdcast::app {
namespace {

using stats::grouped;

struct Child {
  std::string label;
  std::string result;
  runtime::ChildProcess proc;
};

std::string us(uint64_t ns) { return fmt::format("{:.1f}", static_cast<double>(ns) / 1e3); }

}  // namespace

int run_demo(Settings& s, const DemoArgs& a) {
  // What the children are told beyond the user's settings, from the medium's registry entry.
  std::string medium_name, where;
  SettingPairs extra;
  with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    medium_name = E::kName;
    where = E::demo_where(s);
    extra = E::demo_settings(s);
  });
  if (s.demo.cut_rail_a_ns && (medium_name != "udp" || s.udp.rail_b.empty()))
    fail("demo.cut_rail_a needs the udp medium with a rail B (--medium udp --rail-b GROUP:PORT[@IFACE])");
  bool name_given = false, idle_given = false;
  for (const auto& [k, v] : a.settings) {
    name_given |= k == "feed.name";
    idle_given |= k == "feed.idle";
  }
  const std::string name = name_given ? s.feed.name : fmt::format("demo-{}", ::getpid());
  const unsigned n = s.demo.subscribers;
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  // A feed over channels: the publisher's threads each take a core, and
  // every subscriber subscribes once per channel its filter is on.
  const feed::ChannelMap map = channel_map(s);
  const uint32_t threads = publishing_threads(s);
  const size_t per_sub = s.sub.all_instruments ? map.count() : map.channels_of(s.sub.instruments).size();
  std::string idle = std::string(IdleStrategy::name(s.feed.idle));
  const bool crowded = cores < static_cast<long>(n + threads);
  if (!idle_given && crowded) idle = "block";
  // --cpu: the publisher's threads first, then subscriber 1, 2, ...
  if (!s.demo.cpus.empty() && s.demo.cpus.size() < threads)
    fail_usage("demo.cpus lists {} CPUs, but the publisher has {} threads: list the publisher's first, then one per "
               "subscriber",
               s.demo.cpus.size(), threads);
  auto cpus_of = [&](size_t from, size_t count) {
    std::vector<int> v;
    for (size_t i = from; i < from + count && i < s.demo.cpus.size(); ++i) v.push_back(s.demo.cpus[i]);
    return v;
  };
  if (!s.demo.cpus.empty() && idle != "block" && idle != "sleep") {
    std::vector<BusyThread> busy;
    for (uint32_t t = 0; t < threads; ++t) busy.push_back({fmt::format("publisher thread {}", t), s.demo.cpus[t]});
    for (unsigned i = 1; i <= n; ++i) {
      const auto c = cpus_of(threads + i - 1, 1);
      busy.push_back({fmt::format("subscriber {}", i), c.empty() ? -1 : c.front()});
    }
    for (const std::string& w : placement_warnings(busy)) fmt::print("mdcast demo: warning: {}\n", w);
  }

  char tmpl[] = "/tmp/mdcast-demo-XXXXXX";
  if (!mkdtemp(tmpl)) fail_errno("cannot create a run directory under /tmp");
  const std::string dir = tmpl;
  const std::string exe = runtime::self_executable();

  auto common = [&](std::vector<std::string>& args, bool for_pub) {
    if (!a.config.empty()) args.insert(args.end(), {"--config", a.config});
    for (const auto& [k, v] : a.settings) {
      if (k.rfind("demo.", 0) == 0) continue;
      if (for_pub && k.rfind("subscriber.", 0) == 0) continue;
      if (!for_pub && k.rfind("publisher.", 0) == 0) continue;
      args.insert(args.end(), {"--set", k + "=" + v});
    }
    args.insert(args.end(), {"--set", "feed.name=" + name, "--set", "feed.medium=" + medium_name, "--set", "feed.idle=" + idle});
    for (const auto& [k, v] : extra) args.insert(args.end(), {"--set", k + "=" + v});
  };

  fmt::print("mdcast demo: 1 publisher{} + {} subscribers over {}, {:.0f} msg/s over {} instruments for {}\n",
             map.count() > 1 ? fmt::format(" ({} channels on {} thread{})", map.count(), threads, threads == 1 ? "" : "s")
                             : std::string(),
             n, where, s.pub.rate, s.pub.instruments, format_duration(s.pub.duration_ns));
  if (s.demo.loss > 0) fmt::print("             subscriber 1 drops {:.1f}% of datagrams on arrival (recovered through the control plane)\n", s.demo.loss * 100);
  // Said as what is done, not as what will come of it: the rows below say
  // that (a banner that promised "nothing lost" was contradicted by a row).
  if (s.demo.cut_rail_a_ns)
    fmt::print("             subscriber 1 loses rail A for {} from 2 s in: its datagrams then come on rail B alone\n",
               format_duration(s.demo.cut_rail_a_ns));
  if (!s.sub.all_instruments)
    fmt::print("             every subscriber takes instruments {} ({} of the {} published)\n", format_id_list(s.sub.instruments),
               s.sub.instruments.size(), s.pub.instruments);
  if (crowded && !idle_given)
    fmt::print("             {} processes on {} cores: idle processes sleep until data arrives instead of spinning, so\n"
               "             latency includes a wake-up (`mdcast bench` measures pinned, busy-polling latency)\n",
               n + threads, cores);
  fmt::print("             run directory {}\n\n", dir);

  std::vector<Child> kids;
  {
    Child p;
    p.label = "publisher";
    p.result = dir + "/publisher.toml";
    std::vector<std::string> args{"publish"};
    common(args, true);
    args.insert(args.end(), {"--set", "publisher.result=" + p.result, "--set",
                             fmt::format("publisher.wait_subscribers={}", n * per_sub)});
    if (!s.demo.cpus.empty()) args.insert(args.end(), {"--set", "publisher.cpus=" + format_cpu_list(cpus_of(0, threads))});
    p.proc = runtime::ChildProcess::spawn(exe, args, dir + "/publisher.log");
    kids.push_back(std::move(p));
  }
  auto kill_all = [&](int sig) {
    for (auto& c : kids) c.proc.signal(sig);
  };
  // The publisher must be up (its counters file says running) before
  // subscribers look for it.
  if (const auto st = runtime::await_running(kids[0].proc, monotonic_ns() + 15 * kNsPerSec, &g_stop);
      st != runtime::ChildStart::kRunning) {
    kill_all(SIGTERM);
    kids[0].proc.wait();
    if (st == runtime::ChildStart::kStopped) return exit_code::kInterrupted;
    fmt::print(stderr, "mdcast demo: the publisher did not start (exit {}):\n{}", kids[0].proc.status(),
               kids[0].proc.log_tail());
    return exit_code::kSetup;
  }
  for (unsigned i = 1; i <= n; ++i) {
    Child c;
    c.label = fmt::format("sub-{}", i);
    c.result = fmt::format("{}/sub-{}.toml", dir, i);
    std::vector<std::string> args{"subscribe"};
    common(args, false);
    args.insert(args.end(), {"--set", "subscriber.result=" + c.result});
    if (const auto cpu = cpus_of(threads + i - 1, 1); !cpu.empty())
      args.insert(args.end(), {"--set", fmt::format("subscriber.cpu={}", cpu.front())});
    if (i == 1 && s.demo.loss > 0) args.insert(args.end(), {"--set", fmt::format("subscriber.inject_loss={}", s.demo.loss)});
    if (i == 1 && s.demo.cut_rail_a_ns)
      args.insert(args.end(), {"--set", "udp.cut_a_after=2s", "--set", "udp.cut_a_for=" + format_duration(s.demo.cut_rail_a_ns)});
    c.proc = runtime::ChildProcess::spawn(exe, args, fmt::format("{}/sub-{}.log", dir, i));
    kids.push_back(std::move(c));
  }

  // Live progress from the counters files, until everyone has exited.
  std::vector<uint64_t> pids;
  for (const Child& c : kids) pids.push_back(static_cast<uint64_t>(c.proc.pid()));
  stats::FeedWatch watch(std::move(pids));
  std::vector<runtime::ChildProcess*> procs;
  for (Child& c : kids) procs.push_back(&c.proc);
  // Redraw one line on a terminal; a dumb one (a VM's serial console) gets a line per second.
  const char* term = std::getenv("TERM");
  const bool tty = isatty(STDOUT_FILENO) && !(term && std::string_view(term) == "dumb");
  const uint64_t t0 = monotonic_ns();
  uint64_t deadline = t0 + s.pub.duration_ns + s.pub.linger_ns + 60 * kNsPerSec;
  uint64_t last_print = 0;
  bool timed_out = false, stopped = false, interrupted = false;
  for (;;) {
    if (runtime::all_reaped(procs)) break;
    const uint64_t now = monotonic_ns();
    if (g_stop.requested() && !stopped) {
      // Only the publisher is told: it ends its session, and its subscribers
      // finish with everything it sent (a feed not begun has nothing to finish).
      stopped = true;
      const uint64_t published = watch.refresh().published;
      kids[0].proc.signal(SIGTERM);
      fmt::print("{}mdcast demo: stopping: the publisher ends its session and its subscribers finish (stop again to "
                 "end them now)\n", tty && s.demo.progress ? "\n" : "");
      std::fflush(stdout);
      if (published == 0) {
        interrupted = true;
        kill_all(SIGTERM);
      }
      deadline = std::min(deadline, now + s.pub.linger_ns + 30 * kNsPerSec);
    }
    if (now > deadline || g_stop.urgent()) {
      timed_out = !g_stop.urgent();
      interrupted |= g_stop.urgent();
      // Each child ends its session and writes its result on SIGTERM; only
      // one that has not done so within 5 s is killed.
      runtime::terminate_all(procs, 5 * kNsPerSec);
      break;
    }
    if (s.demo.progress && now - last_print >= (tty ? 250 : 1000) * kNsPerMs) {
      last_print = now;
      const stats::FeedProgress& p = watch.refresh();
      const std::string line = fmt::format(
          "  {:5.1f}s  published {:>11} msg ({:>9}/s, seq {:>9})  delivered {:>11}..{:<11} lag {:>5}  gaps {:>5}  recovered {:>6}  snapshots {}",
          static_cast<double>(now - t0) / 1e9, grouped(p.published), grouped(p.rate), p.last_sequence,
          grouped(p.delivered_min), grouped(p.delivered_max), p.lag, p.gaps, p.recovered, p.snapshots);
      if (tty)
        fmt::print("\r{}\x1b[K", line);
      else
        fmt::print("{}\n", line);
      std::fflush(stdout);
    }
    sleep_ns(20 * kNsPerMs);
  }
  if (tty && s.demo.progress) fmt::print("\n");

  // The report.
  bool ok = !timed_out;
  std::optional<RunResult> pub;
  try {
    pub = read_result(kids[0].result);
  } catch (const Error& e) {
    ok = false;
    fmt::print(stderr, "mdcast demo: publisher produced no result ({}); exit {}:\n{}", e.what(), kids[0].proc.status(),
               kids[0].proc.log_tail());
  }
  if (pub) {
    fmt::print("\npublisher: {} messages in {} datagrams over {:.2f} s ({} msg/s), {} retransmit requests and {} snapshots served\n\n",
               grouped(pub->messages), grouped(pub->last_sequence), pub->seconds,
               grouped(static_cast<uint64_t>(static_cast<double>(pub->messages) / std::max(pub->seconds, 1e-9))),
               pub->counter("ctl.retransmit_requests"), pub->counter("ctl.snapshot_requests"));
    if (!stopped)
      if (const std::string why = rate_shortfall(*pub, s.pub.rate, pacing_name(s.pub.pacing)); !why.empty())
        fmt::print("the publisher {}\n\n", why);
  }
  // On an A/B feed a datagram one rail's socket dropped is most often the
  // other rail's: a copy missed, not data lost (what both missed is in gaps
  // and recovered). The column says which it counts.
  const bool two_rails = medium_name == "udp" && !s.udp.rail_b.empty();
  fmt::print("{:<11} {:>11} {:>7} {:>8} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10}  {}\n", "subscriber", "messages", "gaps",
             two_rails ? "missed" : "lost", "recovered", "snapshots", "p50 us", "p99 us", "p99.9 us", "max us", "books");
  uint32_t matched = 0;
  for (size_t i = 1; i < kids.size(); ++i) {
    const Child& c = kids[i];
    RunResult r;
    try {
      r = read_result(c.result);
    } catch (const Error&) {
      ok = false;
      fmt::print("{:<11} no result (exit {}); log:\n{}", c.label, c.proc.status(), c.proc.log_tail());
      continue;
    }
    std::string verdict;
    if (!pub) {
      verdict = "unverified";
    } else if (r.outcome == "interrupted") {
      verdict = "interrupted";  // stopped by the user: not a failure, not verified
    } else if (r.outcome != "ok") {
      verdict = "FAILED: " + r.outcome;
      ok = false;
    } else {
      const BookVerdict v = compare_books(*pub, r);
      if (v.identical) {
        verdict = fmt::format("identical ({} instruments)", v.compared);
        ++matched;
      } else {
        verdict = "DIFFER: " + v.detail;
        ok = false;
      }
    }
    const uint64_t lost = r.counter("app.lost");
    fmt::print("{:<11} {:>11} {:>7} {:>8} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10}  {}\n", c.label, grouped(r.messages),
               r.counter("sub.gaps"), lost, r.counter("sub.datagrams_recovered"), r.counter("sub.snapshots_applied"),
               us(r.latency.percentile(50)), us(r.latency.percentile(99)), us(r.latency.percentile(99.9)),
               us(r.latency.max()), verdict);
    if (c.proc.status() != 0 && !interrupted) ok = false;
    if (i == 1 && s.demo.cut_rail_a_ns)
      fmt::print("{:<11} rail A cut: {} of its datagrams dropped; first copies: {} on rail A, {} on rail B\n", "",
                 grouped(r.counter("udp.rail_a_cut")), grouped(r.counter("sub.rail_a_first")),
                 grouped(r.counter("sub.rail_b_first")));
  }
  if (two_rails)
    fmt::print("\nmissed: copies one rail's socket dropped, which the other rail mostly carried (not data lost);\n"
               "recovered: datagrams no rail delivered in time, fetched through the control plane\n");
  fmt::print("\nlatency: one-way, publication of a datagram's first message -> delivery at the subscriber (same host\n"
             "clock), batching delay included; messages delivered late by recovery are excluded\n");
  if (interrupted) {
    fmt::print("RESULT: interrupted after {:.1f} s: the feed did not run to its end, so nothing was verified; logs and "
               "result files kept in {}\n",
               static_cast<double>(monotonic_ns() - t0) / 1e9, dir);
    return exit_code::kInterrupted;
  }
  if (ok) {
    fmt::print("RESULT: {}all {} subscribers delivered every message exactly once, in order; books identical to the publisher's\n",
               stopped ? fmt::format("stopped after {:.1f} s: ", static_cast<double>(monotonic_ns() - t0) / 1e9) : "",
               matched);
    if (!s.demo.keep) std::filesystem::remove_all(dir);
  } else {
    fmt::print("RESULT: FAILED{} - logs and result files kept in {}\n", timed_out ? " (timed out)" : "", dir);
  }
  return ok ? exit_code::kOk : exit_code::kDataLost;
}

int run_verify(const std::string& publisher_result, const std::vector<std::string>& subscriber_results,
               runtime::BookMatch match) {
  const RunResult pub = read_result(publisher_result);
  // A relay publishes what it subscribed to: it stands on either side.
  if (pub.role != "publisher" && pub.role != "relay")
    fail_usage("{} is a {}'s result file, not a publisher's: mdcast verify PUBLISHER.toml SUBSCRIBER.toml...",
               publisher_result, pub.role);
  bool ok = true;
  for (const auto& path : subscriber_results) {
    const RunResult r = read_result(path);
    if (r.role != "subscriber" && r.role != "relay")
      fail_usage("{} is a {}'s result file, not a subscriber's: mdcast verify PUBLISHER.toml SUBSCRIBER.toml...", path,
                 r.role);
    const runtime::FeedVerdict v = runtime::verify_feed(pub, r, match);
    ok &= v.whole;
    fmt::print("{}: {}\n", path, v.text);
  }
  return ok ? exit_code::kOk : exit_code::kDataLost;
}

}  // namespace mdcast::app
