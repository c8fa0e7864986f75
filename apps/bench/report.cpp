#include "report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "control_bench.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

std::string ns_str(double v) {
  if (std::isnan(v)) return "-";
  if (v >= 1e6) return fmt::format("{:.1f} ms", v / 1e6);
  if (v >= 1e4) return fmt::format("{:.1f} us", v / 1e3);
  return fmt::format("{:.0f} ns", v);
}
std::string rate_str(double v) {
  if (std::isnan(v)) return "-";
  if (v >= 1e6) return fmt::format("{:.2f} M/s", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.0f} k/s", v / 1e3);
  return fmt::format("{:.0f} /s", v);
}

namespace {

void print_percentile_row(const Summary& S, const std::string& label, const std::string& key, const std::string& extra) {
  auto g = [&](const char* p) { return ns_str(S.median(key + "." + p)); };
  fmt::print("  {:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {} {}\n", label, g("p50"), g("p90"), g("p99"), g("p99.9"),
             g("p99.99"), g("max"), extra, S.range(key + ".p50", ns_str));
}

// A target judged on one median: judge(t, v) fills what was measured, met
// and the verdict, only when some repetition measured the number at all.
template <class Judge>
Target judged(std::string what, std::string target, double v, Judge&& judge) {
  Target t{std::move(what), std::move(target), "", ""};
  if (!std::isnan(v)) {
    t.measured_ok = true;
    judge(t, v);
  }
  return t;
}

std::string pct_str(double cpu, double user, double sys) {
  if (std::isnan(cpu)) return "-";
  if (std::isnan(user) || std::isnan(sys)) return fmt::format("{:.1f} %", cpu);
  return fmt::format("{:.1f} % ({:.1f}/{:.1f})", cpu, user, sys);
}
std::string num_str(double v, int digits) { return std::isnan(v) ? "-" : fmt::format("{:.{}f}", v, digits); }

void print_usage_row(const std::string& label, double pub, double pub_u, double pub_s, double sub, double sub_u,
                     double sub_s, double pages, double kpages, double fpub, double fsub, double tpub, double tsub,
                     const std::string& range) {
  fmt::print("  {:<28} {:>22} {:>22} {:>11} {:>10} {:>15} {:>15}  {}\n", label, pct_str(pub, pub_u, pub_s),
             pct_str(sub, sub_u, sub_s), num_str(pages, 2), num_str(kpages, 4),
             fmt::format("{} / {}", num_str(fpub, 3), num_str(fsub, 3)),
             std::isnan(tpub) && std::isnan(tsub) ? std::string("n/a") : fmt::format("{} / {}", num_str(tpub, 2), num_str(tsub, 2)),
             range);
}

// Medians of the repetitions under prefix k (summary.cpp's add_usage).
void print_usage_median(const Summary& S, const std::string& label, const std::string& k) {
  auto g = [&](const char* n) { return S.median(k + "." + n); };
  print_usage_row(label, g("pub_cpu_pct"), g("pub_user_pct"), g("pub_sys_pct"), g("sub_cpu_pct"), g("sub_user_pct"),
                  g("sub_sys_pct"), g("ring_pages_per_msg"), g("ring_kernel_pages_per_msg"), g("pub_minflt_per_msg"),
                  g("sub_minflt_per_msg"), g("pub_dtlb_misses_per_msg"), g("sub_dtlb_misses_per_msg"),
                  S.range(k + ".pub_cpu_pct", [](double v) { return fmt::format("{:.1f} %", v); }));
}

void print_usage_run(const std::string& label, const RunResult& r) {
  const SubscriberResult* s = busiest_sub(r);
  const double nan = std::nan("");
  print_usage_row(label, r.pub.usage.cpu_pct(), r.pub.usage.user_pct(), r.pub.usage.sys_pct(),
                  s ? s->usage.cpu_pct() : nan, s ? s->usage.user_pct() : nan, s ? s->usage.sys_pct() : nan,
                  ring_pages_per_msg(r), ring_kernel_pages_per_msg(r), minflt_per_msg(r.pub.usage, r.pub.window_messages),
                  sub_minflt_per_msg(r), dtlb_per_msg(r.pub.usage, r.pub.window_messages), sub_dtlb_per_msg(r), "");
}

// CPU utilisation at each offered rate and what a message touches (issue 13;
// the definitions are docs/performance.md's "CPU utilisation and pages touched").
void print_usage(const Summary& S, const std::vector<Rep>& reps, const Plan& plan, const MediumBench& m) {
  const RunResult* any = nullptr;  // a run of the first repetition, for the ring's geometry
  const Rep& rep = reps[0];
  for (const auto& l : rep.lat)
    if (!any && l.md && l.md->pub.ring_swept) any = &*l.md;
  if (!any && rep.tp)
    for (const auto& p : rep.tp->probes)
      if (!any && p.r.pub.ring_swept) any = &p.r;
  for (const auto& f : rep.fan)
    if (!any && f.r.pub.ring_swept) any = &f.r;
  if (!any) return;
  fmt::print("CPU utilisation (CPU time / wall time of the window, 100 % = one core; user/system) and pages touched\n");
  fmt::print("  {:<28} {:>22} {:>22} {:>11} {:>10} {:>15} {:>15}\n", "run", "publisher CPU", "subscriber CPU",
             "ring pg/msg", "kernel pg", "faults/msg p/s", "dTLB miss p/s");
  if (plan.latency)
    for (double r : plan.rates) print_usage_median(S, fmt::format("latency @ {}", rate_key(r)), "latency." + rate_key(r));
  if (rep.tp) {
    for (const auto& p : rep.tp->probes)
      print_usage_run(fmt::format("probe {}{}", p.offered == 0 ? "unpaced" : rate_str(p.offered), p.pass ? "" : " (failed)"), p.r);
    if (rep.tp->best >= 0) print_usage_median(S, "throughput (best probe)", "throughput");
  }
  for (uint32_t n : plan.fanout ? plan.fanout_counts : std::vector<uint32_t>{})
    print_usage_median(S, fmt::format("fan-out {} (busiest sub)", n), fmt::format("fanout.{}", n));
  const uint64_t kp = any->pub.ring_page_bytes;
  // Over shm the engine's ring is the medium: subscribers read those pages.
  // Elsewhere the datagram is built there and the kernel or the NIC sends it.
  fmt::print("  engine ring: {}\n", m.name() == "shm" ? "the shared ring subscribers read"
                                                      : "the publisher's retransmit ring, where each datagram is built and sent from");
  fmt::print("  ring pg/msg: distinct 4 KiB pages of the engine's ring the window's datagrams were written to, per message\n"
             "    ({}: {} pages per datagram in the first run); kernel pg: the same in the ring\n"
             "    mapping's own pages ({})\n",
             m.name() == "shm" ? fmt::format("records packed, the largest {} B", any->pub.ring_slot_bytes)
                               : fmt::format("{} B slots, one datagram each", any->pub.ring_slot_bytes),
             num_str(ring_pages_per_datagram(*any), 2),
             kp == 0 ? std::string("page size unknown") : kp >= 1024 * 1024 ? fmt::format("{} MiB, hugetlbfs", kp >> 20)
                                                                              : fmt::format("{} KiB", kp >> 10));
  fmt::print("  faults/msg: minor page faults per message, publisher / busiest subscriber (0 once the ring is warm)\n");
  const std::string& why = any->pub.perf_why;
  if (any->pub.usage.dtlb_misses == kNotCounted)
    fmt::print("  dTLB miss: n/a on this host ({})\n", why.empty() ? "not counted" : why);
  else
    fmt::print("  dTLB miss: user-space dTLB load misses per message (perf_event_open), publisher / busiest subscriber\n");
  fmt::print("  (the probes are run 1's; the subscriber column is the subscriber that spent the most CPU)\n\n");
}

}  // namespace

std::string probe_verdict(const Probe& p) {
  if (p.pass) return "ok";
  if (!p.r.completed) return "failed: " + p.r.error;
  if (const uint64_t l = lapped_total(p.r)) return fmt::format("lapped ({} datagrams)", l);
  for (const auto& s : p.r.subs)
    if (s.kernel_drops) return fmt::format("{} dropped by the kernel, {} gaps, {} snapshots", s.kernel_drops, s.gaps, s.snapshots);
  for (const auto& s : p.r.subs)
    if (s.snapshots || s.gaps) return fmt::format("{} gaps, {} snapshots", s.gaps, s.snapshots);
  if (lost_total(p.r)) return fmt::format("{} messages lost", lost_total(p.r));
  return fmt::format("publisher reached only {}", rate_str(p.r.pub.rate));
}

std::vector<Target> targets(const Summary& S, const Plan& plan, const MediumBench& m) {
  std::vector<Target> out;
  out.push_back(judged("core-to-core one-way p50 (reference, not a target)", "~55 ns (p99 136 ns)",
                       S.median("c2c.one_way_ns.p50"), [&](Target& t, double v) {
                         t.met = true;
                         t.measured = fmt::format("{} (p99 {})", ns_str(v), ns_str(S.median("c2c.one_way_ns.p99")));
                         t.verdict = "reference";
                       }));
  const std::string delivered = "64-byte messages delivered per subscriber, no loss";
  const double delivered_rate = S.median("throughput.mdcast_msgs_per_s");
  if (m.name() == "verbs") {
    // The design targets are for real HCAs; under Soft-RoCE emulation the
    // figures say the path works and what it costs there, nothing more.
    auto verdict = [&](bool met, std::string missed) {
      return m.emulated() ? std::string("Soft-RoCE emulation: functional figure, not comparable")
             : met        ? std::string("met")
                          : missed;
    };
    const std::string first = plan.rates.empty() ? "" : rate_key(plan.rates.front());
    out.push_back(judged(fmt::format("mdcast verbs one-way mean / p99.9 @ {} msg/s", first),
                         "2.8 us / 4.1 us (real HCA)", S.median("latency." + first + ".mdcast_ns.mean"),
                         [&](Target& t, double mean) {
                           const double p999 = S.median("latency." + first + ".mdcast_ns.p99.9");
                           t.measured = fmt::format("{} / {}", ns_str(mean), ns_str(p999));
                           t.met = mean <= 2800 && p999 <= 4100;
                           t.verdict = verdict(t.met, fmt::format("missed ({:.1f}x / {:.1f}x the target)",
                                                                  mean / 2800, p999 / 4100));
                         }));
    out.push_back(judged(delivered, ">= 3 M/s on one QP (real HCA)", delivered_rate, [&](Target& t, double v) {
      t.measured = rate_str(v);
      t.met = v >= 3e6;
      t.verdict = verdict(t.met, fmt::format("missed ({:.0f}% of the target)", 100 * v / 3e6));
    }));
  } else if (m.name() == "udp") {
    // The targets for UDP multicast on lo, 64-byte messages, against
    // Aeron's C media driver on this machine class (0.92 M/s to 1
    // subscriber, 137 k/s each to 4) and raw busy-poll UDP (p50 1.76 us).
    const std::string first = plan.rates.empty() ? "" : rate_key(plan.rates.front());
    out.push_back(judged(fmt::format("mdcast udp one-way p50 @ {} msg/s over raw busy-poll", first),
                         "<= 1.2x raw (raw on lo: 1.76 us)", S.median("latency." + first + ".ratio_p50"),
                         [&](Target& t, double ratio) {
                           t.measured = fmt::format("{:.2f}x ({} / {})", ratio,
                                                    ns_str(S.median("latency." + first + ".mdcast_ns.p50")),
                                                    ns_str(S.median("latency." + first + ".raw_ns.p50")));
                           t.met = ratio <= 1.2;
                           t.verdict = t.met ? "met" : fmt::format("missed ({:.2f}x the target)", ratio / 1.2);
                         }));
    out.push_back(judged("64-byte messages delivered to 1 subscriber, no loss", ">= 2 M/s (Aeron C driver: 0.92 M/s)", delivered_rate,
                         [&](Target& t, double v) {
                           t.measured = rate_str(v);
                           t.met = v >= 2e6;
                           t.verdict = t.met ? "met" : fmt::format("missed ({:.0f}% of the target)", 100 * v / 2e6);
                         }));
    // The most subscribers the plan fanned out to: 4 in a full run.
    const uint32_t most = plan.fanout_counts.empty()
                              ? 4
                              : *std::max_element(plan.fanout_counts.begin(), plan.fanout_counts.end());
    const std::string fk = fmt::format("fanout.{}.", most);
    out.push_back(judged(fmt::format("fan-out to {}: delivered per subscriber, none unrecovered", most),
                         ">= 1 M/s each (Aeron: 137 k/s)", S.median(fk + "delivered_msgs_per_s_min"),
                         [&](Target& t, double v) {
                           const double unrecovered = S.median(fk + "unrecovered");
                           t.measured = rate_str(v);
                           t.met = v >= 1e6 && unrecovered == 0;
                           t.verdict = unrecovered > 0 ? fmt::format("missed: {:.0f} messages never delivered", unrecovered)
                                       : t.met         ? "met"
                                       : plan.fanout_rate < 1e6
                                           ? fmt::format("not judged: {} offered (--fanout-rate)", rate_str(plan.fanout_rate))
                                           : fmt::format("missed ({:.0f}% of the target)", 100 * v / 1e6);
                           if (most != 4) t.verdict += " (not 4 subscribers)";
                         }));
    return out;
  } else {
    out.push_back(judged("mdcast shm one-way p50 @ 100k msg/s", "<= 100 ns (Aeron IPC: 152 ns)",
                         S.median("latency.100k.mdcast_ns.p50"), [&](Target& t, double v) {
                           t.measured = ns_str(v);
                           t.met = v <= 100;
                           t.verdict = t.met ? "met"
                                             : fmt::format("missed by {} ({:.1f}x the target)", ns_str(v - 100), v / 100);
                         }));
    out.push_back(judged(delivered, ">= 40 M/s (Aeron IPC: 26 M/s)", delivered_rate, [&](Target& t, double v) {
      t.measured = rate_str(v);
      t.met = v >= 40e6;
      t.verdict = t.met ? "met"
                        : fmt::format("missed by {:.1f} M/s ({:.0f}% of the target)", (40e6 - v) / 1e6, 100 * v / 40e6);
    }));
  }
  const std::vector<uint32_t>& n = plan.fanout_counts;
  const std::string range = n.empty() ? "1 -> 8" : fmt::format("{} -> {}", n.front(), n.back());
  out.push_back(judged(fmt::format("publisher CPU per message, {} subscribers", range), "flat, within 10 %",
                       S.median("fanout.pub_cost_change_pct"), [&](Target& t, double v) {
                         t.measured = fmt::format("{:+.1f} %", v);
                         t.met = std::fabs(v) <= 10;
                         t.verdict = t.met ? "met" : fmt::format("missed by {:.1f} points", std::fabs(v) - 10);
                         if (n.empty() || n.front() != 1 || n.back() != 8) t.verdict += " (not the 1 -> 8 range)";
                       }));
  return out;
}

std::vector<std::string> start_warnings(const HostFacts& host, const Plan& plan) {
  std::vector<std::string> warnings;
  const std::vector<int>& cpus = host.cpus;
  const size_t busiest = 1 + (plan.fanout && !plan.fanout_counts.empty()
                                  ? *std::max_element(plan.fanout_counts.begin(), plan.fanout_counts.end())
                                  : 1);
  if (cpus.size() < 2)
    warnings.push_back(fmt::format("only CPU {} is used: publisher and subscriber share it, which measures the scheduler, not the medium",
                                   cpus[0]));
  if (cpus.size() < busiest)
    warnings.push_back(fmt::format("fewer CPUs ({}) than busy processes in the largest run ({}): numbers of the crowded runs mean little",
                                   cpus.size(), busiest));
  if (host.load_start[0] > 0.5)
    warnings.push_back(fmt::format("the machine was busy when the bench started (load average {:.2f} on {} CPUs): "
                                   "other work competes for the CPUs, numbers are noisy",
                                   host.load_start[0], host.online));
  return warnings;
}

void add_end_warnings(std::vector<std::string>& out, const std::vector<Rep>& reps, const HostFacts& host,
                      const Plan& plan) {
  const size_t ncpus = host.cpus.size();
  const double fanout_rate = plan.fanout_rate;
  long preempted = 0;
  // The same warning from several runs is printed once, naming the runs.
  std::vector<std::pair<std::string, std::vector<size_t>>> merged;
  std::vector<std::string> w;
  for (size_t ri = 0; ri < reps.size(); ++ri) {
    const Rep& rep = reps[ri];
    w.clear();
    auto check = [&](const std::string& what, const RunResult& r) {
      preempted += preempted_total(r);
      if (!r.completed || !r.error.empty()) w.push_back(fmt::format("{}: {}", what, r.error.empty() ? "did not complete" : r.error));
      if (r.busy_processes > ncpus)
        w.push_back(fmt::format("{}: {} busy processes on {} CPUs: they take turns, numbers mean little", what,
                                r.busy_processes, ncpus));
    };
    for (const auto& l : rep.lat) {
      if (l.raw) {
        preempted += l.raw->preempted;
        if (!l.raw->ok) w.push_back(fmt::format("raw latency @ {}: {}", rate_key(l.rate), l.raw->error));
        else if (l.raw->rate < 0.97 * l.rate)
          w.push_back(fmt::format("raw latency @ {}: the raw baseline carried only {} of one-message datagrams: "
                                  "the medium's cost per datagram is its limit, and its latency there is queueing",
                                  rate_key(l.rate), rate_str(l.raw->rate)));
      }
      if (l.md) {
        check(fmt::format("mdcast latency @ {}", rate_key(l.rate)), *l.md);
        if (l.md->completed && !l.md->lossless()) {
          uint64_t lapped = 0, drops = 0, gaps = 0, recovered = 0, snapshots = 0;
          for (const auto& sub : l.md->subs) {
            lapped += sub.lapped;
            drops += sub.kernel_drops;
            gaps += sub.gaps;
            recovered += sub.recovered;
            snapshots += sub.snapshots;
          }
          w.push_back(fmt::format("mdcast latency @ {}: the subscriber lost datagrams (lapped {}, kernel drops {}, "
                                  "{} gaps) and recovered {} by retransmission, {} snapshots; {} messages not "
                                  "delivered one by one: the tail includes recovery",
                                  rate_key(l.rate), lapped, drops, gaps, recovered, snapshots, lost_total(*l.md)));
        }
        if (l.md->completed && l.md->pub.rate < 0.97 * l.rate)
          w.push_back(fmt::format("mdcast latency @ {}: the publisher reached only {} ({:.0f} % of the offered rate, one "
                                  "message per datagram): its latency there is queueing",
                                  rate_key(l.rate), rate_str(l.md->pub.rate), 100 * l.md->pub.rate / l.rate));
      }
    }
    if (rep.tp) {
      if (rep.tp->raw) {
        preempted += rep.tp->raw->preempted;
        if (!rep.tp->raw->ok) w.push_back(fmt::format("raw throughput: {}", rep.tp->raw->error));
      }
      for (const auto& p : rep.tp->probes) preempted += preempted_total(p.r);
      if (rep.tp->best < 0) w.push_back("throughput: no lossless rate found");
    }
    for (const auto& c : rep.ctl) {
      check(fmt::format("control {} (latency run)", c.clients), c.lat);
      check(fmt::format("control {} (CPU run)", c.clients), c.cost);
    }
    control_warnings(rep, ncpus, w);
    for (const auto& f : rep.fan) {
      check(fmt::format("fan-out {}", f.n), f.r);
      const bool held = f.r.completed && min_sub_rate(f.r) >= 0.97 * fanout_rate;
      if (f.crowded)
        w.push_back(fmt::format("fan-out {}: {} processes on {} CPUs: subscribers back off (sleep) instead of spinning; "
                                "{}latency includes wake-ups",
                                f.n, f.n + 1, ncpus, held ? "their rates hold, " : ""));
      if (f.r.completed && f.r.pub.rate < 0.97 * fanout_rate)
        w.push_back(fmt::format("fan-out {}: the publisher reached only {:.0f} % of the offered rate (CPU-bound: "
                                "delivered per subscriber is what it published)",
                                f.n, 100 * f.r.pub.rate / fanout_rate));
    }
    for (const auto& text : w) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const auto& m) { return m.first == text; });
      if (it == merged.end()) merged.push_back({text, {ri + 1}});
      else it->second.push_back(ri + 1);
    }
  }
  for (const auto& [text, runs] : merged) {
    std::string prefix;
    if (reps.size() > 1 && runs.size() < reps.size()) {
      prefix = runs.size() == 1 ? "run " : "runs ";
      for (size_t i = 0; i < runs.size(); ++i) prefix += (i ? "," : "") + std::to_string(runs[i]);
      prefix += ": ";
    }
    out.push_back(prefix + text);
  }
  if (preempted > 100)
    out.push_back(fmt::format("the pinned processes were preempted {} times (involuntary context switches): other work "
                              "shared their CPUs, tails and rates are pessimistic",
                              preempted));
  if (host.load_end[0] > 0.5 && host.load_start[0] <= 0.5)
    out.push_back(fmt::format("load average {:.2f} at the end: other work ran meanwhile", host.load_end[0]));
}

void print_report(const Summary& S, const std::vector<Rep>& reps, const Plan& plan, const MediumBench& m,
                  const std::vector<std::string>& warnings, unsigned repeat) {
  const bool multi = repeat > 1;
  fmt::print("\n");
  if (multi)
    fmt::print("medians of {} runs; [min-max] over the runs of the first number of a row\n\n", repeat);
  if (plan.c2c) {
    fmt::print("core-to-core cache line, one-way         p50       p90       p99     p99.9    p99.99       max\n");
    if (!reps[0].c2c_error.empty()) fmt::print("  not measured: {}\n", reps[0].c2c_error);
    else print_percentile_row(S, "ping-pong / 2", "c2c.one_way_ns", "");
    fmt::print("\n");
  }
  if (plan.latency) {
    fmt::print("one-way latency, {:<22}   p50       p90       p99     p99.9    p99.99       max\n",
               plan.orders ? "order flow (books on)" : fmt::format("{}-byte messages", plan.message_bytes));
    for (double r : plan.rates) {
      const std::string k = "latency." + rate_key(r);
      if (plan.raw) print_percentile_row(S, fmt::format("{} @ {}", m.raw_name(), rate_key(r)), k + ".raw_ns", "");
      const double ratio = S.median(k + ".ratio_p50");
      print_percentile_row(S, fmt::format("mdcast {} @ {}", m.name(), rate_key(r)), k + ".mdcast_ns",
                           std::isnan(ratio) ? "" : fmt::format("p50 {:.1f}x raw", ratio));
    }
    fmt::print("  (datagram per message: {:.0f} bytes of datagram, {:.0f} on the medium per message)\n\n",
               S.median("latency." + rate_key(plan.rates.front()) + ".bytes_per_msg"),
               S.median("latency." + rate_key(plan.rates.front()) + ".medium_bytes_per_msg"));
  }
  if (plan.throughput) {
    fmt::print("throughput, {}-byte messages, zero loss     msg/s        MB/s   bytes/msg\n", plan.message_bytes);
    if (plan.raw) {
      const double raw = S.median("throughput.raw_msgs_per_s");
      const double lost = S.median("throughput.raw_lost_pct");
      fmt::print("  {:<36} {:>10} {:>10.0f} {:>10}  {}{}\n", m.raw_name(), rate_str(raw),
                 raw * static_cast<double>(plan.message_bytes) / 1e6, plan.message_bytes, S.range("throughput.raw_msgs_per_s", rate_str),
                 std::isnan(lost) || lost == 0 ? "" : fmt::format(" ({:.1f} % of what the writer sent was lost)", lost));
      fmt::print("    {}\n", m.raw_throughput_note());
    }
    const double v = S.median("throughput.mdcast_msgs_per_s");
    const double ratio = S.median("throughput.ratio");
    fmt::print("  {:<36} {:>10} {:>10.0f} {:>10.1f}  {} {}\n", fmt::format("mdcast {}, 1 subscriber, books off", m.name()),
               rate_str(v), S.median("throughput.mdcast_bytes_per_s") / 1e6, S.median("throughput.bytes_per_msg"),
               std::isnan(ratio) ? "" : fmt::format("{:.2f}x raw", ratio), S.range("throughput.mdcast_msgs_per_s", rate_str));
    const Throughput* t = reps[0].tp ? &*reps[0].tp : nullptr;
    if (t) {
      fmt::print("  publisher unpaced: {} published", rate_str(S.median("throughput.publisher_max_msgs_per_s")));
      fmt::print("{}\n", t->publisher_bound ? " and all delivered: the publisher is the limit"
                                            : "; the subscriber is the limit (the fastest lossless rate was searched)");
      fmt::print("  probes (run 1):");
      for (const auto& p : t->probes) fmt::print(" {} {};", p.offered == 0 ? "unpaced" : rate_str(p.offered), probe_verdict(p));
      fmt::print("\n");
      if (t->best < 0) fmt::print("  no probe was lossless: see the warnings\n");
    }
    fmt::print("\n");
  }
  if (plan.fanout) {
    fmt::print("fan-out @ {} msg/s offered, {}-byte messages\n", rate_key(plan.fanout_rate), plan.message_bytes);
    fmt::print("  {:>4} {:>14} {:>13} {:>13} {:>10} {:>10} {:>10}\n", "subs", "delivered/sub", "pub CPU/msg",
               "of it control", "bytes/msg", "p50", "p99");
    for (size_t i = 0; i < plan.fanout_counts.size(); ++i) {
      const uint32_t n = plan.fanout_counts[i];
      const std::string k = fmt::format("fanout.{}", n);
      bool crowded = false;
      uint64_t lost = 0, drops = 0, gaps = 0, recovered = 0, unrecovered = 0;
      for (const auto& r : reps)
        if (i < r.fan.size()) {
          crowded |= r.fan[i].crowded;
          lost += lapped_total(r.fan[i].r);
          unrecovered += lost_total(r.fan[i].r);
          for (const auto& sub : r.fan[i].r.subs) {
            drops += sub.kernel_drops;
            gaps += sub.gaps;
            recovered += sub.recovered;
          }
        }
      // A medium that drops (UDP under overload) says so here: what was
      // lost and recovered is not hidden behind a rate that held.
      std::string losses = lost ? fmt::format(" LAPPED {}", lost) : "";
      if (drops) losses += fmt::format(" kernel drops {},", drops);
      if (gaps || recovered) losses += fmt::format(" gaps {}, recovered {}", gaps, recovered);
      if (unrecovered) losses += fmt::format(" UNRECOVERED {}", unrecovered);
      fmt::print("  {:>4} {:>14} {:>13} {:>13} {:>10.1f} {:>10} {:>10}  {}{}{}\n", n,
                 rate_str(S.median(k + ".delivered_msgs_per_s_min")), ns_str(S.median(k + ".pub_cpu_ns_per_msg")),
                 ns_str(S.median(k + ".pub_control_ns_per_msg")), S.median(k + ".bytes_per_msg"),
                 ns_str(S.median(k + ".one_way_ns.p50")), ns_str(S.median(k + ".one_way_ns.p99")),
                 S.range(k + ".pub_cpu_ns_per_msg", ns_str), crowded ? " crowded" : "", losses);
    }
    const double change = S.median("fanout.pub_cost_change_pct");
    if (!std::isnan(change))
      fmt::print("  publisher CPU per message, {} -> {} subscribers: {:+.1f} % (without the control plane: {:+.1f} %)\n",
                 plan.fanout_counts.front(), plan.fanout_counts.back(), change,
                 S.median("fanout.pub_data_path_cost_change_pct"));
    fmt::print("  (publishing in 1 ms bursts; batching on, flush interval {}: latency includes batching delay)\n\n",
               format_duration(plan.flush_interval_ns));
  }
  if (plan.control) print_control(S, reps, plan);
  if (plan.relay) {
    fmt::print("one hop through a relay (a process of its own, same medium), {}-byte messages, one per datagram\n",
               plan.message_bytes);
    fmt::print("  {:>8} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10} {:>14}\n", "rate", "direct p50", "p99",
               "relayed p50", "p99", "added p50", "p99", "relay CPU/msg");
    for (double rate : plan.rates) {
      const std::string k = "relay." + rate_key(rate);
      fmt::print("  {:>8} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10} {:>14}  {}\n", rate_key(rate),
                 ns_str(S.median(k + ".direct_ns.p50")), ns_str(S.median(k + ".direct_ns.p99")),
                 ns_str(S.median(k + ".relayed_ns.p50")), ns_str(S.median(k + ".relayed_ns.p99")),
                 ns_str(S.median(k + ".added_ns.p50")), ns_str(S.median(k + ".added_ns.p99")),
                 ns_str(S.median(k + ".relay_cpu_ns_per_msg")), S.range(k + ".added_ns.p50", ns_str));
    }
    bool crowded = false;
    for (const auto& r : reps)
      for (const auto& x : r.relay) {
        crowded |= x.crowded;
        for (const RunResult* run : {&x.r, &x.cost})
          if (run->relay && (!run->relay->ok || run->relay->renumbered))
            fmt::print("  ! relay @ {}: {}{}\n", rate_key(x.rate), run->relay->outcome,
                       run->relay->renumbered ? fmt::format(", {} messages renumbered", run->relay->renumbered) : "");
      }
    fmt::print("  (latency from the publisher's send to delivery, both subscribers in the same run, every process "
               "spinning; the relay keeps the origin's send time. CPU/msg: a second run, publishing in 1 ms bursts, the "
               "relay sleeping when idle){}\n\n",
               crowded ? ". CROWDED: 4 spinning processes on fewer CPUs, the latencies are the scheduler's" : "");
  }
  print_usage(S, reps, plan, m);
  fmt::print("targets (2-core build VM, idle, median of 3)                   target                          measured\n");
  for (const auto& t : targets(S, plan, m))
    fmt::print("  {:<58} {:<31} {:<14} {}\n", t.what, t.target, t.measured_ok ? t.measured : "not measured",
               t.verdict);
  if (!warnings.empty()) {
    fmt::print("\nwarnings:\n");
    for (const auto& w : warnings) fmt::print("  ! {}\n", w);
  }
}

}  // namespace mdcast::app::bench
