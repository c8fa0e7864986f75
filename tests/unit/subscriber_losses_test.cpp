// The subscriber's loss report (feed/loss_report.hpp): each gap recorded
// when it opens, with the first missing sequence and how many, and when
// delivery is whole again, with how it was recovered and when.
#include <gtest/gtest.h>

#include <memory>
#include <new>

#include "subscriber_fixture.hpp"

namespace mdcast::test {
namespace {

using feed::LossHow;
using feed::LossRecord;
using feed::LossReport;

struct Ring {
  static constexpr size_t kRows = 8;
  Ring() : mem(new(std::align_val_t{64}) std::byte[kRows * SeqlockRows::stride(feed::kLossRecordWords)]()),
           report(SeqlockRows(mem.get(), kRows, feed::kLossRecordWords)) {}
  LossRecord at(size_t i) const {
    LossRecord r;
    EXPECT_NE(SeqlockRows::read_struct(mem.get() + i * SeqlockRows::stride(feed::kLossRecordWords), r), UINT64_MAX);
    return r;
  }
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], Free> mem;
  LossReport report;
};

TEST_F(SubscriberTest, AGapRecoveredByRetransmitIsReportedWithItsTime) {
  Ring ring;
  start();
  sub_->report_losses(&ring.report);
  publish_pairs(6);
  rx_seq({1, 2});
  now_ += 1000;
  rx_seq({5});  // 3 and 4 missing
  LossRecord r = ring.at(0);
  EXPECT_EQ(r.ordinal, 1u);
  EXPECT_EQ(r.first_seq, 3u);
  EXPECT_EQ(r.datagrams, 2u);
  EXPECT_EQ(r.detected_ns, now_);
  EXPECT_EQ(r.method(), LossHow::kOpen);
  EXPECT_EQ(r.closed_ns, 0u);
  poll();
  const uint32_t rid = rid_of(3);
  now_ += 25'000;
  reply(feed_.retransmit_reply(rid, 3, 2));
  EXPECT_EQ(sub_->next_sequence(), 6u);
  r = ring.at(0);
  EXPECT_EQ(r.method(), LossHow::kRetransmit);
  EXPECT_EQ(r.closed_ns - r.detected_ns, 25'000u);
  EXPECT_EQ(r.retransmitted, 2u);
  EXPECT_EQ(ring.at(1).ordinal, 0u) << "one gap, one record";
}

TEST_F(SubscriberTest, AGapFilledLateOnItsOwnRailIsReordering) {
  Ring ring;
  start();
  sub_->report_losses(&ring.report);
  publish_pairs(4);
  rx_seq({1, 3});
  now_ += 700;
  rx_seq({2, 4});
  const LossRecord r = ring.at(0);
  EXPECT_EQ(r.first_seq, 2u);
  EXPECT_EQ(r.datagrams, 1u);
  EXPECT_EQ(r.method(), LossHow::kReordered);
  EXPECT_EQ(r.closed_ns - r.detected_ns, 700u);
  EXPECT_EQ(r.retransmitted, 0u);
}

TEST_F(SubscriberTest, WithoutAReportNothingIsRecorded) {
  Ring ring;
  start();
  publish_pairs(3);
  rx_seq({1, 3, 2});
  EXPECT_EQ(ring.at(0).ordinal, 0u);
  EXPECT_EQ(sub_->counters().gaps.get(), 1u);
}

}  // namespace
}  // namespace mdcast::test
