// mdcast bench: in one run, side by side,
//   - core-to-core cache-line latency (the physical floor of shared memory),
//   - the raw baseline of the medium (a minimal ring for shm),
//   - mdcast over the medium: one-way latency at fixed offered rates,
//     the highest rate of 64-byte messages delivered with no loss at all,
//     fan-out to 1..N subscribers with the publisher's CPU time per message,
// each optionally repeated (median and spread). docs/performance.md says
// what every number means.
#include "command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>

#include "medium.hpp"
#include "supervise.hpp"
#include "registry.hpp"
#include "measure/core_to_core.hpp"
#include "measure/cpu.hpp"
#include "measure/json_writer.hpp"
#include "measure/stats.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "runners.hpp"

namespace mdcast::app {


namespace bench {

// ---------------------------------------------------------------- progress --

void Progress::phase(std::string text) {
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
  phase_ = std::move(text);
  fmt::print(stderr, "{}\n", phase_);
  std::fflush(stderr);
}

void Progress::update(double elapsed_s, double total_s, const std::string& detail) {
  if (!enabled_) return;
  const uint64_t now = monotonic_ns();
  if (now - last_ < 200 * kNsPerMs) return;
  last_ = now;
  fmt::print(stderr, "\r    {:5.1f} / {:.1f} s  {}\x1b[K", std::max(0.0, elapsed_s), total_s, detail);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::done() {
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
  std::fflush(stderr);
}

bool supervise(std::vector<bench::ChildProcess>& kids, const std::atomic<uint64_t>& t0, uint64_t total_ns,
               uint64_t deadline, std::atomic<uint32_t>& abort, Progress& progress,
               const std::function<std::string()>& detail) {
  for (;;) {
    bool all = true;
    for (auto& k : kids) all &= k.poll();
    if (all) break;
    const uint64_t now = monotonic_ns();
    if (now > deadline || g_stop) {
      abort.store(1);
      for (auto& k : kids) k.stop(kNsPerSec);
      progress.done();
      return false;
    }
    const uint64_t start = t0.load(std::memory_order_relaxed);
    progress.update(start ? (static_cast<double>(now) - static_cast<double>(start)) / 1e9 : 0,
                    static_cast<double>(total_ns) / 1e9, (start ? "" : "priming the rings; ") + detail());
    sleep_for_ns(20 * kNsPerMs);
  }
  progress.done();
  for (auto& k : kids)
    if (k.status() != 0) return false;
  return true;
}

std::unique_ptr<MediumBench> make_medium_bench(MediumKind m, const Settings& s, const Placement& where) {
  return with_medium(m, [&](auto entry) { return decltype(entry)::bench(s, where); });
}

}  // namespace bench

namespace {

using namespace bench;

// ----------------------------------------------------------------- the plan --

struct Plan {
  bool c2c = true, raw = true, latency = true, throughput = true, fanout = true;
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

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

Plan make_plan(const Settings& s, const BenchArgs& a, const PlanDefaults& d) {
  Plan p;
  if (!a.sections.empty()) {
    p.c2c = p.raw = p.latency = p.throughput = p.fanout = false;
    for (const auto& x : split(a.sections)) {
      if (x == "c2c") p.c2c = true;
      else if (x == "raw") p.raw = true;
      else if (x == "latency") p.latency = true;
      else if (x == "throughput") p.throughput = true;
      else if (x == "fanout") p.fanout = true;
      else fail("--sections: '{}' is not one of c2c, raw, latency, throughput, fanout", x);
    }
  }
  for (const auto& r : split(a.rates.empty() ? d.rates : a.rates)) {
    const double v = parse_rate(r);
    if (v <= 0) fail("--rates: '{}' must be a positive rate", r);
    p.rates.push_back(v);
  }
  for (uint32_t n : parse_id_list(a.fanout.empty() ? (a.quick ? d.quick_fanout : d.fanout) : a.fanout)) {
    if (n == 0 || n > 64) fail("--fanout: {} subscribers is outside 1..64", n);
    p.fanout_counts.push_back(n);
  }
  p.fanout_rate = a.fanout_rate.empty() ? (a.quick ? d.quick_fanout_rate : d.fanout_rate) : parse_rate(a.fanout_rate);
  if (p.fanout_rate <= 0) fail("--fanout-rate must be positive");
  p.orders = a.flow == "orders";
  const uint64_t warm = a.warmup.empty() ? (a.quick ? 200 * kNsPerMs : kNsPerSec) : parse_duration(a.warmup);
  const uint64_t dur = a.duration.empty() ? (a.quick ? 500 * kNsPerMs : 5 * kNsPerSec) : parse_duration(a.duration);
  if (dur == 0) fail("--duration must be positive");
  p.lat_window = {warm, dur};
  p.fan_window = {warm / 2, std::max<uint64_t>(dur / 2, 200 * kNsPerMs)};
  p.probe_window = {std::max<uint64_t>(warm / 4, 100 * kNsPerMs), std::clamp<uint64_t>(dur / 4, 250 * kNsPerMs, 2 * kNsPerSec)};
  p.c2c_round_trips = a.quick ? 100'000 : 2'000'000;
  p.c2c_warmup = p.c2c_round_trips / 10;
  p.probe_steps = a.quick ? 2 : 6;
  p.flush_interval_ns = s.pub.flush_interval_ns;
  p.control_poll_ns = parse_duration(a.control_poll);
  return p;
}

// ------------------------------------------------------------------ results --

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

struct Rep {
  std::optional<bench::CoreToCoreResult> c2c;
  std::string c2c_error;
  std::vector<LatencyPoint> lat;
  std::optional<Throughput> tp;
  std::vector<FanoutPoint> fan;
  std::vector<std::pair<std::string, double>> metrics;  // flat, for the summary
};

double min_sub_rate(const RunResult& r) {
  if (r.subs.empty()) return 0;
  double m = r.subs[0].rate;
  for (const auto& s : r.subs) m = std::min(m, s.rate);
  return m;
}

Histogram merged_latency(const RunResult& r) {
  Histogram h;
  for (const auto& s : r.subs) h.merge(s.latency);
  return h;
}

double cpu_ns_per_msg(const RunResult& r) {
  return r.pub.window_messages ? static_cast<double>(r.pub.window_cpu_ns) / static_cast<double>(r.pub.window_messages)
                               : std::nan("");
}
double control_ns_per_msg(const RunResult& r) {
  return r.pub.window_messages
             ? static_cast<double>(r.pub.window_control_ns) / static_cast<double>(r.pub.window_messages)
             : std::nan("");
}
double bytes_per_msg(const RunResult& r) {
  return r.pub.window_messages ? static_cast<double>(r.pub.window_bytes) / static_cast<double>(r.pub.window_messages)
                               : std::nan("");
}
double medium_bytes_per_msg(const RunResult& r) {
  return r.pub.window_messages
             ? static_cast<double>(r.pub.window_medium_bytes) / static_cast<double>(r.pub.window_messages)
             : std::nan("");
}
uint64_t lost_total(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& s : r.subs) n += s.delivered < r.pub.published ? r.pub.published - s.delivered : 0;
  return n;
}
uint64_t lapped_total(const RunResult& r) {
  uint64_t n = 0;
  for (const auto& s : r.subs) n += s.lapped;
  return n;
}
long preempted_total(const RunResult& r) {
  long n = r.pub.preempted;
  for (const auto& s : r.subs) n += s.preempted;
  return n;
}

std::string rate_key(double r) {
  return r >= 1e6 && std::fmod(r, 1e6) == 0 ? fmt::format("{}M", r / 1e6)
         : r >= 1e3 && std::fmod(r, 1e3) == 0 ? fmt::format("{}k", r / 1e3)
                                               : fmt::format("{}", r);
}

void add_percentiles(std::vector<std::pair<std::string, double>>& m, const std::string& prefix, const Histogram& h) {
  const Percentiles p = Percentiles::of(h);
  if (!p.count) return;
  m.emplace_back(prefix + ".p50", static_cast<double>(p.p50));
  m.emplace_back(prefix + ".p90", static_cast<double>(p.p90));
  m.emplace_back(prefix + ".p99", static_cast<double>(p.p99));
  m.emplace_back(prefix + ".p99.9", static_cast<double>(p.p999));
  m.emplace_back(prefix + ".p99.99", static_cast<double>(p.p9999));
  m.emplace_back(prefix + ".max", static_cast<double>(p.max));
  m.emplace_back(prefix + ".mean", h.mean());
}

void collect_metrics(Rep& rep) {
  auto& m = rep.metrics;
  if (rep.c2c) add_percentiles(m, "c2c.one_way_ns", rep.c2c->one_way_ns);
  for (const auto& l : rep.lat) {
    const std::string k = "latency." + rate_key(l.rate);
    if (l.raw && l.raw->ok) add_percentiles(m, k + ".raw_ns", l.raw->latency);
    if (l.md && l.md->completed) {
      const Histogram h = merged_latency(*l.md);
      add_percentiles(m, k + ".mdcast_ns", h);
      if (l.raw && l.raw->ok && l.raw->latency.count())
        m.emplace_back(k + ".ratio_p50", static_cast<double>(h.percentile(50)) /
                                             static_cast<double>(std::max<uint64_t>(1, l.raw->latency.percentile(50))));
      m.emplace_back(k + ".bytes_per_msg", bytes_per_msg(*l.md));
      m.emplace_back(k + ".medium_bytes_per_msg", medium_bytes_per_msg(*l.md));
    }
  }
  if (rep.tp) {
    const Throughput& t = *rep.tp;
    if (t.raw && t.raw->ok) {
      m.emplace_back("throughput.raw_msgs_per_s", t.raw->rate);
      const uint64_t sent = t.raw->received + t.raw->lost;
      m.emplace_back("throughput.raw_lost_pct", sent ? 100.0 * static_cast<double>(t.raw->lost) / static_cast<double>(sent) : 0.0);
    }
    if (!t.probes.empty() && t.probes[0].r.completed) m.emplace_back("throughput.publisher_max_msgs_per_s", t.probes[0].r.pub.rate);
    if (t.best >= 0) {
      const RunResult& r = t.probes[static_cast<size_t>(t.best)].r;
      m.emplace_back("throughput.mdcast_msgs_per_s", min_sub_rate(r));
      m.emplace_back("throughput.mdcast_bytes_per_s", min_sub_rate(r) * bytes_per_msg(r));
      m.emplace_back("throughput.bytes_per_msg", bytes_per_msg(r));
      m.emplace_back("throughput.medium_bytes_per_msg", medium_bytes_per_msg(r));
      if (t.raw && t.raw->ok && t.raw->rate > 0) m.emplace_back("throughput.ratio", min_sub_rate(r) / t.raw->rate);
    }
  }
  double lo = 0, hi = 0;
  for (const auto& f : rep.fan) {
    if (!f.r.completed) continue;
    const std::string k = fmt::format("fanout.{}", f.n);
    m.emplace_back(k + ".delivered_msgs_per_s_min", min_sub_rate(f.r));
    const double c = cpu_ns_per_msg(f.r);
    m.emplace_back(k + ".pub_cpu_ns_per_msg", c);
    m.emplace_back(k + ".pub_control_ns_per_msg", control_ns_per_msg(f.r));
    m.emplace_back(k + ".pub_data_path_ns_per_msg", c - control_ns_per_msg(f.r));
    m.emplace_back(k + ".bytes_per_msg", bytes_per_msg(f.r));
    const Histogram h = merged_latency(f.r);
    if (h.count()) {
      m.emplace_back(k + ".one_way_ns.p50", static_cast<double>(h.percentile(50)));
      m.emplace_back(k + ".one_way_ns.p99", static_cast<double>(h.percentile(99)));
    }
    if (!std::isnan(c)) {
      lo = lo == 0 ? c : std::min(lo, c);
      hi = std::max(hi, c);
    }
  }
  if (lo > 0 && rep.fan.size() > 1) {
    // Cost with the most subscribers relative to the fewest.
    const auto* first = &rep.fan.front();
    const auto* last = &rep.fan.back();
    const double a = cpu_ns_per_msg(first->r), b = cpu_ns_per_msg(last->r);
    if (!std::isnan(a) && !std::isnan(b) && a > 0) m.emplace_back("fanout.pub_cost_change_pct", 100.0 * (b / a - 1.0));
    const double da = a - control_ns_per_msg(first->r), db = b - control_ns_per_msg(last->r);
    if (!std::isnan(da) && !std::isnan(db) && da > 0)
      m.emplace_back("fanout.pub_data_path_cost_change_pct", 100.0 * (db / da - 1.0));
    m.emplace_back("fanout.pub_cost_max_over_min_pct", 100.0 * (hi / lo - 1.0));
  }
}

// ---------------------------------------------------------------- the runs --

class Runner {
 public:
  Runner(MediumBench& medium, const Plan& plan, size_t ncpus, Progress& progress, unsigned repeat)
      : m_(medium), plan_(plan), ncpus_(ncpus), progress_(progress), repeat_(repeat) {
    steps_ = (plan.c2c ? 1 : 0) +
             (plan.latency ? plan.rates.size() * (plan.raw ? 2 : 1) : 0) +
             (plan.throughput ? (plan.raw ? 1 : 0) + 2 + static_cast<size_t>(plan.probe_steps) : 0) +
             (plan.fanout ? plan.fanout_counts.size() : 0);
  }

  Rep run_once(unsigned rep_index, const std::vector<int>& cpus) {
    rep_ = rep_index;
    step_ = 0;
    Rep rep;
    if (plan_.c2c) {
      phase(fmt::format("core-to-core cache-line ping-pong, CPUs {} <-> {}", cpus[0], cpus.size() > 1 ? cpus[1] : cpus[0]));
      try {
        rep.c2c = bench::core_to_core(cpus[0], cpus.size() > 1 ? cpus[1] : cpus[0], plan_.c2c_round_trips, plan_.c2c_warmup);
      } catch (const Error& e) {
        rep.c2c_error = e.what();
      }
    }
    if (plan_.latency) {
      for (double rate : plan_.rates) {
        LatencyPoint lp;
        lp.rate = rate;
        if (plan_.raw) {
          phase(fmt::format("{}: one-way latency @ {} msg/s", m_.raw_name(), rate_key(rate)));
          lp.raw = m_.raw({rate, plan_.lat_window}, progress_);
        }
        phase(fmt::format("mdcast over {}: one-way latency @ {} msg/s ({})", m_.name(), rate_key(rate),
                          plan_.orders ? "order flow, books on" : "64-byte messages"));
        RunSpec spec;
        spec.label = "latency";
        spec.subscribers = 1;
        spec.rate = rate;
        spec.message_bytes = plan_.message_bytes;
        spec.orders = plan_.orders;
        spec.books = plan_.orders;
        spec.flush_interval_ns = 0;
        spec.control_poll_ns = plan_.control_poll_ns;
        spec.window = plan_.lat_window;
        lp.md = m_.run(spec, progress_);
        rep.lat.push_back(std::move(lp));
      }
    }
    if (plan_.throughput) rep.tp = throughput();
    if (plan_.fanout) {
      for (uint32_t n : plan_.fanout_counts) {
        FanoutPoint f;
        f.n = n;
        f.crowded = n + 1 > ncpus_;
        phase(fmt::format("mdcast over {}: fan-out to {} subscriber{} @ {} msg/s{}", m_.name(), n, n > 1 ? "s" : "",
                          rate_key(plan_.fanout_rate), f.crowded ? " (more processes than CPUs: subscribers back off)" : ""));
        RunSpec spec;
        spec.label = "fanout";
        spec.subscribers = n;
        spec.rate = plan_.fanout_rate;
        spec.message_bytes = plan_.message_bytes;
        spec.flush_interval_ns = plan_.flush_interval_ns;
        spec.pub_idle = IdleMode::kBackoff;  // sleeps when nothing is due: its CPU time is its cost
        spec.burst_ns = kNsPerMs;  // one wake-up per ms: CPU time is publishing, not pacing
        spec.sub_idle = f.crowded ? IdleMode::kBackoff : IdleMode::kSpin;
        spec.sample_per_datagram = true;
        spec.control_poll_ns = plan_.control_poll_ns;
        spec.window = plan_.fan_window;
        f.r = m_.run(spec, progress_);
        rep.fan.push_back(std::move(f));
      }
    }
    collect_metrics(rep);
    return rep;
  }

 private:
  void phase(const std::string& what) {
    ++step_;
    progress_.phase(repeat_ > 1 ? fmt::format("[run {}/{}, {}/{}] {}", rep_ + 1, repeat_, step_, steps_, what)
                                : fmt::format("[{}/{}] {}", step_, steps_, what));
  }

  RunResult probe(double rate) {
    RunSpec spec;
    spec.label = "throughput";
    spec.subscribers = 1;
    spec.rate = rate;
    spec.message_bytes = plan_.message_bytes;
    spec.flush_interval_ns = plan_.flush_interval_ns;
    spec.sample_per_datagram = true;
    spec.control_poll_ns = plan_.control_poll_ns;
    spec.window = plan_.probe_window;
    return m_.run(spec, progress_);
  }

  // The highest offered rate the subscriber takes with no loss at all: one
  // unpaced run (if it is lossless, the publisher is the limit), then a
  // bisection between the subscriber's observed speed and that rate.
  Throughput throughput() {
    Throughput t;
    if (plan_.raw) {
      phase(fmt::format("{}: throughput of 64-byte messages {}", m_.raw_name(), m_.raw_throughput_note()));
      t.raw = m_.raw({0, plan_.probe_window}, progress_);
    }
    auto record = [&](double offered, RunResult r) {
      Probe p;
      p.offered = offered;
      // Offered rate reached (within 3%), and nobody lost anything.
      p.pass = r.lossless() && (offered == 0 || r.pub.rate >= 0.97 * offered);
      p.r = std::move(r);
      t.probes.push_back(std::move(p));
      const size_t i = t.probes.size() - 1;
      if (t.probes[i].pass &&
          (t.best < 0 || min_sub_rate(t.probes[i].r) > min_sub_rate(t.probes[static_cast<size_t>(t.best)].r)))
        t.best = static_cast<int>(i);
      return t.probes[i].pass;
    };
    phase(fmt::format("mdcast over {}: 64-byte messages, publisher unpaced", m_.name()));
    RunResult first = probe(0);
    const double pub_max = first.pub.rate;
    const double sub_speed = min_sub_rate(first);
    if (record(0, std::move(first))) {
      t.publisher_bound = true;
      return t;
    }
    if (pub_max <= 0) return t;  // the run failed: nothing to search
    double lo = 0, hi = pub_max;
    double cand = std::clamp(sub_speed * 0.95, pub_max * 0.05, pub_max * 0.95);
    for (int i = 0; i < plan_.probe_steps + 1; ++i) {
      phase(fmt::format("mdcast over {}: 64-byte messages @ {:.2f} M msg/s offered (search {}/{})", m_.name(), cand / 1e6,
                        i + 1, plan_.probe_steps + 1));
      if (record(cand, probe(cand))) {
        lo = cand;
      } else {
        hi = cand;
      }
      if (lo > 0 && hi / lo < 1.03) break;
      cand = lo > 0 ? (lo + hi) / 2 : cand * 0.6;
      if (g_stop) break;
    }
    return t;
  }

  MediumBench& m_;
  const Plan& plan_;
  size_t ncpus_;
  Progress& progress_;
  unsigned repeat_;
  unsigned rep_ = 0;
  size_t step_ = 0, steps_ = 0;
};

// ------------------------------------------------------------------ report --

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

std::string probe_verdict(const Probe& p) {
  if (p.pass) return "ok";
  if (!p.r.completed) return "failed: " + p.r.error;
  if (const uint64_t l = lapped_total(p.r)) return fmt::format("lapped ({} datagrams)", l);
  for (const auto& s : p.r.subs)
    if (s.snapshots || s.gaps) return fmt::format("{} gaps, {} snapshots", s.gaps, s.snapshots);
  if (lost_total(p.r)) return fmt::format("{} messages lost", lost_total(p.r));
  return fmt::format("publisher reached only {}", rate_str(p.r.pub.rate));
}

class Summary {
 public:
  explicit Summary(const std::vector<Rep>& reps) {
    for (const auto& r : reps)
      for (const auto& [k, v] : r.metrics) {
        if (!values_.count(k)) order_.push_back(k);
        values_[k].push_back(v);
      }
    for (const auto& k : order_) spreads_[k] = Spread::of(values_[k]);
  }
  [[nodiscard]] double median(const std::string& k) const {
    const auto it = spreads_.find(k);
    return it == spreads_.end() ? std::nan("") : it->second.median;
  }
  // "[min-max]" of a repeated number in its own unit; empty for one run.
  template <class Fmt>
  [[nodiscard]] std::string range(const std::string& k, Fmt&& unit) const {
    const auto it = spreads_.find(k);
    if (it == spreads_.end() || it->second.n < 2) return "";
    return fmt::format("[{}-{}]", unit(it->second.min), unit(it->second.max));
  }
  [[nodiscard]] const std::vector<std::string>& keys() const noexcept { return order_; }
  [[nodiscard]] const Spread& at(const std::string& k) const { return spreads_.at(k); }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<double>> values_;
  std::map<std::string, Spread> spreads_;
};

struct Target {
  std::string what, target, measured, verdict;
  bool measured_ok = false, met = false;
};

std::vector<Target> targets(const Summary& S, const Plan& plan, const MediumBench& m) {
  std::vector<Target> out;
  {
    Target t{"core-to-core one-way p50 (reference, not a target)", "~55 ns (p99 136 ns)", "", ""};
    const double v = S.median("c2c.one_way_ns.p50");
    if (!std::isnan(v)) {
      t.measured_ok = true;
      t.met = true;
      t.measured = fmt::format("{} (p99 {})", ns_str(v), ns_str(S.median("c2c.one_way_ns.p99")));
      t.verdict = "reference";
    }
    out.push_back(t);
  }
  if (m.name() == "verbs") {
    // The design targets are for real HCAs; under Soft-RoCE emulation the
    // figures say the path works and what it costs there, nothing more.
    const std::string first = plan.rates.empty() ? "" : rate_key(plan.rates.front());
    {
      Target t{fmt::format("mdcast verbs one-way mean / p99.9 @ {} msg/s", first), "2.8 us / 4.1 us (real HCA)", "", ""};
      const double mean = S.median("latency." + first + ".mdcast_ns.mean");
      const double p999 = S.median("latency." + first + ".mdcast_ns.p99.9");
      if (!std::isnan(mean)) {
        t.measured_ok = true;
        t.measured = fmt::format("{} / {}", ns_str(mean), ns_str(p999));
        t.met = mean <= 2800 && p999 <= 4100;
        t.verdict = m.emulated() ? "Soft-RoCE emulation: functional figure, not comparable"
                    : t.met      ? "met"
                                 : fmt::format("missed ({:.1f}x / {:.1f}x the target)", mean / 2800, p999 / 4100);
      }
      out.push_back(t);
    }
    {
      Target t{"64-byte messages delivered per subscriber, no loss", ">= 3 M/s on one QP (real HCA)", "", ""};
      const double v = S.median("throughput.mdcast_msgs_per_s");
      if (!std::isnan(v)) {
        t.measured_ok = true;
        t.measured = rate_str(v);
        t.met = v >= 3e6;
        t.verdict = m.emulated() ? "Soft-RoCE emulation: functional figure, not comparable"
                    : t.met      ? "met"
                                 : fmt::format("missed ({:.0f}% of the target)", 100 * v / 3e6);
      }
      out.push_back(t);
    }
  } else {
    {
      Target t{"mdcast shm one-way p50 @ 100k msg/s", "<= 100 ns (Aeron IPC: 152 ns)", "", ""};
      const double v = S.median("latency.100k.mdcast_ns.p50");
      if (!std::isnan(v)) {
        t.measured_ok = true;
        t.measured = ns_str(v);
        t.met = v <= 100;
        t.verdict = t.met ? "met" : fmt::format("missed by {} ({:.1f}x the target)", ns_str(v - 100), v / 100);
      }
      out.push_back(t);
    }
    {
      Target t{"64-byte messages delivered per subscriber, no loss", ">= 40 M/s (Aeron IPC: 26 M/s)", "", ""};
      const double v = S.median("throughput.mdcast_msgs_per_s");
      if (!std::isnan(v)) {
        t.measured_ok = true;
        t.measured = rate_str(v);
        t.met = v >= 40e6;
        t.verdict = t.met ? "met" : fmt::format("missed by {:.1f} M/s ({:.0f}% of the target)", (40e6 - v) / 1e6, 100 * v / 40e6);
      }
      out.push_back(t);
    }
  }
  {
    const std::string range = plan.fanout_counts.empty()
                                  ? "1 -> 8"
                                  : fmt::format("{} -> {}", plan.fanout_counts.front(), plan.fanout_counts.back());
    Target t{fmt::format("publisher CPU per message, {} subscribers", range), "flat, within 10 %", "", ""};
    const double v = S.median("fanout.pub_cost_change_pct");
    if (!std::isnan(v)) {
      t.measured_ok = true;
      t.measured = fmt::format("{:+.1f} %", v);
      t.met = std::fabs(v) <= 10;
      t.verdict = t.met ? "met" : fmt::format("missed by {:.1f} points", std::fabs(v) - 10);
      if (plan.fanout_counts.empty() || plan.fanout_counts.front() != 1 || plan.fanout_counts.back() != 8)
        t.verdict += " (not the 1 -> 8 range)";
    }
    out.push_back(t);
  }
  return out;
}

void print_percentile_row(const Summary& S, const std::string& label, const std::string& key, const std::string& extra) {
  auto g = [&](const char* p) { return ns_str(S.median(key + "." + p)); };
  fmt::print("  {:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {} {}\n", label, g("p50"), g("p90"), g("p99"), g("p99.9"),
             g("p99.99"), g("max"), extra, S.range(key + ".p50", ns_str));
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
      uint64_t lost = 0;
      for (const auto& r : reps)
        if (i < r.fan.size()) {
          crowded |= r.fan[i].crowded;
          lost += lapped_total(r.fan[i].r);
        }
      fmt::print("  {:>4} {:>14} {:>13} {:>13} {:>10.1f} {:>10} {:>10}  {}{}{}\n", n,
                 rate_str(S.median(k + ".delivered_msgs_per_s_min")), ns_str(S.median(k + ".pub_cpu_ns_per_msg")),
                 ns_str(S.median(k + ".pub_control_ns_per_msg")), S.median(k + ".bytes_per_msg"),
                 ns_str(S.median(k + ".one_way_ns.p50")), ns_str(S.median(k + ".one_way_ns.p99")),
                 S.range(k + ".pub_cpu_ns_per_msg", ns_str), crowded ? " crowded" : "",
                 lost ? fmt::format(" LAPPED {}", lost) : "");
    }
    const double change = S.median("fanout.pub_cost_change_pct");
    if (!std::isnan(change))
      fmt::print("  publisher CPU per message, {} -> {} subscribers: {:+.1f} % (without the control plane: {:+.1f} %)\n",
                 plan.fanout_counts.front(), plan.fanout_counts.back(), change,
                 S.median("fanout.pub_data_path_cost_change_pct"));
    fmt::print("  (publishing in 1 ms bursts; batching on, flush interval {}: latency includes batching delay)\n\n",
               format_duration(plan.flush_interval_ns));
  }
  fmt::print("targets (2-core build VM, idle, median of 3)                   target                          measured\n");
  for (const auto& t : targets(S, plan, m))
    fmt::print("  {:<58} {:<31} {:<14} {}\n", t.what, t.target, t.measured_ok ? t.measured : "not measured",
               t.verdict);
  if (!warnings.empty()) {
    fmt::print("\nwarnings:\n");
    for (const auto& w : warnings) fmt::print("  ! {}\n", w);
  }
}

// -------------------------------------------------------------------- json --

void json_percentiles(JsonWriter& j, const Histogram& h) {
  const Percentiles p = Percentiles::of(h);
  j.begin_object();
  j.field("count", p.count).field("mean", p.mean).field("min", p.min).field("p50", p.p50).field("p90", p.p90);
  j.field("p99", p.p99).field("p99.9", p.p999).field("p99.99", p.p9999).field("max", p.max);
  j.end_object();
}

void json_raw(JsonWriter& j, const RawResult& r) {
  j.begin_object();
  j.field("ok", r.ok);
  if (!r.error.empty()) j.field("error", r.error);
  j.field("messages", r.messages).field("seconds", r.seconds).field("msgs_per_s", r.rate);
  j.field("received_total", r.received).field("lost_total", r.lost);
  j.field("preempted", static_cast<int64_t>(r.preempted));
  j.key("one_way_ns");
  json_percentiles(j, r.latency);
  j.end_object();
}

void json_run(JsonWriter& j, const RunResult& r) {
  j.begin_object();
  j.field("completed", r.completed).field("lossless", r.lossless());
  if (!r.error.empty()) j.field("error", r.error);
  j.field("busy_processes", r.busy_processes);
  j.key("publisher").begin_object();
  j.field("ok", r.pub.ok).field("published", r.pub.published).field("window_messages", r.pub.window_messages);
  j.field("window_datagrams", r.pub.window_datagrams).field("window_seconds", r.pub.window_s);
  j.field("msgs_per_s", r.pub.rate).field("cpu_ns_per_msg", cpu_ns_per_msg(r));
  j.field("bytes_per_msg", bytes_per_msg(r)).field("medium_bytes_per_msg", medium_bytes_per_msg(r));
  j.field("messages_per_datagram", r.pub.window_datagrams ? static_cast<double>(r.pub.window_messages) /
                                                                static_cast<double>(r.pub.window_datagrams)
                                                          : std::nan(""));
  j.field("preempted", static_cast<int64_t>(r.pub.preempted));
  j.end_object();
  j.key("subscribers").begin_array();
  for (const auto& s : r.subs) {
    j.begin_object();
    j.field("ok", s.ok).field("outcome", s.outcome).field("delivered", s.delivered).field("msgs_per_s", s.rate);
    j.field("lapped", s.lapped).field("gaps", s.gaps).field("recovered", s.recovered);
    j.field("retransmit_requests", s.retransmit_requests).field("snapshots", s.snapshots);
    j.field("malformed", s.malformed).field("duplicates", s.duplicates);
    j.field("preempted", static_cast<int64_t>(s.preempted)).field("cpu_seconds", s.cpu_s);
    j.key("one_way_ns");
    json_percentiles(j, s.latency);
    j.end_object();
  }
  j.end_array();
  j.key("one_way_ns");
  json_percentiles(j, merged_latency(r));
  j.end_object();
}

std::string command_line() {
  std::string out;
  if (std::FILE* f = std::fopen("/proc/self/cmdline", "r")) {
    int c;
    while ((c = std::fgetc(f)) != EOF) out += c ? static_cast<char>(c) : ' ';
    std::fclose(f);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string to_json(const std::vector<Rep>& reps, const Summary& S, const Plan& plan, const MediumBench& m,
                    const BenchArgs& a, const std::vector<int>& cpus, const std::array<double, 3>& load0,
                    const std::array<double, 3>& load1, double clock_ns, const std::vector<std::string>& warnings) {
  JsonWriter j;
  j.begin_object();
  j.field("tool", "mdcast bench").field("format", 1).field("command", command_line());
  j.field("medium", m.name()).field("medium_detail", m.describe()).field("raw_baseline", m.raw_name());
  j.field("quick", a.quick).field("repeat", static_cast<unsigned>(reps.size()));
  j.key("host").begin_object();
  j.field("cpus_online", static_cast<int64_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  j.key("cpus").begin_array();
  for (int c : cpus) j.value(c);
  j.end_array();
  j.key("load_average_start").begin_array();
  for (double v : load0) j.value(v);
  j.end_array();
  j.key("load_average_end").begin_array();
  for (double v : load1) j.value(v);
  j.end_array();
  j.field("clock_read_ns", clock_ns);
  if (!reps.empty() && reps[0].c2c) j.field("tsc_ghz", reps[0].c2c->tsc_ghz);
  j.end_object();
  j.key("settings").begin_object();
  j.field("message_bytes", static_cast<uint64_t>(plan.message_bytes)).field("flow", plan.orders ? "orders" : "opaque");
  j.key("latency_rates").begin_array();
  for (double r : plan.rates) j.value(r);
  j.end_array();
  j.key("fanout_subscribers").begin_array();
  for (uint32_t n : plan.fanout_counts) j.value(n);
  j.end_array();
  j.field("fanout_rate", plan.fanout_rate).field("flush_interval_ns", plan.flush_interval_ns);
  j.field("latency_warmup_s", static_cast<double>(plan.lat_window.warmup_ns) / 1e9);
  j.field("latency_duration_s", static_cast<double>(plan.lat_window.duration_ns) / 1e9);
  j.field("probe_duration_s", static_cast<double>(plan.probe_window.duration_ns) / 1e9);
  j.field("fanout_duration_s", static_cast<double>(plan.fan_window.duration_ns) / 1e9);
  j.field("c2c_round_trips", plan.c2c_round_trips).field("control_poll_ns", plan.control_poll_ns);
  j.end_object();
  j.key("warnings").begin_array();
  for (const auto& w : warnings) j.value(w);
  j.end_array();

  j.key("runs").begin_array();
  for (const auto& rep : reps) {
    j.begin_object();
    if (plan.c2c) {
      j.key("core_to_core").begin_object();
      if (rep.c2c) {
        j.field("ok", true).field("round_trips", rep.c2c->round_trips);
        j.key("cpus").begin_array().value(cpus[0]).value(cpus.size() > 1 ? cpus[1] : cpus[0]).end_array();
        j.key("one_way_ns");
        json_percentiles(j, rep.c2c->one_way_ns);
      } else {
        j.field("ok", false).field("error", rep.c2c_error);
      }
      j.end_object();
    }
    j.key("latency").begin_array();
    for (const auto& l : rep.lat) {
      j.begin_object();
      j.field("rate", l.rate);
      if (l.raw) {
        j.key("raw");
        json_raw(j, *l.raw);
      }
      if (l.md) {
        j.key("mdcast");
        json_run(j, *l.md);
      }
      if (l.raw && l.md && l.raw->latency.count() && merged_latency(*l.md).count())
        j.field("ratio_p50", static_cast<double>(merged_latency(*l.md).percentile(50)) /
                                 static_cast<double>(std::max<uint64_t>(1, l.raw->latency.percentile(50))));
      j.end_object();
    }
    j.end_array();
    if (rep.tp) {
      const Throughput& t = *rep.tp;
      j.key("throughput").begin_object();
      if (t.raw) {
        j.key("raw");
        json_raw(j, *t.raw);
      }
      j.field("publisher_bound", t.publisher_bound);
      if (t.best >= 0) {
        const RunResult& b = t.probes[static_cast<size_t>(t.best)].r;
        j.field("msgs_per_s", min_sub_rate(b)).field("bytes_per_msg", bytes_per_msg(b));
        j.field("medium_bytes_per_msg", medium_bytes_per_msg(b));
        if (t.raw && t.raw->ok && t.raw->rate > 0) j.field("ratio", min_sub_rate(b) / t.raw->rate);
      } else {
        j.key("msgs_per_s").null();
      }
      j.key("probes").begin_array();
      for (const auto& p : t.probes) {
        j.begin_object();
        j.field("offered", p.offered).field("pass", p.pass).field("published_msgs_per_s", p.r.pub.rate);
        j.field("delivered_msgs_per_s_min", min_sub_rate(p.r)).field("lapped", lapped_total(p.r));
        j.field("lost", lost_total(p.r)).field("preempted", static_cast<int64_t>(preempted_total(p.r)));
        j.field("verdict", probe_verdict(p));
        if (!p.r.error.empty()) j.field("error", p.r.error);
        j.end_object();
      }
      j.end_array();
      j.end_object();
    }
    j.key("fanout").begin_array();
    for (const auto& f : rep.fan) {
      j.begin_object();
      j.field("subscribers", f.n).field("offered_rate", plan.fanout_rate).field("crowded", f.crowded);
      j.field("delivered_msgs_per_s_min", min_sub_rate(f.r)).field("publisher_cpu_ns_per_msg", cpu_ns_per_msg(f.r));
      j.field("publisher_control_ns_per_msg", control_ns_per_msg(f.r));
      j.field("bytes_per_msg", bytes_per_msg(f.r)).field("medium_bytes_per_msg", medium_bytes_per_msg(f.r));
      j.key("run");
      json_run(j, f.r);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();

  j.key("summary").begin_object();
  for (const auto& k : S.keys()) {
    const Spread& sp = S.at(k);
    j.key(k).begin_object();
    j.field("median", sp.median).field("min", sp.min).field("max", sp.max).field("spread_pct", sp.spread_pct());
    j.field("n", static_cast<uint64_t>(sp.n));
    j.end_object();
  }
  j.end_object();
  j.key("targets").begin_array();
  for (const auto& t : targets(S, plan, m)) {
    j.begin_object();
    j.field("what", t.what).field("target", t.target).field("measured", t.measured_ok);
    if (t.measured_ok) j.field("value", t.measured).field("met", t.met).field("verdict", t.verdict);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

void add_run_warnings(std::vector<std::string>& out, const std::vector<Rep>& reps, size_t ncpus, double fanout_rate) {
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
      }
      if (l.md) {
        check(fmt::format("mdcast latency @ {}", rate_key(l.rate)), *l.md);
        if (l.md->completed && !l.md->lossless())
          w.push_back(fmt::format("mdcast latency @ {}: the subscriber fell a ring behind and recovered what it lost "
                                  "(JSON: lapped): the tail includes recovery",
                                  rate_key(l.rate)));
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
}

}  // namespace

// ------------------------------------------------------------------- entry --

CLI::App* add_bench_command(CLI::App& app, BenchArgs& a) {
  auto* b = app.add_subcommand("bench", "latency, throughput and fan-out over a medium, side by side with its raw baseline");
  b->add_option("--medium", a.medium, "shm or verbs (udp: when this build has it)");
  b->add_flag("--quick", a.quick, "a short smoke run (seconds; rough numbers)");
  b->add_option("--repeat", a.repeat, "run everything N times; report median and spread")->check(CLI::Range(1u, 100u));
  b->add_option("--json", a.json, "also write every number to this JSON file");
  b->add_option("--cpus", a.cpus, "CPUs to pin to, publisher first: 0,1 or 0-3 (default: all this process may use)");
  b->add_option("--rates", a.rates, "offered rates of the latency runs (default 100k,1M; Soft-RoCE 1k,5k)");
  b->add_option("--fanout", a.fanout, "subscriber counts of the fan-out runs (default 1,2,4,8; --quick 1,2; Soft-RoCE 1,2,4)");
  b->add_option("--fanout-rate", a.fanout_rate, "offered rate of the fan-out runs (default 1M; --quick 200k; Soft-RoCE 50k, --quick 20k)");
  b->add_option("--sections", a.sections, "run only these: c2c,raw,latency,throughput,fanout");
  b->add_option("--flow", a.flow, "latency runs: opaque 64-byte messages, or the synthetic order flow with books on")
      ->check(CLI::IsMember({"opaque", "orders"}));
  b->add_option("--warmup", a.warmup, "warm-up before each measured window (default 1s; --quick 200ms)");
  b->add_option("--duration", a.duration, "measured window of the latency runs (default 5s; --quick 500ms); "
                                          "fan-out runs use half, throughput probes a quarter");
  b->add_option("--control-poll", a.control_poll,
                 "least time between control-plane polls in the duty loops (default 100us, like feed.control_poll "
                 "in `mdcast publish/subscribe`; 0: every idle round)");
  b->add_option_function<std::string>(
      "--progress", [&a](const std::string& v) { a.progress = v == "true" || v == "1" || v == "yes" ? 1 : 0; },
      "live progress line: true/false (default: when stderr is a terminal)");
  b->add_option_function<std::vector<std::string>>(
       "--set",
       [&a](const std::vector<std::string>& vs) {
         for (const auto& kv : vs) {
           const auto eq = kv.find('=');
           if (eq == std::string::npos) throw CLI::ValidationError("--set", "expected KEY=VALUE, got '" + kv + "'");
           a.set.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
         }
       },
       "set any setting: --set shm.slots=65536 (see --help-config)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return b;
}

int run_bench(Settings& s, const BenchArgs& a) {
  for (const auto& [k, v] : a.set) apply_setting(s, k, v, "--set " + k);
  apply_setting(s, "feed.medium", a.medium, "--medium");
  const std::vector<int> cpus = a.cpus.empty() ? bench::allowed_cpus() : bench::parse_cpu_list(a.cpus);
  if (cpus.empty()) fail("no CPU to run on");
  Placement where{cpus};
  auto medium = make_medium_bench(s.feed.medium, s, where);
  const Plan plan = make_plan(s, a, medium->defaults());
  Progress progress(a.progress < 0 ? isatty(STDERR_FILENO) != 0 : a.progress == 1);

  std::vector<std::string> warnings;
  const auto load0 = bench::load_average();
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const size_t busiest = 1 + (plan.fanout && !plan.fanout_counts.empty()
                                  ? *std::max_element(plan.fanout_counts.begin(), plan.fanout_counts.end())
                                  : 1);
  if (cpus.size() < 2)
    warnings.push_back(fmt::format("only CPU {} is used: publisher and subscriber share it, which measures the scheduler, not the medium",
                                   cpus[0]));
  if (cpus.size() < busiest)
    warnings.push_back(fmt::format("fewer CPUs ({}) than busy processes in the largest run ({}): numbers of the crowded runs mean little",
                                   cpus.size(), busiest));
  if (load0[0] > 0.5)
    warnings.push_back(fmt::format("the machine was busy when the bench started (load average {:.2f} on {} CPUs): "
                                   "other work competes for the CPUs, numbers are noisy",
                                   load0[0], online));

  fmt::print("mdcast bench: medium {} ({}), CPUs {} of {}, {}{}\n", medium->name(), medium->describe(),
             bench::format_cpu_list(cpus), online, a.quick ? "quick run" : "full run",
             a.repeat > 1 ? fmt::format(", {} repetitions", a.repeat) : "");
  fmt::print("load average at start {:.2f} {:.2f} {:.2f}\n", load0[0], load0[1], load0[2]);
  for (const auto& w : warnings) fmt::print("  ! {}\n", w);
  std::fflush(stdout);
  const double clock_ns = bench::clock_read_ns();

  Runner runner(*medium, plan, cpus.size(), progress, a.repeat);
  std::vector<Rep> reps;
  for (unsigned i = 0; i < a.repeat && !g_stop; ++i) reps.push_back(runner.run_once(i, cpus));
  if (g_stop) {
    fmt::print(stderr, "mdcast bench: interrupted\n");
    return 130;
  }
  const auto load1 = bench::load_average();
  add_run_warnings(warnings, reps, cpus.size(), plan.fanout_rate);
  if (load1[0] > 0.5 && load0[0] <= 0.5)
    warnings.push_back(fmt::format("load average {:.2f} at the end: other work ran meanwhile", load1[0]));
  const Summary S(reps);
  fmt::print("clock: CLOCK_MONOTONIC read costs {:.0f} ns (each latency includes one read at each end); "
             "control plane polled every {}\n",
             clock_ns, plan.control_poll_ns ? format_duration(plan.control_poll_ns) : "every idle round");
  print_report(S, reps, plan, *medium, warnings, a.repeat);
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    if (!f) fail_errno("cannot write {}", a.json);
    f << to_json(reps, S, plan, *medium, a, cpus, load0, load1, clock_ns, warnings);
    if (!f) fail_errno("cannot write {}", a.json);
    fmt::print("\nJSON written to {}\n", a.json);
  }
  // Failing to run is an error; slow numbers are not.
  bool ran = true;
  for (const auto& r : reps) {
    for (const auto& l : r.lat) ran &= (!l.raw || l.raw->ok) && (!l.md || l.md->completed);
    for (const auto& f : r.fan) ran &= f.r.completed;
    if (r.tp) ran &= !r.tp->probes.empty() && r.tp->probes[0].r.completed;
  }
  return ran ? 0 : 1;
}

}  // namespace mdcast::app
