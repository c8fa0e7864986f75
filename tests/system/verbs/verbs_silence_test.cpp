// What a subscriber learns from the data path alone: a heartbeat's immediate
// data is the last sequenced number (a lost tail shows in the completion),
// and a subscriber on the wrong QKey from the start - which never hears that
// the publisher is ahead - still says in words what it listens on and why it
// may hear nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/subscriber_agent.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "mdcast/wire/datagram.hpp"
#include "verbs_proc.hpp"
#include "verbs_test_util.hpp"

namespace mv = mdcast::media::verbs;

namespace mdcast::test::verbs {
namespace {

mv::Options silence_options(const std::string& group, uint16_t port, std::vector<std::string>* log) {
  mv::Options o;
  o.local_ip = local_ip();
  o.group_ip = group;
  o.control_port = port;
  o.retransmit_bytes = 4u << 20;
  o.rate = 5'000;
  o.log = [log](std::string_view s) {
    std::cout << "    [verbs] " << s << '\n';
    if (log) log->emplace_back(s);
  };
  return o;
}

// Sequenced 1..5, a heartbeat at 5, then (6..8 "lost": never sent) a heartbeat at 8.
TEST(VerbsHeartbeat, CarriesTheLastSequenceAsImmediateData) {
  MDCAST_REQUIRE_RDMA();
  const auto o = silence_options("239.77.1.20", 7620, nullptr);
  mv::VerbsReceiver rx(o);
  mv::VerbsSink sink(o);
  for (uint64_t i = 1; i <= 5; ++i)
    while (sink.send(header_datagram(i, false), i) != feed::SendResult::kSent) sink.reap();
  for (const uint64_t hb : {5u, 8u})
    while (sink.send_unsequenced(header_datagram(hb, true)) != feed::SendResult::kSent) sink.reap();
  std::vector<std::pair<bool, std::optional<uint32_t>>> got;  // (heartbeat, imm)
  auto step = [&] {
    rx.poll([&](std::span<const std::byte> d, std::optional<uint32_t> imm) {
      got.emplace_back(!wire::read_header(d.data()).sequenced(), imm);
    });
    sink.reap();
  };
  ASSERT_TRUE(poll_until([&] { return got.size() >= 7; }, step, 10'000)) << got.size() << " of 7 arrived";
  ASSERT_EQ(got.size(), 7u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i].second, std::optional<uint32_t>(i + 1));
  EXPECT_TRUE(got[5].first);
  EXPECT_EQ(got[5].second, std::optional<uint32_t>(5)) << "a heartbeat carries the last sequence as immediate data";
  EXPECT_TRUE(got[6].first);
  EXPECT_EQ(got[6].second, std::optional<uint32_t>(8));
  const auto& c = rx.counters();
  EXPECT_EQ(c.unsequenced.get(), 2u);
  EXPECT_EQ(c.imm_gaps.get(), 1u) << "the lost tail 6..8 shows in the completion";
  EXPECT_EQ(c.imm_missing.get(), 3u);
  EXPECT_EQ(c.imm_mismatch.get(), 0u);
  std::cout << fmt::format("  heartbeats with immediate data 5 and 8: imm_gaps {}, imm_missing {}\n", c.imm_gaps.get(),
                           c.imm_missing.get());
}

// No message is published, so the control plane never says the publisher is
// ahead: before, such a subscriber printed nothing and ended publisher-lost.
TEST(VerbsQKey, WrongQKeyFromTheStartSaysWhatItListensOn) {
  MDCAST_REQUIRE_RDMA();
  Scenario sc{17, 100, 10};
  auto po = silence_options("239.77.1.21", 7621, nullptr);
  mv::PublisherMedium pm(po);
  feed::PublisherAgent<mv::PublisherMedium> pub(pm, publisher_config(sc, pm.max_datagram()));
  std::vector<std::string> log;
  auto so = silence_options("239.77.1.21", 7621, &log);
  so.control_ip = po.local_ip;
  so.qkey = po.qkey + 1;
  mv::SubscriberMedium sm(so);
  Recorder rec(book_config(sc).max_instruments);
  feed::SubscriberAgent<mv::SubscriberMedium, Recorder> sub(sm, subscriber_config(sc, 0), rec);
  const bool said = poll_until([&] { return sm.data_silent(); },
                               [&] {
                                 const uint64_t now = monotonic_ns();
                                 pub.do_work(now);
                                 sub.do_work(now);
                                 sub.poll_control(now);
                               },
                               20'000);
  ASSERT_TRUE(said) << "no word about the silence within 20 s";
  EXPECT_EQ(sm.receiver().counters().datagrams.get(), 0u);
  std::string line;
  for (const auto& l : log)
    if (l.find("no multicast datagram") != std::string::npos) line = l;
  ASSERT_FALSE(line.empty());
  EXPECT_NE(line.find(fmt::format("QKey 0x{:08x}", so.qkey)), std::string::npos) << line;
  EXPECT_NE(line.find("group 239.77.1.21"), std::string::npos) << line;
  EXPECT_NE(line.find(sm.device().name), std::string::npos) << line;
  EXPECT_NE(line.find("another QKey or group"), std::string::npos) << line;
  EXPECT_NE(line.find("no publisher running"), std::string::npos) << line;
  EXPECT_EQ(line.find("although the publisher"), std::string::npos) << "nothing published: the publisher is not ahead";
}

}  // namespace
}  // namespace mdcast::test::verbs
