// ReadinessRing on an eventfd: a write is reported once, a level that stays
// is not reported again, a poll that ended (completion queue overflow) or was
// armed by another thread is armed again without losing a wakeup, and an
// unavailable ring always says "ready".
//
// Writes come from the test's own thread, the one the poll completes on: the
// completion is in memory when write() returns, so nothing here waits.
#include "mdcast/core/readiness.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

#include "mdcast/core/fd.hpp"

namespace mdcast {
namespace {

UniqueFd make_eventfd() { return UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)); }

void poke(int fd) {
  const uint64_t one = 1;
  ASSERT_EQ(::write(fd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
}

void drain(int fd) {
  uint64_t v = 0;
  (void)::read(fd, &v, sizeof v);
}

#define SKIP_WITHOUT_IO_URING(ring) \
  if (!(ring).available()) GTEST_SKIP() << "io_uring unavailable here: " << (ring).reason()

TEST(ReadinessRing, AWriteIsReportedOnceAndNotAgainUntilTheNext) {
  UniqueFd efd = make_eventfd();
  ASSERT_TRUE(efd);
  ReadinessRing ring(efd.get());
  SKIP_WITHOUT_IO_URING(ring);
  EXPECT_TRUE(ring.reason().empty());
  EXPECT_TRUE(ring.check()) << "just armed: ready once, the caller looks at the level";
  EXPECT_FALSE(ring.check());
  poke(efd.get());
  EXPECT_TRUE(ring.check());
  EXPECT_FALSE(ring.check()) << "consumed";
  // Still readable (nobody read the eventfd): a level, not a new wakeup.
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(ring.check());
  poke(efd.get());
  EXPECT_TRUE(ring.check()) << "a new wakeup while the level stayed";
  drain(efd.get());
  EXPECT_FALSE(ring.check());
  EXPECT_EQ(ring.rearms(), 0u);
}

TEST(ReadinessRing, APollEndedByAFullCompletionQueueIsArmedAgainAndReportsReady) {
  UniqueFd efd = make_eventfd();
  ASSERT_TRUE(efd);
  ReadinessRing ring(efd.get(), 1);  // a completion queue of 2
  SKIP_WITHOUT_IO_URING(ring);
  EXPECT_TRUE(ring.check());
  // More wakeups than the queue holds: the kernel ends the multishot poll
  // (its last completion waits in the overflow list, without IORING_CQE_F_MORE).
  for (int i = 0; i < 16; ++i) poke(efd.get());
  EXPECT_TRUE(ring.check());
  EXPECT_EQ(ring.rearms(), 1u) << "the ended poll is armed again";
  EXPECT_TRUE(ring.available());
  // The new poll may report the level it found at arming, once.
  (void)ring.check();
  EXPECT_FALSE(ring.check());
  drain(efd.get());
  poke(efd.get());
  EXPECT_TRUE(ring.check()) << "the re-armed poll hears the next wakeup";
  EXPECT_FALSE(ring.check());
}

TEST(ReadinessRing, APollArmedByAThreadThatExitedMovesToThePollingThread) {
  UniqueFd efd = make_eventfd();
  ASSERT_TRUE(efd);
  ReadinessRing ring;
  std::thread([&] { ring = ReadinessRing(efd.get()); }).join();
  SKIP_WITHOUT_IO_URING(ring);
  EXPECT_TRUE(ring.check());
  EXPECT_EQ(ring.rearms(), 1u) << "moved to this thread";
  (void)ring.check();  // the replaced poll's end, if it came late
  EXPECT_FALSE(ring.check());
  poke(efd.get());
  EXPECT_TRUE(ring.check());
  EXPECT_FALSE(ring.check());
  EXPECT_EQ(ring.rearms(), 1u);
}

TEST(ReadinessRing, MovedRingsKeepTheirPoll) {
  UniqueFd efd = make_eventfd();
  ASSERT_TRUE(efd);
  ReadinessRing a(efd.get());
  SKIP_WITHOUT_IO_URING(a);
  (void)a.check();
  ReadinessRing b(std::move(a));
  EXPECT_FALSE(a.available());  // NOLINT(bugprone-use-after-move): a moved-from ring is unavailable
  EXPECT_TRUE(a.check()) << "and says ready, like any unavailable ring";
  EXPECT_FALSE(b.check());
  poke(efd.get());
  EXPECT_TRUE(b.check());
}

TEST(ReadinessRing, AnUnavailableRingAlwaysSaysReadyAndWhy) {
  ReadinessRing off = ReadinessRing::disabled("off by request");
  EXPECT_FALSE(off.available());
  EXPECT_EQ(off.reason(), "off by request");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(off.check());
  ReadinessRing none;
  EXPECT_FALSE(none.available());
  EXPECT_EQ(none.reason(), "not armed");
  EXPECT_TRUE(none.check());
}

TEST(ReadinessRing, APollTheKernelRefusesLeavesTheRingUnavailableWithTheReason) {
  ReadinessRing bad(-1);
  EXPECT_FALSE(bad.available());
  EXPECT_FALSE(bad.reason().empty());
  EXPECT_TRUE(bad.check());
}

}  // namespace
}  // namespace mdcast
