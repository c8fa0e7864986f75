// Token-bucket pacing against a virtual clock: rate, burst, no-pacing mode.
#include <gtest/gtest.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/feed/pacer.hpp"

namespace mdcast::test {
namespace {

using feed::Pacer;
using feed::PacingConfig;
using feed::PacingMode;

constexpr uint64_t kT0 = 5 * kNsPerSec;

TEST(Pacer, NoneNeverBackPressures) {
  PacingConfig c;
  c.mode = PacingMode::kNone;
  c.rate = 1;
  Pacer p(c);
  EXPECT_EQ(p.rate(), 0.0);
  for (int i = 0; i < 100'000; ++i) ASSERT_TRUE(p.try_take(kT0));
}

TEST(Pacer, BurstThenEmpty) {
  PacingConfig c;
  c.mode = PacingMode::kFixed;
  c.rate = 1000;
  c.burst = 10;
  Pacer p(c);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(p.try_take(kT0)) << i;
  EXPECT_FALSE(p.try_take(kT0));
  EXPECT_FALSE(p.try_take(kT0 + kNsPerMs - 1)) << "not a whole token yet";
  EXPECT_TRUE(p.try_take(kT0 + kNsPerMs)) << "one token per millisecond at 1000/s";
  EXPECT_FALSE(p.try_take(kT0 + kNsPerMs));
  // A long idle refills to the burst, never above.
  const uint64_t later = kT0 + 10 * kNsPerSec;
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(p.try_take(later)) << i;
  EXPECT_FALSE(p.try_take(later));
}

TEST(Pacer, SustainedRateMatchesConfig) {
  for (double rate : {100.0, 10'000.0, 250'000.0}) {
    PacingConfig c;
    c.mode = PacingMode::kFixed;
    c.rate = rate;
    c.burst = 50;
    Pacer p(c);
    // Drain the initial burst, then count over one virtual second polled every microsecond-ish.
    while (p.try_take(kT0)) {
    }
    uint64_t taken = 0;
    for (uint64_t t = kT0; t <= kT0 + kNsPerSec; t += 997)
      while (p.try_take(t)) ++taken;
    EXPECT_NEAR(static_cast<double>(taken), rate, rate * 0.01 + 2) << rate;
  }
}

TEST(Pacer, BurstBelowOneIsOne) {
  PacingConfig c;
  c.mode = PacingMode::kFixed;
  c.rate = 1000;
  c.burst = 0.1;
  Pacer p(c);
  EXPECT_TRUE(p.try_take(kT0));
  EXPECT_FALSE(p.try_take(kT0));
}

TEST(Pacer, ClockGoingBackwardsAddsNothing) {
  PacingConfig c;
  c.mode = PacingMode::kFixed;
  c.rate = 1000;
  c.burst = 1;
  Pacer p(c);
  EXPECT_TRUE(p.try_take(kT0));
  EXPECT_FALSE(p.try_take(kT0 - kNsPerSec));
  EXPECT_FALSE(p.try_take(kT0 + kNsPerMs / 2));
  EXPECT_TRUE(p.try_take(kT0 + kNsPerMs));
}

TEST(Pacer, SetRateChangesPaceAndZeroDisables) {
  PacingConfig c;
  c.mode = PacingMode::kSlowest;
  c.rate = 1000;
  c.burst = 1;
  Pacer p(c);
  EXPECT_EQ(p.mode(), PacingMode::kSlowest);
  EXPECT_TRUE(p.try_take(kT0));
  EXPECT_FALSE(p.try_take(kT0 + 100 * kNsPerUs));
  p.set_rate(10'000);
  EXPECT_TRUE(p.try_take(kT0 + 200 * kNsPerUs));
  EXPECT_EQ(p.rate(), 10'000.0);
  p.set_rate(0);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(p.try_take(kT0 + 200 * kNsPerUs));
}

}  // namespace
}  // namespace mdcast::test
