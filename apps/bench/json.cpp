#include "json.hpp"

#include <cmath>
#include <cstdio>

#include "control_bench.hpp"
#include "measure/json_writer.hpp"
#include "measure/stats.hpp"

namespace mdcast::app::bench {

namespace {

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

// CPU utilisation of one process over its window (CPU time / wall time, %;
// 100 is one core busy throughout) and what it touched per message.
void json_usage(JsonWriter& j, const Usage& u, uint64_t messages, const std::string& perf_why) {
  j.field("window_wall_seconds", static_cast<double>(u.wall_ns) / 1e9);
  j.field("window_cpu_seconds", static_cast<double>(u.cpu_ns) / 1e9);
  j.field("cpu_pct", u.cpu_pct()).field("user_pct", u.user_pct()).field("system_pct", u.sys_pct());
  j.field("minor_faults", u.minflt).field("minor_faults_per_msg", minflt_per_msg(u, messages));
  j.field("dtlb_load_misses_per_msg", dtlb_per_msg(u, messages));  // null: not counted (dtlb_note says why)
  if (u.dtlb_misses == kNotCounted) j.field("dtlb_note", perf_why.empty() ? std::string("not counted") : perf_why);
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
  if (r.pub.lateness.count()) {
    j.key("published_late_ns");
    json_percentiles(j, r.pub.lateness);
  }
  json_usage(j, r.pub.usage, r.pub.window_messages, r.pub.perf_why);
  j.key("ring").begin_object();
  j.field("slot_bytes", r.pub.ring_slot_bytes).field("datagrams_swept", r.pub.ring_swept);
  j.field("pages_4k", r.pub.ring_pages_4k).field("pages_per_datagram", ring_pages_per_datagram(r));
  j.field("pages_per_msg", ring_pages_per_msg(r));
  j.field("kernel_page_bytes", r.pub.ring_page_bytes).field("kernel_pages_per_msg", ring_kernel_pages_per_msg(r));
  j.end_object();
  j.end_object();
  j.key("subscribers").begin_array();
  for (const auto& s : r.subs) {
    j.begin_object();
    j.field("ok", s.ok).field("outcome", s.outcome).field("delivered", s.delivered).field("msgs_per_s", s.rate);
    j.field("lapped", s.lapped).field("kernel_drops", s.kernel_drops).field("gaps", s.gaps).field("recovered", s.recovered);
    j.field("retransmit_requests", s.retransmit_requests).field("snapshots", s.snapshots);
    j.field("malformed", s.malformed).field("duplicates", s.duplicates);
    j.field("preempted", static_cast<int64_t>(s.preempted)).field("cpu_seconds", s.cpu_s);
    j.field("window_messages", s.rx_window);
    json_usage(j, s.usage, s.rx_window, s.perf_why);
    j.key("one_way_ns");
    json_percentiles(j, s.latency);
    j.end_object();
  }
  j.end_array();
  j.key("one_way_ns");
  json_percentiles(j, merged_latency(r));
  if (r.control) {
    j.key("control");
    json_control(j, *r.control);
  }
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

}  // namespace

std::string to_json(const std::vector<Rep>& reps, const Summary& S, const Plan& plan, const MediumBench& m,
                    const BenchArgs& a, const HostFacts& host, const std::vector<std::string>& warnings) {
  const std::vector<int>& cpus = host.cpus;
  JsonWriter j;
  j.begin_object();
  j.field("tool", "mdcast bench").field("format", 1).field("command", command_line());
  j.field("medium", m.name()).field("medium_detail", m.describe()).field("raw_baseline", m.raw_name());
  j.field("quick", a.quick).field("repeat", static_cast<unsigned>(reps.size()));
  j.key("host").begin_object();
  j.field("cpus_online", static_cast<int64_t>(host.online));
  j.array("cpus", cpus).array("load_average_start", host.load_start).array("load_average_end", host.load_end);
  j.field("clock_read_ns", host.clock_read_ns);
  if (!reps.empty() && reps[0].c2c) j.field("tsc_ghz", reps[0].c2c->tsc_ghz);
  j.end_object();
  j.key("settings").begin_object();
  j.field("message_bytes", static_cast<uint64_t>(plan.message_bytes)).field("flow", plan.orders ? "orders" : "opaque");
  j.array("latency_rates", plan.rates).array("fanout_subscribers", plan.fanout_counts);
  j.field("fanout_rate", plan.fanout_rate).field("flush_interval_ns", plan.flush_interval_ns);
  j.field("latency_warmup_s", static_cast<double>(plan.lat_window.warmup_ns) / 1e9);
  j.field("latency_duration_s", static_cast<double>(plan.lat_window.duration_ns) / 1e9);
  j.field("probe_duration_s", static_cast<double>(plan.probe_window.duration_ns) / 1e9);
  j.field("fanout_duration_s", static_cast<double>(plan.fan_window.duration_ns) / 1e9);
  j.field("c2c_round_trips", plan.c2c_round_trips).field("control_poll_ns", plan.control_poll_ns);
  if (plan.control) j.field("control_clients", plan.control_clients).field("control_rate", plan.control_rate);
  j.end_object();
  j.array("warnings", warnings);

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
        j.field("publisher_cpu_pct", b.pub.usage.cpu_pct());
        j.field("subscriber_cpu_pct", busiest_sub(b) ? busiest_sub(b)->usage.cpu_pct() : std::nan(""));
        j.field("ring_pages_per_msg", ring_pages_per_msg(b));
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
        j.field("publisher_cpu_pct", p.r.pub.usage.cpu_pct());
        j.field("subscriber_cpu_pct", busiest_sub(p.r) ? busiest_sub(p.r)->usage.cpu_pct() : std::nan(""));
        j.field("ring_pages_per_msg", ring_pages_per_msg(p.r));
        if (!p.r.error.empty()) j.field("error", p.r.error);
        j.end_object();
      }
      j.end_array();
      j.end_object();
    }
    j.key("control").begin_array();
    for (const auto& c : rep.ctl) {
      j.begin_object();
      j.field("clients", c.clients).field("offered_rate", plan.control_rate);
      j.key("one_way_ns");
      json_percentiles(j, merged_latency(c.lat));
      j.field("publisher_cpu_ns_per_msg", cpu_ns_per_msg(c.cost));
      j.field("publisher_control_ns_per_msg", control_ns_per_msg(c.cost));
      j.field("publisher_cpu_pct", c.cost.pub.usage.cpu_pct());
      j.key("latency_run");
      json_run(j, c.lat);
      j.key("cpu_run");
      json_run(j, c.cost);
      j.end_object();
    }
    j.end_array();
    j.key("fanout").begin_array();
    for (const auto& f : rep.fan) {
      j.begin_object();
      j.field("subscribers", f.n).field("offered_rate", plan.fanout_rate).field("crowded", f.crowded);
      j.field("delivered_msgs_per_s_min", min_sub_rate(f.r)).field("publisher_cpu_ns_per_msg", cpu_ns_per_msg(f.r));
      j.field("publisher_control_ns_per_msg", control_ns_per_msg(f.r));
      j.field("bytes_per_msg", bytes_per_msg(f.r)).field("medium_bytes_per_msg", medium_bytes_per_msg(f.r));
      j.field("publisher_cpu_pct", f.r.pub.usage.cpu_pct());
      j.field("subscriber_cpu_pct_max", busiest_sub(f.r) ? busiest_sub(f.r)->usage.cpu_pct() : std::nan(""));
      j.field("ring_pages_per_msg", ring_pages_per_msg(f.r));
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

}  // namespace mdcast::app::bench
