// The multi-process feed: one publisher process and three subscriber
// processes of mdcast-verbs-probe - one clean, one losing datagrams and
// recovering over RC only, one losing datagrams and recovering by RDMA READ.
// Each subscriber verifies its own books against a replay of the seed; the
// test then checks the verdicts and that the counters prove which path
// recovered what.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "verbs_proc.hpp"
#include "verbs_test_util.hpp"

namespace mdcast::test::verbs {

struct FeedSpec {
  std::string name;
  std::string pub_ip;
  std::string sub_ip;
  std::string group;
  uint16_t port;
  uint64_t messages = 30'000;
  double rate = 15'000;  // messages/s: gentle enough for four processes on two emulated CPUs
  int timeout_s = 240;
};

inline uint64_t num(const std::map<std::string, std::string>& kv, const std::string& k) {
  auto it = kv.find(k);
  return it == kv.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}

inline void run_feed(const FeedSpec& f) {
  const std::string dir = log_dir(f.name);
  const std::string port = std::to_string(f.port);
  const std::string msgs = std::to_string(f.messages);
  auto common = [&](std::vector<std::string> v, const std::string& ip, const std::string& res) {
    std::vector<std::string> c{"--local-ip", ip, "--group", f.group, "--control-port", port, "--messages", msgs,
                               "--result", dir + "/" + res, "--timeout", std::to_string(f.timeout_s - 20)};
    v.insert(v.end(), c.begin(), c.end());
    return v;
  };
  for (const char* r : {"publisher.res", "clean.res", "rc.res", "read.res"}) std::filesystem::remove(dir + "/" + r);
  Proc pub = spawn(dir, "publisher",
                   common({"publish", "--subscribers", "3", "--rate", fmt::format("{}", f.rate)}, f.pub_ip,
                          "publisher.res"));
  // Loss at the subscribers: every Nth completion thrown away, plus a burst.
  Proc clean = spawn(dir, "clean", common({"subscribe", "--control-ip", f.pub_ip}, f.sub_ip, "clean.res"));
  Proc rc = spawn(dir, "rc",
                  common({"subscribe", "--control-ip", f.pub_ip, "--no-read", "--drop-every", "23", "--burst-after",
                          "100", "--burst-length", "40"},
                         f.sub_ip, "rc.res"));
  Proc read = spawn(dir, "read",
                    common({"subscribe", "--control-ip", f.pub_ip, "--adaptive", "--drop-every", "17",
                            "--burst-after", "150", "--burst-length", "60"},
                           f.sub_ip, "read.res"));
  wait_all({&pub, &clean, &rc, &read}, f.timeout_s);

  const auto P = read_result(dir + "/publisher.res");
  const auto C = read_result(dir + "/clean.res");
  const auto R = read_result(dir + "/rc.res");
  const auto D = read_result(dir + "/read.res");
  auto show = [&](const char* who, const Proc& p, const std::map<std::string, std::string>& kv) {
    std::cout << fmt::format("  {:9} exit {} verdict {} {}\n", who, p.status,
                             kv.count("verdict") ? kv.at("verdict") : "(no result)",
                             kv.count("reason") ? kv.at("reason") : "")
              << tail(p.log, 4);
  };
  show("publisher", pub, P);
  show("clean", clean, C);
  show("rc", rc, R);
  show("read", read, D);

  ASSERT_EQ(pub.status, 0) << tail(pub.log, 40);
  for (auto* p : {&clean, &rc, &read}) EXPECT_EQ(p->status, 0) << p->name << ":\n" << tail(p->log, 40);
  ASSERT_EQ(P.at("verdict"), "PASS");

  // Every subscriber ends with the publisher's books (each checked them
  // instrument by instrument against a replay; here the global checksum).
  for (const auto* kv : {&C, &R, &D}) {
    ASSERT_TRUE(kv->count("verdict"));
    EXPECT_EQ(kv->at("verdict"), "PASS") << kv->at("reason");
    EXPECT_EQ(kv->at("global_checksum"), P.at("global_checksum"));
    EXPECT_EQ(num(*kv, "rx.imm_mismatch"), 0u);
    EXPECT_EQ(num(*kv, "sub.book_errors"), 0u);
    EXPECT_EQ(num(*kv, "sub.checksum_mismatch"), 0u);
  }

  // The publisher joined send-only and heard nothing of its own.
  EXPECT_EQ(num(P, "sink.send_only_join"), 1u);
  EXPECT_EQ(num(P, "sink.loopback_received"), 0u);
  EXPECT_EQ(num(P, "sink.post_send_errors"), 0u);
  EXPECT_EQ(num(P, "sink.completion_errors"), 0u);
  EXPECT_EQ(num(P, "server.ring_advertised"), 3u);

  // The clean subscriber lost nothing on purpose.
  EXPECT_EQ(num(C, "fault.injected_drops"), 0u);

  // RC path: gaps seen, recovered by the publisher's control service, no READ.
  // (The loss is injected behind the receiver, by the fault interceptor, so
  // the immediate data - which sees only the device's losses - saw none.)
  EXPECT_GE(num(R, "fault.injected_drops"), 40u);  // the burst alone
  EXPECT_GT(num(R, "sub.gaps"), 0u);
  EXPECT_GT(num(R, "sub.datagrams_recovered"), 0u);
  EXPECT_EQ(num(R, "client.read_requests"), 0u);
  EXPECT_GT(num(R, "client.rc_retransmit_requests"), 0u);
  EXPECT_GT(num(P, "ctl.retransmit_requests"), 0u);

  // READ path: gaps recovered from the publisher's registered ring.
  EXPECT_GE(num(D, "fault.injected_drops"), 60u);
  EXPECT_GT(num(D, "client.read_requests"), 0u);
  EXPECT_GT(num(D, "client.read_validated"), 0u);
  EXPECT_GE(num(D, "sub.datagrams_recovered"), num(D, "client.read_validated"));
  EXPECT_EQ(num(D, "client.read_errors"), 0u);
  // It ran adaptive: it slept on the completion channel while idle.
  EXPECT_GT(num(D, "rx.blocking_waits"), 0u);

  std::cout << fmt::format(
      "  publisher: {} datagrams ({} zero-copy, {} inline), {} messages in {} s; loopback {}; RC retransmit "
      "requests served {}\n",
      P.at("pub.datagrams_sent"), P.at("sink.zero_copy_sends"), P.at("sink.inline_sends"),
      P.at("pub.messages_published"), P.at("publish_seconds"), P.at("sink.loopback_received"),
      P.at("ctl.retransmit_requests"));
  for (const auto& [who, kv] : {std::pair{"clean", &C}, {"rc", &R}, {"read", &D}})
    std::cout << fmt::format(
        "  {:5}: {} datagrams, injected drops {}, imm-detected missing {}, gaps {}, recovered {} (READ: {} "
        "requests, {} datagrams, {} fallbacks; RC requests {}), snapshots {}, completion-channel waits {}, {} s\n",
        who, kv->at("rx.datagrams"), kv->at("fault.injected_drops"), kv->at("rx.imm_missing"), kv->at("sub.gaps"),
        kv->at("sub.datagrams_recovered"), kv->at("client.read_requests"), kv->at("client.read_validated"),
        kv->at("client.read_fallbacks"), kv->at("client.rc_retransmit_requests"), kv->at("sub.snapshots_applied"),
        kv->at("rx.blocking_waits"), kv->at("seconds"));
}

}  // namespace mdcast::test::verbs
