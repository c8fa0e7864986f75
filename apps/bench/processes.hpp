// The parent's side of one `mdcast bench` run, for any medium: fork the
// publisher and N subscribers (pinned), wait until each is ready, start the
// timeline, supervise, and gather their boards into a RunResult. A medium
// passes its registry entry and what it adds per datagram; the bodies the
// children run are feed_children.hpp's templates, so nothing here is
// medium-specific.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control_bench.hpp"
#include "feed_children.hpp"
#include "medium.hpp"
#include "supervise.hpp"
#include "measure/child_process.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "runners.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

inline double cpu_seconds(const rusage& ru) noexcept {
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// What one run of the mdcast processes is told beyond the bench's settings:
// a feed name of its own, "bench-<pid>-<run>" (the shm bench finds the rings
// of a bench killed with kill -9 by it), the control address that name
// derives, a fresh session, no injected loss.
inline Settings run_settings(const Settings& base, uint32_t run) {
  Settings s = base;
  s.feed.name = fmt::format("bench-{}-{}", ::getpid(), run);
  s.feed.control.clear();
  s.sub.inject_loss = 0;
  s.pub.session = 0;
  s.pub.session = pick_session(s);
  return s;
}

// Where a relay of the run republishes (RunSpec::relay): a feed name of its
// own (its shm ring and control socket), the group of the feed's channel
// index 1 (UDP, verbs) and a control port beside the publisher's; the wire
// channel is the publisher's.
template <class Entry>
Settings relay_settings(const Settings& s) {
  Settings r = channel_settings<Entry>(s, 1);
  r.feed.channel = s.feed.channel;
  r.feed.channel_index = 0;
  r.feed.name = s.feed.name + "-relay";
  r.udp.control_port = 0;  // any free one: subscribers follow the relay's announcement
  if (r.verbs.control_port) r.verbs.control_port = static_cast<uint16_t>(r.verbs.control_port + 1);
  return r;
}

// s: the run's settings (run_settings()).
// setup_ns: how long a child may take to become ready (joining a multicast
// group and connecting the control plane take longer on RDMA than on shm).
template <class Entry>
RunResult run_feed_processes(const Settings& run_s, const RunSpec& spec, const Placement& where,
                             size_t medium_overhead_per_datagram, Progress& p, uint64_t setup_ns = 30 * kNsPerSec) {
  RunResult res;
  if (spec.subscribers == 0 || spec.subscribers > RunBoard::kMaxSubscribers)
    fail("{} subscribers: the bench runs 1 to {}", spec.subscribers, RunBoard::kMaxSubscribers);
  // Control clients are subscribers too: the publisher's cap on admitted
  // clients has to hold them and the bench's own (said in the report).
  Settings s = run_s;
  if (spec.control_clients || spec.control_figures) res.control.emplace();
  if (spec.control_clients) {
    if constexpr (!requires(typename Entry::Publisher& m) { m.server().address(); })
      fail("--control-clients: the {} medium's control plane is not a stream socket; the load client speaks the "
           "shm medium's Unix socket and UDP's TCP port",
           Entry::kName);
    res.control->clients = spec.control_clients;
    const size_t need = size_t{spec.control_clients} + spec.subscribers;
    if (s.control_server.max_clients < need) {
      s.control_server.max_clients = need;
      res.control->max_clients_raised = true;
    }
    // They all come from this host: over TCP one peer (one address).
    if (s.control_server.max_clients_per_peer && s.control_server.max_clients_per_peer < need)
      s.control_server.max_clients_per_peer = need;
  }
  res.busy_processes =
      (spec.pub_idle == IdleMode::kSpin ? 1u : 0u) + (spec.sub_idle == IdleMode::kSpin ? spec.subscribers : 0u);
  Shared<RunBoard> b;

  std::vector<ChildProcess> kids;
  auto setup_failed = [&](const ProcBoard& pb, ChildProcess& k) -> std::string {
    if (pb.get() == ProcState::kFailed) return fmt::format("{}: {}", k.label(), pb.outcome);
    if (k.poll()) return fmt::format("{} exited during setup (status {})", k.label(), k.status());
    return fmt::format("{} not ready within {} s", k.label(), setup_ns / kNsPerSec);
  };
  auto await_ready = [&](ProcBoard& pb, ChildProcess& k) -> bool {
    const uint64_t by = monotonic_ns() + setup_ns;
    while (pb.get() == ProcState::kStarting) {
      if (k.poll() || g_stop.requested() || monotonic_ns() > by) return false;
      sleep_ns(kNsPerMs);
    }
    return pb.get() == ProcState::kReady;
  };
  kids.push_back(ChildProcess::spawn("publisher", where.cpu_for(0), [&] {
    auto medium = Entry::publisher(s, s.pub.session);
    return bench_publisher(s, *medium, spec, *b);
  }));
  if (!await_ready(b->pub, kids[0])) {
    b->abort = 1;
    res.error = setup_failed(b->pub, kids[0]);
    return res;
  }
  // A relay (its own CPU, after the subscribers'), ready before its subscriber starts.
  const Settings rs = spec.relay ? relay_settings<Entry>(s) : s;
  std::optional<size_t> relay_kid;
  if (spec.relay) {
    relay_kid = kids.size();
    kids.push_back(ChildProcess::spawn("relay", where.cpu_for(spec.subscribers + 1), [&] {
      auto up = Entry::subscriber(s);
      auto down = Entry::publisher(rs, rs.pub.session);
      return bench_relay(s, rs, *up, *down, spec, *b, b->relay);
    }));
    if (!await_ready(b->relay, kids.back())) {
      b->abort = 1;
      res.error = setup_failed(b->relay, kids.back());
      return res;
    }
  }
  const size_t first_sub = kids.size();
  for (uint32_t i = 0; i < spec.subscribers; ++i) {
    const bool relayed = spec.relay && i + 1 == spec.subscribers;
    kids.push_back(ChildProcess::spawn(fmt::format("subscriber {}{}", i + 1, relayed ? " (through the relay)" : ""),
                                       where.cpu_for(i + 1), [&, i, relayed] {
                                         auto medium = Entry::subscriber(relayed ? rs : s);
                                         return bench_subscriber(relayed ? rs : s, *medium, spec, *b, b->subs[i]);
                                       }));
  }
  for (uint32_t i = 0; i < spec.subscribers; ++i)
    if (!await_ready(b->subs[i], kids[first_sub + i])) {
      b->abort = 1;
      res.error = setup_failed(b->subs[i], kids[first_sub + i]);
      return res;
    }
  if (spec.control_clients) {
    // A CPU of its own when there is one; else the last subscriber's (the
    // publisher's stays the publisher's).
    const bool own = where.cpus.size() > size_t{spec.subscribers} + 1;
    res.control->load_cpu = where.cpu_for(own ? spec.subscribers + 1 : spec.subscribers);
    res.control->load_shares_cpu = !own;
    kids.push_back(ChildProcess::spawn("control load", res.control->load_cpu,
                                       [&] { return control_load_child(s, spec, *b); }));
    if (!await_ready(b->load, kids.back())) {
      b->abort = 1;
      res.error = setup_failed(b->load, kids.back());
      return res;
    }
  }

  const uint64_t total = spec.window.warmup_ns + spec.window.duration_ns;
  // Priming, the timeline, then draining and recovery: generous, it only
  // matters when something is stuck.
  b->deadline = monotonic_ns() + total + 60 * kNsPerSec;
  b->go.store(1, std::memory_order_release);
  const bool finished = supervise(kids, b->t0, total, b->deadline.load() + 2 * kNsPerSec, b->abort, p, [&] {
    uint64_t lo = UINT64_MAX;
    for (uint32_t i = 0; i < spec.subscribers; ++i) lo = std::min(lo, b->subs[i].progress.load());
    return fmt::format("published {:.2f} M, delivered {:.2f} M", static_cast<double>(b->pub.progress.load()) / 1e6,
                       static_cast<double>(lo) / 1e6);
  });

  const ProcBoard& pb = b->pub;
  res.pub.ok = pb.get() == ProcState::kDone;
  res.pub.outcome = pb.outcome;
  res.pub.published = pb.total;
  res.pub.window_messages = pb.window_messages;
  res.pub.window_datagrams = pb.window_datagrams;
  res.pub.window_bytes = pb.window_bytes;
  res.pub.window_medium_bytes = pb.window_bytes + pb.window_datagrams * medium_overhead_per_datagram;
  res.pub.window_cpu_ns = pb.window_cpu_ns;
  res.pub.window_control_ns = pb.window_control_ns;
  res.pub.window_s = static_cast<double>(pb.window_ns) / 1e9;
  res.pub.rate = res.pub.window_s > 0 ? static_cast<double>(pb.window_messages) / res.pub.window_s : 0;
  res.pub.preempted = kids[0].usage().ru_nivcsw;
  res.pub.usage = pb.usage;
  res.pub.lateness = pb.latency;
  res.pub.perf_why = pb.perf_why;
  res.pub.ring_slot_bytes = pb.ring_slot_bytes;
  res.pub.ring_swept = pb.ring_swept;
  res.pub.ring_pages_4k = pb.ring_pages_4k;
  res.pub.ring_page_bytes = pb.ring_page_bytes;
  res.pub.ring_pages_kernel = pb.ring_pages_kernel;
  for (uint32_t i = 0; i < spec.subscribers; ++i) {
    const ProcBoard& sb = b->subs[i];
    SubscriberResult r;
    r.ok = sb.get() == ProcState::kDone;
    r.outcome = sb.get() == ProcState::kStarting || sb.get() == ProcState::kReady
                    ? fmt::format("ended without a result (status {})", kids[first_sub + i].status())
                    : std::string(sb.outcome);
    r.delivered = sb.total;
    r.rx_window = sb.window_messages;
    r.rate = sb.window_ns ? static_cast<double>(sb.window_messages) * 1e9 / static_cast<double>(sb.window_ns) : 0;
    r.latency = sb.latency;
    r.lapped = sb.lapped;
    r.kernel_drops = sb.kernel_drops;
    r.gaps = sb.gaps;
    r.recovered = sb.recovered;
    r.retransmit_requests = sb.retransmit_requests;
    r.snapshots = sb.snapshots;
    r.malformed = sb.malformed;
    r.duplicates = sb.duplicates;
    r.preempted = kids[first_sub + i].usage().ru_nivcsw;
    r.cpu_s = cpu_seconds(kids[first_sub + i].usage());
    r.usage = sb.usage;
    r.perf_why = sb.perf_why;
    res.subs.push_back(std::move(r));
  }
  if (relay_kid) {
    const ProcBoard& rb = b->relay;
    RelayFigures f;
    f.ok = rb.get() == ProcState::kDone;
    f.outcome = rb.outcome;
    f.forwarded = rb.total;
    f.window_messages = rb.window_messages;
    f.window_cpu_ns = rb.window_cpu_ns;
    f.renumbered = rb.malformed;
    f.gaps = rb.gaps;
    f.recovered = rb.recovered;
    f.cpu_s = cpu_seconds(kids[*relay_kid].usage());
    res.relay = f;
  }
  if (res.control) {
    res.control->load_ok = spec.control_clients == 0 || b->load.get() == ProcState::kDone;
    res.control->load_outcome = spec.control_clients ? std::string(b->load.outcome) : "";
    res.control->load = b->load_figures;
    res.control->pub = b->pub_control;
  }
  res.completed = finished;
  if (!finished) res.error = g_stop.requested() ? "interrupted" : "timed out";
  else if (!res.pub.ok) res.error = "publisher: " + res.pub.outcome;
  return res;
}

}  // namespace mdcast::app::bench
