#include "run.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mdcast/core/error.hpp"
#include "runners.hpp"
#include "summary.hpp"

namespace mdcast::app::bench {

Runner::Runner(MediumBench& medium, const Plan& plan, size_t ncpus, Progress& progress, unsigned repeat)
    : m_(medium), plan_(plan), ncpus_(ncpus), progress_(progress), repeat_(repeat) {
  steps_ = (plan.c2c ? 1 : 0) +
           (plan.latency ? plan.rates.size() * (plan.raw ? 2 : 1) : 0) +
           (plan.throughput ? (plan.raw ? 1 : 0) + 2 + static_cast<size_t>(plan.probe_steps) : 0) +
           (plan.fanout ? plan.fanout_counts.size() : 0) + (plan.control ? 4 : 0) +
           (plan.relay ? 2 * plan.rates.size() : 0);
}

Rep Runner::run_once(unsigned rep_index, const std::vector<int>& cpus) {
  rep_ = rep_index;
  step_ = 0;
  Rep rep;
  if (plan_.c2c) {
    phase(fmt::format("core-to-core cache-line ping-pong, CPUs {} <-> {}", cpus[0], cpus.size() > 1 ? cpus[1] : cpus[0]));
    try {
      rep.c2c = core_to_core(cpus[0], cpus.size() > 1 ? cpus[1] : cpus[0], plan_.c2c_round_trips, plan_.c2c_warmup);
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
      RunSpec spec = run_spec("latency", 1, rate, plan_.lat_window);
      spec.orders = plan_.orders;
      spec.books = plan_.orders;
      spec.flush_interval_ns = 0;
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
      RunSpec spec = run_spec("fanout", n, plan_.fanout_rate, plan_.fan_window);
      spec.flush_interval_ns = plan_.flush_interval_ns;
      spec.pub_idle = IdleMode::kBackoff;  // sleeps when nothing is due: its CPU time is its cost
      spec.burst_ns = kNsPerMs;  // one wake-up per ms: CPU time is publishing, not pacing
      spec.sub_idle = f.crowded ? IdleMode::kBackoff : IdleMode::kSpin;
      spec.sample_per_datagram = true;
      f.r = m_.run(spec, progress_);
      rep.fan.push_back(std::move(f));
    }
  }
  if (plan_.control) {
    // The same feed without clients, then with them: one message per
    // datagram at the offered rate, one subscriber.
    for (const uint32_t n : {0u, plan_.control_clients}) {
      ControlPoint cp;
      cp.clients = n;
      RunSpec spec = run_spec("control", 1, plan_.control_rate, plan_.lat_window);
      spec.flush_interval_ns = 0;
      spec.control_clients = n;
      spec.control_figures = true;
      phase(fmt::format("mdcast over {}: {} control clients, one-way latency @ {} msg/s", m_.name(), n,
                        rate_key(plan_.control_rate)));
      cp.lat = m_.run(spec, progress_);
      phase(fmt::format("mdcast over {}: {} control clients, publisher CPU per message @ {} msg/s (1 ms bursts)",
                        m_.name(), n, rate_key(plan_.control_rate)));
      spec.pub_idle = IdleMode::kBackoff;  // as the fan-out runs: it sleeps when nothing is due
      spec.burst_ns = kNsPerMs;
      cp.cost = m_.run(spec, progress_);
      rep.ctl.push_back(std::move(cp));
    }
  }
  if (plan_.relay) {
    for (double rate : plan_.rates) {
      RelayPoint x;
      x.rate = rate;
      x.crowded = 4 > ncpus_;  // publisher, relay, two subscribers
      phase(fmt::format("mdcast over {}: one-way latency @ {} msg/s, straight and through a relay{}", m_.name(),
                        rate_key(rate), x.crowded ? " (more processes than CPUs)" : ""));
      RunSpec spec = run_spec("relay", 2, rate, plan_.lat_window);
      spec.relay = true;
      spec.flush_interval_ns = 0;
      x.r = m_.run(spec, progress_);
      phase(fmt::format("mdcast over {}: the relay's CPU per message @ {} msg/s (1 ms bursts, sleeping when idle)",
                        m_.name(), rate_key(rate)));
      spec.pub_idle = spec.sub_idle = IdleMode::kBackoff;
      spec.burst_ns = kNsPerMs;
      x.cost = m_.run(spec, progress_);
      rep.relay.push_back(std::move(x));
    }
  }
  collect_metrics(rep);
  return rep;
}

void Runner::phase(const std::string& what) {
  ++step_;
  progress_.phase(repeat_ > 1 ? fmt::format("[run {}/{}, {}/{}] {}", rep_ + 1, repeat_, step_, steps_, what)
                              : fmt::format("[{}/{}] {}", step_, steps_, what));
}

RunSpec Runner::run_spec(const char* label, uint32_t subscribers, double rate, const Window& window) const {
  RunSpec spec;
  spec.label = label;
  spec.subscribers = subscribers;
  spec.rate = rate;
  spec.message_bytes = plan_.message_bytes;
  spec.control_poll_ns = plan_.control_poll_ns;
  spec.window = window;
  return spec;
}

RunResult Runner::probe(double rate) {
  RunSpec spec = run_spec("throughput", 1, rate, plan_.probe_window);
  spec.flush_interval_ns = plan_.flush_interval_ns;
  spec.sample_per_datagram = true;
  return m_.run(spec, progress_);
}

// The highest offered rate the subscriber takes with no loss at all: one
// unpaced run (if it is lossless, the publisher is the limit), then a
// bisection between the subscriber's observed speed and that rate.
Throughput Runner::throughput() {
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
    if (g_stop.requested()) break;
  }
  return t;
}

}  // namespace mdcast::app::bench
