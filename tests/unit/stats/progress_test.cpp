// A feed's progress from counters files: the publisher's count and rate, the
// subscribers' spread, and a subscriber that finished (its file removed)
// still counted as last read, never as "delivered 0".
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "mdcast/feed/counters.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "mdcast/stats/progress.hpp"
#include "stat_dir.hpp"

namespace mdcast::stats {
namespace {

class Progress : public StatDirTest {};

// A counters file is named by its writer's pid: one file at a time here.
TEST_F(Progress, AFinishedSubscriberCountsAsLastRead) {
  FeedWatch watch({static_cast<uint64_t>(::getpid())});
  EXPECT_EQ(watch.refresh().subscribers, 0u) << "no file yet: nobody heard from";
  {
    CountersFile f("subscriber", "feed1", "shm", {{"sub", feed::SubscriberCounters::kInfo}});
    auto* c = f.section<feed::SubscriberCounters>(0);
    c->messages_delivered.set(1200);
    c->gaps.set(2);
    c->highest_sequence.set(50);
    c->next_sequence.set(48);
    const FeedProgress& p = watch.refresh();
    EXPECT_EQ(p.subscribers, 1u);
    EXPECT_EQ(p.delivered_min, 1200u);
    EXPECT_EQ(p.delivered_max, 1200u);
    EXPECT_EQ(p.gaps, 2u);
    EXPECT_EQ(p.lag, 3u);
    EXPECT_EQ(p.published, 1200u) << "nothing is delivered that was not published";
  }
  const FeedProgress& p = watch.refresh();  // the file is gone
  EXPECT_EQ(p.subscribers, 1u);
  EXPECT_EQ(p.delivered_min, 1200u);
}

TEST_F(Progress, ThePublishersRateSinceFirstReadPublishing) {
  FeedWatch watch({static_cast<uint64_t>(::getpid())});
  CountersFile f("publisher", "feed1", "shm", {{"pub", feed::PublisherCounters::kInfo}});
  auto* c = f.section<feed::PublisherCounters>(0);
  c->messages_published.set(1000);
  c->last_sequence.set(10);
  f.touch(1'000'000'000);
  EXPECT_EQ(watch.refresh().rate, 0u) << "one reading is no rate";
  c->messages_published.set(3000);
  c->last_sequence.set(30);
  f.touch(3'000'000'000);
  const FeedProgress& p = watch.refresh();
  EXPECT_EQ(p.published, 3000u);
  EXPECT_EQ(p.last_sequence, 30u);
  EXPECT_EQ(p.rate, 1000u);
  EXPECT_EQ(p.subscribers, 0u);
}

}  // namespace
}  // namespace mdcast::stats
