// mdcast-verbs-probe: a small driver of the verbs medium, and the runnable
// example of its API (see mdcast/media/verbs/verbs_medium.hpp).
//
//   mdcast-verbs-probe info
//       devices, ports, MTU, multicast limits, RoCE IPv4 addresses (exit 77: no device)
//   mdcast-verbs-probe publish --local-ip 10.77.0.1 [--subscribers 3] [--messages N] [--rate msg/s] ...
//       waits for N subscribed control clients, publishes a synthetic feed,
//       ends the session, serves retransmits until every subscriber left
//   mdcast-verbs-probe subscribe --local-ip 10.77.0.1 --control-ip 10.77.0.1 [--drop-every N] ...
//       receives until the session ended and everything is delivered, then
//       checks the books against a local replay of the same seed
//   mdcast-verbs-probe forge --local-ip 10.77.0.1 --group G --session HEX --from-sequence S [--count N]
//       a sender on the group that is not the publisher: N datagrams without
//       a tag, then N with a tag no key made, of that session and channel
//
// Both write `--result FILE` (key value lines: verdict and every counter) for
// the system tests, and exit 0 on success, 1 on a failed check, 2 on error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"
#include "mdcast/wire/datagram.hpp"
#include "verbs_test_util.hpp"

namespace mv = mdcast::media::verbs;
namespace tv = mdcast::test::verbs;
using namespace mdcast;

namespace {

template <class C>
void put_counters(std::map<std::string, std::string>& kv, const std::string& prefix, const C& c) {
  for (size_t i = 0; i < C::kCount; ++i) kv[prefix + std::string(C::kInfo[i].name)] = std::to_string(c.at(i).get());
}

// The library's enumeration (the one `mdcast doctor` reads): one line per port.
int info() {
  if (!mv::rdma_device_present()) {
    std::puts("no RDMA device (/sys/class/infiniband is empty); `mdcast doctor` explains Soft-RoCE");
    return 77;
  }
  for (const auto& p : mv::query_ports()) {
    if (!p.error.empty()) {
      fmt::print("{} port {}: {}\n", p.info.name, p.info.port, p.error);
      continue;
    }
    fmt::print("{} (max_mtu {}, lid {}, sm_lid {}, fw {})\n", p.info.describe(), p.max_mtu_bytes, p.lid, p.sm_lid,
               p.fw_ver);
  }
  for (const auto& a : mv::local_addresses())
    fmt::print("  {} port {} gid {}: {} (RoCE v2)\n", a.device, a.port, a.gid_index, a.ip);
  return 0;
}

struct Common {
  mv::Options o;
  media::fault::FaultProfile loss;  // subscriber: injected into sequenced datagrams
  tv::Scenario sc;
  std::string result;
  double timeout_s = 120;
  std::string join = "send-only";
  bool no_read = false;
};

void add_common(CLI::App* app, Common& c) {
  app->add_option("--local-ip", c.o.local_ip, "local address on the RDMA netdev");
  app->add_option("--device", c.o.device, "RDMA device (derives --local-ip from its GID)");
  app->add_option("--group", c.o.group_ip, "multicast group");
  app->add_option("--control-port", c.o.control_port, "control port");
  app->add_option("--qkey", c.o.qkey, "QKey of the group");
  app->add_option("--messages", c.sc.messages, "messages in the feed");
  app->add_option("--seed", c.sc.seed, "generator seed");
  app->add_option("--instruments", c.sc.instruments, "instruments");
  app->add_option("--result", c.result, "write key/value results here");
  app->add_option("--timeout", c.timeout_s, "give up after this many seconds");
  app->add_flag("--no-read", c.no_read, "no RDMA READ retransmission (RC only)");
}

int publish(Common& c, uint32_t want_subscribers, double rate, double linger_s) {
  std::map<std::string, std::string> kv;
  c.o.rdma_read = !c.no_read;
  c.o.join = c.join == "full" ? mv::JoinMode::kFull : mv::JoinMode::kSendOnly;
  c.o.retransmit_bytes = 16u << 20;
  mv::PublisherMedium medium(c.o);
  auto pc = tv::publisher_config(c.sc, medium.max_datagram());
  if (rate > 0) pc.pacing = {feed::PacingMode::kFixed, rate, 200, 10'000, 2 * kNsPerSec};
  feed::PublisherAgent<mv::PublisherMedium> agent(medium, pc);
  const uint64_t t0 = monotonic_ns();
  const uint64_t deadline = t0 + static_cast<uint64_t>(c.timeout_s * 1e9);
  std::string verdict = "PASS", reason;

  while (agent.subscribed_clients() < want_subscribers) {
    const uint64_t now = monotonic_ns();
    agent.do_work(now);
    if (now > deadline) {
      verdict = "FAIL";
      reason = fmt::format("only {} of {} subscribers arrived", agent.subscribed_clients(), want_subscribers);
      break;
    }
  }
  const uint64_t t_start = monotonic_ns();
  book::Generator gen(tv::generator_config(c.sc));
  wire::Message m;
  bool pending = false;
  for (uint64_t i = 0; verdict == "PASS" && i < c.sc.messages;) {
    const uint64_t now = monotonic_ns();
    if (!pending) gen.next(m);
    const auto r = agent.publish(m, now);
    if (r == feed::PublishResult::kOk) {
      pending = false;
      ++i;
    } else if (r == feed::PublishResult::kBackPressured) {
      pending = true;
    } else {
      verdict = "FAIL";
      reason = "the book refused a generated message";
    }
    agent.do_work(now);
    if (now > deadline) {
      verdict = "FAIL";
      reason = "timed out publishing";
    }
  }
  const uint64_t t_published = monotonic_ns();
  // End the session, then serve retransmits until every subscriber is done
  // (they disconnect) - re-announcing the end in case a heartbeat was lost.
  uint64_t last_end = 0;
  bool ended = false;
  const uint64_t linger_end = monotonic_ns() + static_cast<uint64_t>(linger_s * 1e9);
  for (;;) {
    const uint64_t now = monotonic_ns();
    agent.do_work(now);
    if (now - last_end > 50 * kNsPerMs) {
      ended = agent.end_session(now) || ended;
      last_end = now;
    }
    if (ended && agent.clients() == 0) break;
    if (now > linger_end || now > deadline) {
      if (agent.clients()) reason += fmt::format(" ({} subscribers still connected at the end)", agent.clients());
      break;
    }
  }
  kv["verdict"] = verdict;
  kv["reason"] = reason.empty() ? "-" : reason;
  kv["device"] = medium.device().name;
  kv["max_datagram"] = std::to_string(medium.max_datagram());
  kv["max_mcast_grp"] = std::to_string(medium.device().max_mcast_grp);
  kv["max_mcast_qp_attach"] = std::to_string(medium.device().max_mcast_qp_attach);
  kv["global_checksum"] = fmt::format("{:x}", agent.core().books().global_checksum());
  kv["publish_seconds"] = fmt::format("{:.2f}", static_cast<double>(t_published - t_start) / 1e9);
  kv["total_seconds"] = fmt::format("{:.2f}", static_cast<double>(monotonic_ns() - t0) / 1e9);
  put_counters(kv, "pub.", agent.core().counters());
  put_counters(kv, "ctl.", agent.control().counters());
  put_counters(kv, "sink.", medium.sink().counters());
  put_counters(kv, "server.", medium.server().counters());
  if (!c.result.empty()) tv::write_result(c.result, kv);
  fmt::print("publisher: {} {} - {} datagrams, {} messages in {}s; loopback {}; retransmits over RC {}, clients cut {}\n",
             verdict, reason, kv["pub.datagrams_sent"], kv["pub.messages_published"], kv["publish_seconds"],
             kv["sink.loopback_received"], kv["ctl.retransmit_requests"],
             medium.server().counters().cut_slow.get() + medium.server().counters().cut_malformed.get());
  return verdict == "PASS" ? 0 : 1;
}

int subscribe(Common& c) {
  std::map<std::string, std::string> kv;
  c.o.rdma_read = !c.no_read;
  c.loss.sequenced_only = true;
  mv::SubscriberMedium medium(c.o);
  media::fault::FaultyMedium<mv::SubscriberMedium> faulty(medium, c.loss);
  const auto scfg = tv::subscriber_config(c.sc, 0);
  tv::Recorder rec(scfg.books.max_instruments);
  using Agent = feed::SubscriberAgent<media::fault::FaultyMedium<mv::SubscriberMedium>, tv::Recorder>;
  Agent agent(faulty, scfg, rec, nullptr, {100 * kNsPerUs, c.o.adaptive ? IdleMode::kBlock : IdleMode::kSpin});
  const auto& sub = agent.subscriber();
  const uint64_t t0 = monotonic_ns();
  const uint64_t deadline = t0 + static_cast<uint64_t>(c.timeout_s * 1e9);
  std::string verdict = "PASS", reason;
  struct Hooks {
    uint64_t deadline;
    bool on_control_round(uint64_t now) const noexcept { return now <= deadline; }
  } hooks{deadline};
  agent.start();
  if (!agent.run(hooks)) {
    verdict = "FAIL";
    reason = fmt::format("timed out: next {} highest {} session_ended {}", sub.next_sequence(), sub.highest_sequence(),
                         sub.session_ended());
  }
  const uint64_t t1 = monotonic_ns();
  if (verdict == "PASS") {
    const tv::Expected e = tv::replay(c.sc);
    reason = tv::verify(e, rec, sub.books());
    if (!reason.empty()) verdict = "FAIL";
    kv["expected_checksum"] = fmt::format("{:x}", e.global_checksum);
  }
  kv["verdict"] = verdict;
  kv["reason"] = reason.empty() ? "-" : reason;
  kv["global_checksum"] = sub.books() ? fmt::format("{:x}", sub.books()->global_checksum()) : "-";
  kv["delivered_messages"] = std::to_string(rec.delivered);
  kv["recovered_messages"] = std::to_string(rec.recovered);
  kv["seconds"] = fmt::format("{:.2f}", static_cast<double>(t1 - t0) / 1e9);
  kv["receive_ring"] = std::to_string(medium.receiver().ring_size());
  kv["data_silent"] = medium.data_silent() ? "1" : "0";
  put_counters(kv, "sub.", sub.counters());
  put_counters(kv, "rx.", medium.receiver().counters());
  put_counters(kv, "client.", medium.control().counters());
  put_counters(kv, "fault.", faulty.counters());
  kv["fault.injected_drops"] = std::to_string(media::fault::injected_losses(faulty.counters()));
  if (!c.result.empty()) tv::write_result(c.result, kv);
  fmt::print("subscriber: {} {} - {} messages ({} recovered), {} datagrams, {} gaps; injected drops {}; "
             "READ {} requests/{} datagrams, RC retransmit requests {}; snapshots {}\n",
             verdict, kv["reason"], rec.delivered, rec.recovered, kv["rx.datagrams"], kv["sub.gaps"],
             kv["fault.injected_drops"], kv["client.read_requests"], kv["client.read_validated"],
             kv["client.rc_retransmit_requests"], kv["sub.snapshots_applied"]);
  return verdict == "PASS" ? 0 : 1;
}

// Datagrams that validate (header only, no messages) and claim the feed's
// session and channel, so that only the tag check can tell them apart: a
// subscriber that authenticates counts them as sub.untagged and sub.bad_tags.
int forge(Common& c, uint64_t session, uint64_t from, uint32_t count) {
  c.o.join = mv::JoinMode::kSendOnly;
  c.o.retransmit_bytes = 1u << 20;
  c.o.signal_every = 1;  // every send completes on its own: exit only once all are out
  mv::VerbsSink sink(c.o);
  auto datagram = [&](uint64_t seq, bool tagged) {
    std::vector<std::byte> d(wire::dgram::kHeaderSize + (tagged ? wire::dgram::kTagSize : 0));
    wire::DatagramHeader h;
    h.flags = tagged ? wire::kFlagTag : 0;
    h.channel = c.o.channel;
    h.session = session;
    h.sender = 0x4647;
    h.sequence = seq;
    h.length = static_cast<uint16_t>(d.size());
    wire::write_header(d.data(), h);
    return d;  // a tagged one's trailer stays zero: no key made it
  };
  for (int tagged = 0; tagged < 2; ++tagged)
    for (uint64_t seq = from; seq < from + count; ++seq) {
      const auto d = datagram(seq, tagged != 0);
      while (sink.send(d, seq) != media::SendResult::kSent) {
        if (sink.failed()) throw Error("the forger's send queue failed: " + sink.failure());
        sink.reap();
      }
    }
  const uint64_t deadline = monotonic_ns() + 5 * kNsPerSec;
  while (sink.counters().completions.get() < sink.counters().datagrams_posted.get() && monotonic_ns() < deadline)
    sink.reap();
  fmt::print("forged: {} untagged and {} with a wrong tag, session {:016x}, sequences {}..{}, group {} on {}\n", count,
             count, session, from, from + count - 1, c.o.group_ip, sink.device().name);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mdcast-verbs-probe: drive the verbs medium (UD multicast data, RC control, RDMA READ retransmits)"};
  app.require_subcommand(1);
  app.add_subcommand("info", "RDMA devices, ports, limits and RoCE addresses");
  Common pc, sc;
  uint32_t subscribers = 1;
  double rate = 20'000, linger = 60;
  auto* p = app.add_subcommand("publish", "publish a synthetic feed");
  add_common(p, pc);
  p->add_option("--subscribers", subscribers, "wait for this many subscribers before publishing");
  p->add_option("--rate", rate, "messages/s (0: unpaced)");
  p->add_option("--linger", linger, "seconds to serve retransmits after the end");
  p->add_option("--join", pc.join, "send-only | full")->check(CLI::IsMember({"send-only", "full"}));
  p->add_option("--max-datagram", pc.o.max_datagram, "datagram size (0: the active MTU)");
  auto* s = app.add_subcommand("subscribe", "subscribe, receive, verify");
  add_common(s, sc);
  s->add_option("--control-ip", sc.o.control_ip, "the publisher's control address")->required();
  s->add_option("--drop-every", sc.loss.drop_every, "inject: drop every Nth sequenced datagram");
  s->add_option("--burst-after", sc.loss.burst_start, "inject: a burst after this many datagrams");
  s->add_option("--burst-length", sc.loss.burst_length, "inject: burst length");
  s->add_option("--rate", sc.o.rate, "peak datagrams/s (sizes the receive ring)");
  s->add_flag("--adaptive", sc.o.adaptive, "sleep on the completion channel when idle");
  Common fc;
  std::string forge_session;
  uint64_t forge_from = 1;
  uint32_t forge_count = 50;
  auto* f = app.add_subcommand("forge", "send datagrams of a session without its key's tags");
  add_common(f, fc);
  f->add_option("--session", forge_session, "the session they claim (hex, as mdcast publish prints it)")->required();
  f->add_option("--from-sequence", forge_from, "first sequence number")->check(CLI::PositiveNumber);
  f->add_option("--count", forge_count, "datagrams of each kind");
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("info")) return info();
    if (!mv::rdma_device_present()) {
      std::puts("no RDMA device (/sys/class/infiniband is empty)");
      return 77;
    }
    if (app.got_subcommand("publish")) return publish(pc, subscribers, rate, linger);
    if (app.got_subcommand("forge")) return forge(fc, std::stoull(forge_session, nullptr, 16), forge_from, forge_count);
    return subscribe(sc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mdcast-verbs-probe: %s\n", e.what());
    std::map<std::string, std::string> kv{{"verdict", "ERROR"}, {"reason", e.what()}};
    const std::string& r = app.got_subcommand("publish") ? pc.result : sc.result;
    if (!r.empty()) tv::write_result(r, kv);
    return 2;
  }
}
