// ControlService: what a client may cost besides snapshots. The retransmit
// budget, coalesced retransmit storms, refusals that are not held against
// the client, the pacing floor, the configuration's validation, admission
// and the work report a transport reads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "auth_support.hpp"
#include "control_support.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/control_service.hpp"

namespace mdcast::test {
namespace {

using feed::ControlConfig;
using feed::ControlService;
using feed::PublisherConfig;
using feed::PublisherCore;
using namespace wire;

PublisherConfig big_ring() {
  auto c = pub_config();
  c.retransmit_bytes = 1u << 20;  // ~2000 datagrams
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ControlBudget, RetransmitsWithinTheClientsDatagramBudget) {
  ControlConfig cc;
  cc.retransmit_burst = 100;
  cc.retransmit_rate = 1000;  // one datagram per ms
  cc.max_errors_per_client = 2;
  World w(cc, big_ring());
  for (int i = 0; i < 300; ++i) {
    w.publish(w.add(1));
    w.commit();
  }
  w.subscribe(1);
  w.subscribe(2);
  w.out.clear();
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 1, 300}, 1));
  auto r = only<RetransmitReply>(w.out.to(1));
  ASSERT_EQ(r.datagrams.size(), 100u) << "the budget's worth: the client asks again for the rest";
  for (uint64_t s = 1; s <= 100; ++s) EXPECT_EQ(to_hex(r.datagrams[s - 1]), to_hex(w.core.datagram(s)));
  EXPECT_EQ(w.svc.counters().retransmit_partial.get(), 1u);
  w.out.clear();
  // The bucket is empty: refused, with when to retry, and never held
  // against the client (max_errors_per_client is 2).
  for (uint32_t i = 0; i < 50; ++i) ASSERT_TRUE(w.send(1, RetransmitRequest{900, 101, 200}, 10 + i));
  for (const auto& f : w.out.to(1)) {
    const auto* e = std::get_if<ErrorReply>(&f.body);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->code, ErrorCode::kOverloaded);
    EXPECT_NE(e->text.find("retry after 100 ms"), std::string::npos) << e->text;
  }
  EXPECT_EQ(w.svc.counters().requests_overloaded.get(), 50u);
  EXPECT_EQ(w.svc.counters().retransmit_requests.get(), 1u);
  // Hopeless requests cost a token too.
  w.out.clear();
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 5000, 1}, 70));
  EXPECT_TRUE(std::holds_alternative<ErrorReply>(w.out.to(1).at(0).body)) << "not yet, but not free either";
  // Another client has its own budget.
  w.out.clear();
  ASSERT_TRUE(w.send(2, RetransmitRequest{900, 1, 50}, 3));
  EXPECT_EQ(only<RetransmitReply>(w.out.to(2)).datagrams.size(), 50u);
  // Time refills it.
  w.out.clear();
  w.now += 50 * kNsPerMs;
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 101, 200}, 80));
  r = only<RetransmitReply>(w.out.to(1));
  EXPECT_EQ(r.datagrams.size(), 50u);
  EXPECT_EQ(to_hex(r.datagrams[0]), to_hex(w.core.datagram(101)));
  w.now += 10 * kNsPerSec;
  w.out.clear();
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 151, 100}, 81));
  EXPECT_EQ(only<RetransmitReply>(w.out.to(1)).datagrams.size(), 100u) << "refilled to the burst, no more";
}

// Many clients asking the same range in one poll: the ring is read once,
// each client gets its own copy with its own request id; a filtered client
// never gets an unfiltered copy, nor the reverse.
TEST(ControlBudget, RetransmitStormsAreCoalescedPerPollAndPerEntitlement) {
  ControlConfig cc;
  cc.secrets = test_secrets();  // "gold": everything; "silver": instruments 1 and 3
  World w(cc, big_ring());
  for (int i = 0; i < 60; ++i) {
    w.publish(w.add(static_cast<uint32_t>(i % 4)));
    if (i % 3 == 2) w.commit();
  }
  for (ClientId c = 1; c <= 10; ++c) {
    HandClient h;
    h.id = c;
    h.identity = c % 3 == 0 ? "silver" : "gold";
    h.key_seed = c % 3 == 0 ? 2 : 1;
    h.channel = w.core.config().channel;
    ASSERT_TRUE(h.authenticate(w.svc, w.out, w.now)) << h.identity;
    w.out.clear();  // the challenge (an authentication frame)
    w.subscribe(c);
  }
  w.out.clear();
  for (ClientId c = 1; c <= 10; ++c) ASSERT_TRUE(w.send(c, RetransmitRequest{900, 1, 20}, 500 + static_cast<uint32_t>(c)));
  EXPECT_GE(w.svc.counters().retransmit_coalesced.get(), 4u);
  std::string gold_body, silver_body;
  for (ClientId c = 1; c <= 10; ++c) {
    SCOPED_TRACE(c);
    const auto v = w.out.to(c);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].request_id, 500 + c);
    const auto& r = std::get<RetransmitReply>(v[0].body);
    ASSERT_EQ(r.datagrams.size(), 20u);
    const bool silver = c % 3 == 0;
    std::string body;
    for (size_t k = 0; k < r.datagrams.size(); ++k) {
      DatagramHeader h;
      ASSERT_EQ(validate_datagram(r.datagrams[k], h), DatagramCheck::kOk);
      EXPECT_EQ(h.sequence, k + 1);
      EXPECT_EQ(silver, (h.flags & kFlagFiltered) != 0);
      if (!silver) {
        EXPECT_EQ(to_hex(r.datagrams[k]), to_hex(w.core.datagram(k + 1)));
      }
      body += to_hex(r.datagrams[k]);
    }
    auto& want = silver ? silver_body : gold_body;
    if (want.empty()) want = body;
    EXPECT_EQ(body, want);
  }
  // A later poll reads the ring again.
  const uint64_t coalesced = w.svc.counters().retransmit_coalesced.get();
  w.now += 1;
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 1, 20}, 600));
  EXPECT_EQ(w.svc.counters().retransmit_coalesced.get(), coalesced);
}

TEST(ControlBudget, AReplyAlwaysCarriesOneDatagram) {
  ControlConfig cc;
  cc.max_reply_bytes = 64;  // below one datagram
  World w(cc);
  for (int i = 0; i < 3; ++i) {
    w.publish(w.add(1));
    w.commit();
  }
  w.subscribe(1);
  w.out.clear();
  ASSERT_TRUE(w.send(1, RetransmitRequest{900, 1, 3}, 2));
  const auto r = only<RetransmitReply>(w.out.to(1));
  ASSERT_EQ(r.datagrams.size(), 1u) << "else the client would ask for the same datagram forever";
  EXPECT_EQ(to_hex(r.datagrams[0]), to_hex(w.core.datagram(1)));
}

TEST(ControlBudget, AdmittedIsSubscribedAndWorkIsReported) {
  World w;
  EXPECT_FALSE(w.svc.admitted(1));
  ASSERT_TRUE(w.send(1, Subscribe{4, 1, {}}, 1));
  EXPECT_TRUE(w.svc.admitted(1));
  EXPECT_EQ(w.svc.last_work().requests, 1u);
  EXPECT_EQ(w.svc.last_work().refused, 0u);
  EXPECT_EQ(w.svc.last_work().frames, 1u);
  EXPECT_EQ(w.svc.last_work().bytes, w.out.frames.back().second.size());
  ASSERT_TRUE(w.send(1, StatusReport{1, 0, 0, 0}, 0));
  EXPECT_EQ(w.svc.last_work().requests, 0u) << "a report is not a request";
  EXPECT_EQ(w.svc.last_work().frames, 0u);
  ASSERT_TRUE(w.svc.on_frame(1, from_hex("0c000000ff01000007000000"), w.now, w.out));
  EXPECT_EQ(w.svc.last_work().requests, 1u);
  EXPECT_EQ(w.svc.last_work().refused, 1u);
  w.publish(w.add(2));
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 3));
  EXPECT_EQ(w.svc.last_work().frames, 2u) << "data and done";
  EXPECT_FALSE(w.svc.admitted(2));
  w.svc.on_disconnect(1);
  EXPECT_FALSE(w.svc.admitted(1));
}

TEST(ControlBudget, ConfigurationIsValidated) {
  PublisherCore core(pub_config());
  auto bad = [&](auto edit) {
    ControlConfig cc;
    edit(cc);
    return error_of([&] { ControlService svc(cc, core); });
  };
  EXPECT_NE(bad([](ControlConfig& c) { c.retransmit_rate = 0; }).find("control.retransmit_rate"), std::string::npos);
  EXPECT_NE(bad([](ControlConfig& c) { c.snapshot_rate = std::nan(""); }).find("control.snapshot_rate"),
            std::string::npos);
  EXPECT_NE(bad([](ControlConfig& c) { c.retransmit_burst = 0.5; }).find("control.retransmit_burst"),
            std::string::npos);
  EXPECT_NE(bad([](ControlConfig& c) { c.snapshot_share_bytes = 100; }).find("control.snapshot_share_bytes"),
            std::string::npos);
  EXPECT_NE(bad([](ControlConfig& c) { c.snapshot_interval_ns = 0; }).find("control.snapshot_interval"),
            std::string::npos);
  EXPECT_NE(bad([](ControlConfig& c) { c.max_snapshot_requests = 0; }).find("control.max_snapshot_requests"),
            std::string::npos);
  EXPECT_EQ(bad([](ControlConfig&) {}), "") << "the defaults are valid";
}

// pacing.min_rate has a floor, and no capacity a client reports takes the
// feed below min_rate, by the report itself or by the periodic upkeep.
TEST(ControlPacing, MinRateHasAFloor) {
  auto c = pub_config();
  c.pacing.mode = feed::PacingMode::kSlowest;
  for (double r : {999.0, 0.0, -5.0, std::nan("")}) {
    c.pacing.min_rate = r;
    const std::string e = error_of([&] { c.validate(); });
    EXPECT_NE(e.find("pacing.min_rate"), std::string::npos) << r << ": " << e;
    EXPECT_NE(error_of([&] { PublisherCore core(c); }), "") << r;
  }
  c.pacing.min_rate = feed::kMinPacingFloor;
  EXPECT_EQ(error_of([&] { c.validate(); }), "");
}

TEST(ControlPacing, NoReportedCapacityPushesTheFeedBelowMinRate) {
  for (double floor : {feed::kMinPacingFloor, 5'000.0}) {
    SCOPED_TRACE(floor);
    auto c = pub_config();
    c.pacing.mode = feed::PacingMode::kSlowest;
    c.pacing.rate = 50'000;
    c.pacing.min_rate = floor;
    World w({}, c);
    w.subscribe(1);
    w.subscribe(2);
    for (uint64_t cap : {uint64_t{1}, uint64_t{999}, static_cast<uint64_t>(floor) - 1}) {
      ASSERT_TRUE(w.send(1, StatusReport{1, 0, 0, cap}, 0));
      EXPECT_EQ(w.core.pacer().rate(), floor) << cap;
      w.now += kNsPerMs;
      w.svc.tick(w.now);
      EXPECT_EQ(w.core.pacer().rate(), floor) << cap;
    }
    ASSERT_TRUE(w.send(2, StatusReport{1, 0, 0, UINT64_MAX}, 0));
    w.svc.tick(w.now);
    EXPECT_EQ(w.core.pacer().rate(), floor) << "the slowest still counts";
    EXPECT_EQ(w.svc.counters().slowest_capacity.get(), static_cast<uint64_t>(floor) - 1);
  }
}

}  // namespace
}  // namespace mdcast::test
