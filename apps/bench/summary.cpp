#include "summary.hpp"

#include "control_bench.hpp"

#include <algorithm>
#include <cmath>

namespace mdcast::app::bench {

namespace {

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

// CPU utilisation and pages touched of one run, under prefix.
void add_usage(std::vector<std::pair<std::string, double>>& m, const std::string& k, const RunResult& r) {
  auto put = [&](const std::string& name, double v) {
    if (!std::isnan(v)) m.emplace_back(k + "." + name, v);
  };
  if (r.pub.usage.wall_ns) {
    put("pub_cpu_pct", r.pub.usage.cpu_pct());
    put("pub_user_pct", r.pub.usage.user_pct());
    put("pub_sys_pct", r.pub.usage.sys_pct());
  }
  if (const SubscriberResult* s = busiest_sub(r)) {
    put("sub_cpu_pct", s->usage.cpu_pct());
    put("sub_user_pct", s->usage.user_pct());
    put("sub_sys_pct", s->usage.sys_pct());
  }
  put("ring_pages_per_msg", ring_pages_per_msg(r));
  put("ring_pages_per_datagram", ring_pages_per_datagram(r));
  put("ring_kernel_pages_per_msg", ring_kernel_pages_per_msg(r));
  put("pub_minflt_per_msg", minflt_per_msg(r.pub.usage, r.pub.window_messages));
  put("sub_minflt_per_msg", sub_minflt_per_msg(r));
  put("pub_dtlb_misses_per_msg", dtlb_per_msg(r.pub.usage, r.pub.window_messages));
  put("sub_dtlb_misses_per_msg", sub_dtlb_per_msg(r));
}

}  // namespace

void collect_metrics(Rep& rep) {
  collect_control_metrics(rep);
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
      add_usage(m, k, *l.md);
    }
  }
  for (const auto& x : rep.relay) {
    const std::string k = "relay." + rate_key(x.rate);
    if (!x.r.completed || x.r.subs.size() != 2 || !x.r.relay) continue;
    const Histogram& direct = x.r.subs[0].latency;
    const Histogram& relayed = x.r.subs[1].latency;
    add_percentiles(m, k + ".direct_ns", direct);
    add_percentiles(m, k + ".relayed_ns", relayed);
    if (direct.count() && relayed.count()) {
      for (const double q : {50.0, 99.0})
        m.emplace_back(fmt::format("{}.added_ns.p{:.0f}", k, q),
                       static_cast<double>(relayed.percentile(q)) - static_cast<double>(direct.percentile(q)));
    }
    if (x.cost.completed && x.cost.relay && x.cost.relay->window_messages)
      m.emplace_back(k + ".relay_cpu_ns_per_msg", static_cast<double>(x.cost.relay->window_cpu_ns) /
                                                      static_cast<double>(x.cost.relay->window_messages));
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
      add_usage(m, "throughput", r);
      if (t.raw && t.raw->ok && t.raw->rate > 0) m.emplace_back("throughput.ratio", min_sub_rate(r) / t.raw->rate);
    }
  }
  double lo = 0, hi = 0;
  for (const auto& f : rep.fan) {
    if (!f.r.completed) continue;
    const std::string k = fmt::format("fanout.{}", f.n);
    m.emplace_back(k + ".delivered_msgs_per_s_min", min_sub_rate(f.r));
    m.emplace_back(k + ".unrecovered", static_cast<double>(lost_total(f.r)));
    const double c = cpu_ns_per_msg(f.r);
    m.emplace_back(k + ".pub_cpu_ns_per_msg", c);
    m.emplace_back(k + ".pub_control_ns_per_msg", control_ns_per_msg(f.r));
    m.emplace_back(k + ".pub_data_path_ns_per_msg", c - control_ns_per_msg(f.r));
    m.emplace_back(k + ".bytes_per_msg", bytes_per_msg(f.r));
    add_usage(m, k, f.r);
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

Summary::Summary(const std::vector<Rep>& reps) {
  for (const auto& r : reps)
    for (const auto& [k, v] : r.metrics) {
      if (!values_.count(k)) order_.push_back(k);
      values_[k].push_back(v);
    }
  for (const auto& k : order_) spreads_[k] = Spread::of(values_[k]);
}

double Summary::median(const std::string& k) const {
  const auto it = spreads_.find(k);
  return it == spreads_.end() ? std::nan("") : it->second.median;
}

}  // namespace mdcast::app::bench
