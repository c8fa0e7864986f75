// The UDP medium's link watch on loopback, on a virtual clock: an interface
// that is up is left alone, a rail that heard data and then nothing for 1 s
// is joined again (waits doubling to 8 s), an interface that does not exist
// is down on every rail; and rejoin_group really joins again on lo. Taking a
// real interface down and up is tests/system/netns/rejoin.sh.
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cerrno>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/udp/udp_link.hpp"
#include "mdcast/media/udp/udp_medium.hpp"

using namespace mdcast;
using namespace mdcast::media::udp;

namespace {

struct FakeRail final : LinkWatch::Rail {
  int restore(int rail, const Interface&, bool silence) override {
    calls.push_back({rail, silence});
    return fail_with;
  }
  [[nodiscard]] uint64_t moved(int) const noexcept override { return datagrams; }
  struct Call {
    int rail;
    bool silence;
  };
  std::vector<Call> calls;
  uint64_t datagrams = 0;
  int fail_with = 0;
};

Options quiet() {
  Options o;
  o.log = [](std::string_view) {};
  return o;
}

TEST(LinkWatch, LeavesAnInterfaceThatIsUpAlone) {
  const Options o = quiet();
  const Interface lo = find_interface("lo");
  LinkWatch w(&lo, 1, o, "test", false);
  FakeRail r;
  for (uint64_t t = 1; t < 5 * kNsPerSec; t += 50 * kNsPerMs) w.poll(r, t);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_FALSE(w.all_down());
  EXPECT_EQ(w.counters().down.get(), 0u);
  EXPECT_EQ(w.counters().rails_down.get(), 0u);
}

TEST(LinkWatch, JoinsARailThatFellSilentAgainWithDoublingWaits) {
  const Options o = quiet();
  const Interface lo = find_interface("lo");
  LinkWatch w(&lo, 1, o, "test", true);
  FakeRail r;
  uint64_t t = kNsPerSec;
  w.poll(r, t);
  // Never heard anything: a publisher not there yet is no reason to rejoin.
  for (; t < 4 * kNsPerSec; t += 100 * kNsPerMs) w.poll(r, t);
  EXPECT_TRUE(r.calls.empty());
  r.datagrams = 10;
  w.poll(r, t += 100 * kNsPerMs);
  const uint64_t heard = t;
  std::vector<uint64_t> at;
  for (; t < heard + 20 * kNsPerSec; t += 100 * kNsPerMs) {
    const size_t before = r.calls.size();
    w.poll(r, t);
    if (r.calls.size() != before) at.push_back(t - heard);
  }
  // 1 s, then 2, 4, 8, 8 more (within the 100 ms cadence).
  ASSERT_GE(at.size(), 4u);
  EXPECT_NEAR(static_cast<double>(at[0]) / 1e9, 1.0, 0.21);
  EXPECT_NEAR(static_cast<double>(at[1] - at[0]) / 1e9, 2.0, 0.21);
  EXPECT_NEAR(static_cast<double>(at[2] - at[1]) / 1e9, 4.0, 0.21);
  EXPECT_NEAR(static_cast<double>(at[3] - at[2]) / 1e9, 8.0, 0.21);
  for (const auto& c : r.calls) EXPECT_TRUE(c.silence);
  EXPECT_EQ(w.counters().silence_rejoins.get(), at.size());
  EXPECT_EQ(w.counters().down.get(), 0u);
  // Data again: the waits start over at 1 s.
  r.datagrams = 20;
  w.poll(r, t += 100 * kNsPerMs);
  const size_t calls = r.calls.size();
  const uint64_t again = t;
  while (r.calls.size() == calls) w.poll(r, t += 100 * kNsPerMs);
  EXPECT_NEAR(static_cast<double>(t - again) / 1e9, 1.0, 0.21);
}

TEST(LinkWatch, ASilenceRejoinThatFailsIsCounted) {
  const Options o = quiet();
  const Interface lo = find_interface("lo");
  LinkWatch w(&lo, 1, o, "test", true);
  FakeRail r;
  r.fail_with = ENODEV;
  uint64_t t = kNsPerSec;
  r.datagrams = 1;
  w.poll(r, t);
  for (; t < 3 * kNsPerSec; t += 100 * kNsPerMs) w.poll(r, t);
  EXPECT_EQ(w.counters().rejoin_failures.get(), 1u);
  EXPECT_EQ(w.counters().silence_rejoins.get(), 0u);
}

TEST(LinkWatch, AnInterfaceThatIsGoneIsDownAndNeverRestored) {
  const Options o = quiet();
  Interface gone = find_interface("lo");
  gone.name = "mdcast-nosuch";  // the watch reads flags by name
  LinkWatch w(&gone, 1, o, "test", true);
  FakeRail r;
  for (uint64_t t = 1; t < 3 * kNsPerSec; t += 10 * kNsPerMs) w.poll(r, t);
  EXPECT_TRUE(w.all_down());
  EXPECT_TRUE(w.down(0));
  EXPECT_EQ(w.counters().down.get(), 1u);  // one outage, however long
  EXPECT_EQ(w.counters().rails_down.get(), 1u);
  EXPECT_TRUE(r.calls.empty());
}

TEST(LinkWatch, RejoinGroupJoinsAgainOnLoopback) {
  Options o = quiet();
  const int pid = static_cast<int>(::getpid());
  o.rail_a = {fmt::format("239.77.199.{}:{}", 1 + pid % 250, 20000 + pid % 20000), "lo"};
  std::unique_ptr<SubscriberMedium> sub;
  try {
    sub = std::make_unique<SubscriberMedium>(o);
  } catch (const Error& e) {
    GTEST_SKIP() << "no UDP multicast on lo here: " << e.what();
  }
  const Interface lo = find_interface("lo");
  const GroupAddress g = GroupAddress::parse(o.rail_a.group);
  // A second socket of our own: joined, rejoined (drop + add), rejoined
  // from an index that no longer exists (the drop fails, the add holds).
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(fd);
  EXPECT_EQ(rejoin_group(fd.get(), lo.index, lo, g), 0);
  EXPECT_EQ(rejoin_group(fd.get(), lo.index, lo, g), 0);
  EXPECT_EQ(rejoin_group(fd.get(), 9999, lo, g), EADDRINUSE);  // still joined on lo: nothing dropped
  EXPECT_EQ(reset_sender(fd.get(), lo), 0);
  EXPECT_EQ(sub->link().counters().down.get(), 0u);
  EXPECT_FALSE(sub->link_down());
}

}  // namespace
