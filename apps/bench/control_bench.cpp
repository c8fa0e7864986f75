#include "control_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "feed_children.hpp"
#include "mdcast/core/error.hpp"
#include "report.hpp"
#include "run.hpp"
#include "summary.hpp"

namespace mdcast::app::bench {
namespace {

// How long the load may take to connect and subscribe every client before
// it tells the parent what it has (the parent waits 30 s for any child).
constexpr uint64_t kLoadSetupNs = 10 * kNsPerSec;
// It stays this long past the window: the publisher reads its counters as
// the window closes, and must find every client still there.
constexpr uint64_t kLingerNs = 50 * kNsPerMs;

void keep_problems(const ControlLoad& load, LoadFigures& f) {
  const auto& p = load.problems();
  for (size_t i = 0; i < std::min(p.size(), LoadFigures::kProblems); ++i) f.set_problem(i, p[i]);
}

double per_s(uint64_t a, uint64_t b, double seconds) {
  return seconds > 0 && b >= a ? static_cast<double>(b - a) / seconds : std::nan("");
}

const ControlPoint* base_point(const Rep& rep) {
  for (const auto& c : rep.ctl)
    if (c.clients == 0) return &c;
  return nullptr;
}
const ControlPoint* loaded_point(const Rep& rep) {
  const ControlPoint* best = nullptr;
  for (const auto& c : rep.ctl)
    if (c.clients > 0 && (!best || c.clients > best->clients)) best = &c;
  return best;
}

std::string admitted_text(const ControlRunFigures& f) {
  const ControlLoadStats& e = f.load.window_end;
  return fmt::format("{} of {} clients active at the window's start, {} at its end (refused {}, cut {}, failed {}, "
                     "never answered {})",
                     f.load.window_start.active, f.clients, e.active, e.refused, e.cut, e.connect_failures, e.pending);
}

void json_stats(JsonWriter& j, const ControlLoadStats& s) {
  j.begin_object();
  j.field("connects", s.connects).field("connect_failures", s.connect_failures).field("connect_retries", s.connect_retries);
  j.field("subscribed", s.subscribed).field("refused", s.refused).field("cut", s.cut).field("active", s.active);
  j.field("pending", s.pending);
  j.field("sent_subscribe", s.sent_subscribe).field("sent_status", s.sent_status);
  j.field("sent_retransmit", s.sent_retransmit).field("sent_snapshot", s.sent_snapshot);
  j.field("sent_session_query", s.sent_session_query).field("sent_bytes", s.sent_bytes).field("send_dropped", s.send_dropped);
  j.field("replies", s.replies).field("reply_bytes", s.reply_bytes).field("acks", s.acks);
  j.field("retransmit_replies", s.retransmit_replies).field("retransmitted_datagrams", s.retransmitted_datagrams);
  j.field("snapshot_data", s.snapshot_data).field("snapshot_done", s.snapshot_done);
  j.field("session_status", s.session_status).field("errors", s.errors).field("overloaded", s.overloaded);
  j.field("unexpected", s.unexpected).field("malformed", s.malformed);
  j.end_object();
}

}  // namespace

int control_load_child(const Settings& s, const RunSpec& spec, RunBoard& b) {
  ProcBoard& me = b.load;
  LoadFigures& f = b.load_figures;
  ControlLoadConfig cfg;
  cfg.address = b.control_address;
  if (cfg.address.empty()) return me.fail("the publisher published no control address");
  cfg.clients = spec.control_clients;
  cfg.channel = s.feed.channel;
  cfg.instruments = std::max<uint32_t>(1, s.pub.instruments);
  try {
    ControlLoad load(cfg);
    const uint64_t setup_by = monotonic_ns() + kLoadSetupNs;
    while (!load.settled() && monotonic_ns() < setup_by) {
      if (b.stopping()) return me.fail("aborted before the start");
      load.poll(monotonic_ns(), 1);
    }
    f.ready = load.stats();
    keep_problems(load, f);
    me.progress.store(load.stats().active, std::memory_order_relaxed);
    me.finish(ProcState::kReady);
    // Status reports go on meanwhile: the publisher primes with its clients there.
    if (!b.await_go([&](uint64_t now) { load.poll(now, 0); })) return me.fail("aborted before the start");
    uint64_t t0 = 0;
    while ((t0 = b.t0.load(std::memory_order_acquire)) == 0) {
      if (b.stopping()) return me.fail("aborted before the window");
      load.poll(monotonic_ns(), 1);
    }
    const uint64_t lo = t0 + spec.window.warmup_ns, hi = lo + spec.window.duration_ns;
    std::optional<UsageMark> u0;
    for (;;) {
      if (b.stopping()) return me.fail("aborted");
      const uint64_t now = monotonic_ns();
      if (!u0 && now >= lo) {
        u0 = usage_mark(nullptr);
        f.window_start = load.stats();
      }
      if (now >= hi) break;
      load.poll(now, 1);
      me.progress.store(load.stats().active, std::memory_order_relaxed);
    }
    f.usage = Usage::between(*u0, usage_mark(nullptr));
    f.window_end = load.stats();
    f.window_ns = hi - lo;
    while (monotonic_ns() < hi + kLingerNs && !b.stopping()) load.poll(monotonic_ns(), 1);
    keep_problems(load, f);
    load.close_all();
  } catch (const Error& e) {
    return me.fail(e.what());
  }
  me.set_outcome("ok");
  me.finish(ProcState::kDone);
  return 0;
}

void collect_control_metrics(Rep& rep) {
  auto& m = rep.metrics;
  auto put = [&](const std::string& k, double v) {
    if (!std::isnan(v)) m.emplace_back(k, v);
  };
  for (const auto& cp : rep.ctl) {
    const std::string k = fmt::format("control.{}", cp.clients);
    // Latency from the run with a spinning publisher.
    if (cp.lat.completed) {
      const Histogram h = merged_latency(cp.lat);
      if (h.count()) {
        put(k + ".one_way_ns.p50", static_cast<double>(h.percentile(50)));
        put(k + ".one_way_ns.p90", static_cast<double>(h.percentile(90)));
        put(k + ".one_way_ns.p99", static_cast<double>(h.percentile(99)));
        put(k + ".one_way_ns.p99.9", static_cast<double>(h.percentile(99.9)));
        put(k + ".one_way_ns.max", static_cast<double>(h.max()));
      }
      const Histogram& late = cp.lat.pub.lateness;
      if (late.count()) {
        put(k + ".pub_late_ns.p50", static_cast<double>(late.percentile(50)));
        put(k + ".pub_late_ns.p99", static_cast<double>(late.percentile(99)));
        put(k + ".pub_late_ns.p99.9", static_cast<double>(late.percentile(99.9)));
        put(k + ".pub_late_ns.max", static_cast<double>(late.max()));
      }
    }
    // CPU from the run whose publisher sleeps when nothing is due.
    if (cp.cost.completed) {
      const RunResult& r = cp.cost;
      put(k + ".pub_msgs_per_s", r.pub.rate);
      put(k + ".pub_cpu_ns_per_msg", cpu_ns_per_msg(r));
      put(k + ".pub_control_ns_per_msg", control_ns_per_msg(r));
      put(k + ".pub_data_path_ns_per_msg", cpu_ns_per_msg(r) - control_ns_per_msg(r));
      if (r.pub.usage.wall_ns) put(k + ".pub_cpu_pct", r.pub.usage.cpu_pct());
    }
    const RunResult& r = cp.lat;
    if (!r.completed || !r.control) continue;
    const ControlRunFigures& c = *r.control;
    put(k + ".pub_longest_control_poll_ns", static_cast<double>(c.pub.longest_poll_ns));
    put(k + ".pub_control_frames_per_s", r.pub.window_s > 0 ? static_cast<double>(c.pub.frames_window) / r.pub.window_s : std::nan(""));
    if (cp.clients == 0) continue;
    const double w = static_cast<double>(c.load.window_ns) / 1e9;
    put(k + ".admitted", static_cast<double>(c.load.window_end.active));
    put(k + ".load_requests_per_s", per_s(c.load.window_start.requests_sent(), c.load.window_end.requests_sent(), w));
    put(k + ".load_replies_per_s", per_s(c.load.window_start.replies, c.load.window_end.replies, w));
    if (c.load.usage.wall_ns) put(k + ".load_cpu_pct", c.load.usage.cpu_pct());
  }
  const ControlPoint* a = base_point(rep);
  const ControlPoint* b = loaded_point(rep);
  if (!a || !b) return;
  auto ratio = [&](const char* name, double x, double y) { put(std::string("control.ratio.") + name, y > 0 ? x / y : std::nan("")); };
  if (a->lat.completed && b->lat.completed) {
    const Histogram ha = merged_latency(a->lat), hb = merged_latency(b->lat);
    if (ha.count() && hb.count()) {
      ratio("p50", static_cast<double>(hb.percentile(50)), static_cast<double>(ha.percentile(50)));
      ratio("p99", static_cast<double>(hb.percentile(99)), static_cast<double>(ha.percentile(99)));
    }
    const Histogram &la = a->lat.pub.lateness, &lb = b->lat.pub.lateness;
    if (la.count() && lb.count()) {
      ratio("pub_late_p99", static_cast<double>(lb.percentile(99)), static_cast<double>(std::max<uint64_t>(1, la.percentile(99))));
      ratio("pub_late_p99.9", static_cast<double>(lb.percentile(99.9)), static_cast<double>(std::max<uint64_t>(1, la.percentile(99.9))));
    }
  }
  if (a->cost.completed && b->cost.completed) {
    ratio("pub_cpu_ns_per_msg", cpu_ns_per_msg(b->cost), cpu_ns_per_msg(a->cost));
    ratio("pub_data_path_ns_per_msg", cpu_ns_per_msg(b->cost) - control_ns_per_msg(b->cost),
          cpu_ns_per_msg(a->cost) - control_ns_per_msg(a->cost));
  }
}

void print_control(const Summary& S, const std::vector<Rep>& reps, const Plan& plan) {
  fmt::print("control plane @ {} msg/s offered, {}-byte messages, 1 latency subscriber, with 0 and {} control clients\n",
             rate_key(plan.control_rate), plan.message_bytes, plan.control_clients);
  fmt::print("  {:>7}  {:>33}  {:>23}  {:>11} {:>11} {:>7} {:>8} {:>9}\n", "", "one-way latency", "published late",
             "pub CPU", "of it", "pub", "control", "longest");
  fmt::print("  {:>7}  {:>8} {:>8} {:>8} {:>7}  {:>7} {:>7} {:>7}  {:>11} {:>11} {:>7} {:>8} {:>9}\n", "clients", "p50",
             "p99", "p99.9", "max", "p50", "p99", "p99.9", "per msg", "control", "CPU", "frames/s", "poll");
  for (const uint32_t n : {0u, plan.control_clients}) {
    const std::string k = fmt::format("control.{}", n);
    auto g = [&](const std::string& x) { return ns_str(S.median(k + "." + x)); };
    const double cpu = S.median(k + ".pub_cpu_pct"), frames = S.median(k + ".pub_control_frames_per_s");
    const std::string p50 = S.range(k + ".one_way_ns.p50", ns_str);
    const std::string ranges =
        p50.empty() ? "" : fmt::format("p50 {} p99 {} CPU {}", p50, S.range(k + ".one_way_ns.p99", ns_str),
                                       S.range(k + ".pub_cpu_ns_per_msg", ns_str));
    fmt::print("  {:>7}  {:>8} {:>8} {:>8} {:>7}  {:>7} {:>7} {:>7}  {:>11} {:>11} {:>7} {:>8} {:>9}  {}\n", n,
               g("one_way_ns.p50"), g("one_way_ns.p99"), g("one_way_ns.p99.9"), g("one_way_ns.max"), g("pub_late_ns.p50"),
               g("pub_late_ns.p99"), g("pub_late_ns.p99.9"), g("pub_cpu_ns_per_msg"), g("pub_control_ns_per_msg"),
               std::isnan(cpu) ? "-" : fmt::format("{:.1f} %", cpu), std::isnan(frames) ? "-" : fmt::format("{:.0f}", frames),
               g("pub_longest_control_poll_ns"), ranges);
  }
  const auto x = [](double v) { return std::isnan(v) ? std::string("-") : fmt::format("{:.2f}x", v); };
  fmt::print("  with {} clients / without: one-way p50 {} {}, p99 {} {}; published late p99 {} {}, p99.9 {}; publisher "
             "CPU per message {} {} (outside control polls {})\n",
             plan.control_clients, x(S.median("control.ratio.p50")), S.range("control.ratio.p50", x),
             x(S.median("control.ratio.p99")), S.range("control.ratio.p99", x), x(S.median("control.ratio.pub_late_p99")),
             S.range("control.ratio.pub_late_p99", x), x(S.median("control.ratio.pub_late_p99.9")),
             x(S.median("control.ratio.pub_cpu_ns_per_msg")), S.range("control.ratio.pub_cpu_ns_per_msg", x),
             x(S.median("control.ratio.pub_data_path_ns_per_msg")));
  // What the clients did and what the publisher counted, in the first run.
  const ControlPoint* loaded = nullptr;
  size_t run = 0;
  while (run < reps.size() && !((loaded = loaded_point(reps[run])) && loaded->lat.control)) ++run;
  if (run == reps.size()) {
    fmt::print("  the run with clients did not complete: see the warnings\n\n");
    return;
  }
  const RunResult& lat = loaded->lat;
  const ControlRunFigures& c = *lat.control;
  const LoadFigures& l = c.load;
  const double w = static_cast<double>(l.window_ns) / 1e9;
  const ControlLoadStats& a = l.window_start;
  const ControlLoadStats& e = l.window_end;
  fmt::print("  load client: {}{}\n", admitted_text(c), c.all_admitted() ? ", all through the window" : "");
  fmt::print("    in the window: {:.0f} status reports/s, {:.0f} retransmit requests/s, {:.0f} snapshot requests/s, "
             "{:.0f} session queries/s; {:.0f} replies/s ({} over budget), {} frames dropped on full sockets\n",
             per_s(a.sent_status, e.sent_status, w), per_s(a.sent_retransmit, e.sent_retransmit, w),
             per_s(a.sent_snapshot, e.sent_snapshot, w), per_s(a.sent_session_query, e.sent_session_query, w),
             per_s(a.replies, e.replies, w), e.overloaded - a.overloaded, e.send_dropped);
  fmt::print("    its CPU {:.1f} % on CPU {}{}\n", l.usage.cpu_pct(), c.load_cpu,
             c.load_shares_cpu ? ", shared with the latency subscriber" : " (its own)");
  for (const auto& p : l.problems)
    if (p[0]) fmt::print("    ! {}\n", p);
  const PublisherControlFigures& p = c.pub;
  if (p.measured) {
    fmt::print("  publisher as the window closed: {} control connections open, {} subscribed (control.max_clients {}{}); "
               "refused {}, refused at admission {}, un-admitted evicted {}, cut {}, accept failures {}\n",
               p.clients_open, p.subscribed, p.max_clients,
               c.max_clients_raised ? fmt::format(", raised for the {} clients and the bench's subscriber", c.clients) : "",
               p.refused, p.refused_admission, p.evicted_unadmitted, p.cut, p.accept_failures);
    fmt::print("    in the window: {:.0f} control frames/s in {:.0f} control polls/s, the longest poll {}\n",
               lat.pub.window_s > 0 ? static_cast<double>(p.frames_window) / lat.pub.window_s : 0.0,
               lat.pub.window_s > 0 ? static_cast<double>(p.polls_window) / lat.pub.window_s : 0.0,
               ns_str(static_cast<double>(p.longest_poll_ns)));
  }
  if (const ControlRunFigures* k = loaded->cost.control ? &*loaded->cost.control : nullptr)
    fmt::print("  CPU run: {}{}\n", admitted_text(*k), k->all_admitted() ? ", all through the window" : "");
  fmt::print("  (medians; [min-max] of one-way p50, p99 and CPU per message over the runs. The clients' and the "
             "publisher's lines: run {}'s latency run. One-way latency and published late (how long after its place on "
             "the timeline a message left): the latency run, its publisher spinning; pub CPU per msg, of it control (the "
             "time in control polls), pub CPU: a second run of the same feed whose publisher sleeps between 1 ms "
             "bursts; control frames/s and the longest control poll: the latency run's window)\n\n",
             run + 1);
}

void control_warnings(const Rep& rep, size_t ncpus, std::vector<std::string>& out) {
  for (const auto& cp : rep.ctl)
    for (const auto& [what, r] : {std::pair{"latency", &cp.lat}, std::pair{"CPU", &cp.cost}}) {
      if (!r->control) continue;
      const ControlRunFigures& c = *r->control;
      if (!c.load_ok && !c.load_outcome.empty() && c.load_outcome != "ok")
        out.push_back(fmt::format("control {} ({} run): the load client: {}", cp.clients, what, c.load_outcome));
      if (r->completed && !c.all_admitted())
        out.push_back(fmt::format("control {} ({} run): not every client was admitted throughout: {}{}{}", cp.clients,
                                  what, admitted_text(c), c.load.problems[0][0] ? ": " : "", c.load.problems[0]));
      if (c.load_shares_cpu && r == &cp.lat)
        out.push_back(fmt::format("control {}: the load client has no CPU of its own ({} CPUs; it ran on CPU {} with "
                                  "the latency subscriber): latency with clients includes its wake-ups, the "
                                  "publisher's CPU per message does not; --cpus with a third CPU separates them",
                                  cp.clients, ncpus, c.load_cpu));
    }
}

void json_control(JsonWriter& j, const ControlRunFigures& f) {
  j.begin_object();
  j.field("clients", f.clients).field("load_ok", f.load_ok).field("load_outcome", f.load_outcome);
  j.field("all_admitted_through_window", f.all_admitted());
  j.field("load_cpu", f.load_cpu).field("load_shares_cpu", f.load_shares_cpu);
  j.field("max_clients_raised", f.max_clients_raised);
  j.key("load").begin_object();
  j.field("window_seconds", static_cast<double>(f.load.window_ns) / 1e9).field("cpu_pct", f.load.usage.cpu_pct());
  j.key("ready");
  json_stats(j, f.load.ready);
  j.key("window_start");
  json_stats(j, f.load.window_start);
  j.key("window_end");
  json_stats(j, f.load.window_end);
  j.key("problems").begin_array();
  for (const auto& p : f.load.problems)
    if (p[0]) j.value(std::string_view(p));
  j.end_array();
  j.end_object();
  const PublisherControlFigures& p = f.pub;
  j.key("publisher").begin_object();
  j.field("measured", p.measured).field("max_clients", p.max_clients).field("clients_open", p.clients_open);
  j.field("subscribed", p.subscribed).field("accepted", p.accepted).field("refused", p.refused);
  j.field("refused_admission", p.refused_admission).field("evicted_unadmitted", p.evicted_unadmitted);
  j.field("accept_failures", p.accept_failures).field("cut", p.cut);
  j.field("frames_in_window", p.frames_window).field("polls_in_window", p.polls_window);
  j.field("status_reports", p.status_reports).field("retransmit_requests", p.retransmit_requests);
  j.field("snapshot_requests", p.snapshot_requests).field("session_queries", p.session_queries);
  j.field("overloaded", p.overloaded).field("longest_poll_ns", p.longest_poll_ns);
  j.end_object();
  j.end_object();
}

}  // namespace mdcast::app::bench
