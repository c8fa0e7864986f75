// Out of memory on the subscriber's control path. Its entry points are
// noexcept, yet parsing control frames, building a subscription and a
// channel's queueing allocate: a failed allocation must cost a counted,
// dropped frame (asked again later), never std::terminate. (That the
// requests themselves allocate nothing: subscriber_noalloc_test.cpp.) This
// executable replaces the global allocation functions (failing_allocator.hpp)
// so that a test can make every allocation fail for a while.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>

#include "failing_allocator.hpp"
#include "subscriber_support.hpp"

namespace mdcast::test {
namespace {

using feed::Rail;
using namespace wire;

// While alive, every allocation fails.
struct NoMemory {
  NoMemory() { t_fail_allocations = true; }
  ~NoMemory() { t_fail_allocations = false; }
  NoMemory(const NoMemory&) = delete;
  NoMemory& operator=(const NoMemory&) = delete;
};

// Records nothing that allocates: it runs while allocations fail.
struct CountingHandler {
  uint64_t messages = 0;
  void on_message(const Message&, const feed::Delivery&) noexcept { ++messages; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

class SubscriberOomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = sub_config();
    c.status_interval_ns = 100;
    sub_ = std::make_unique<feed::Subscriber<CountingHandler>>(c, h_, &ctl_);
    sub_->on_control_connected(now_);
    sub_->on_control_frame(encode_control(ctl_.all<Subscribe>().at(0).first, SubscribeAck{kSession, 0, 1, ctl::kAll}),
                           now_);
    ASSERT_TRUE(sub_->subscribed());
    ctl_.clear();
    for (int i = 0; i < 3; ++i) feed_.publish({feed_.add(1), feed_.add(2)});
  }
  uint64_t errors() const { return sub_->counters().control_errors.get(); }

  uint64_t now_ = 1'000'000;
  Feed feed_;
  CountingHandler h_;
  FakeControl ctl_;
  std::unique_ptr<feed::Subscriber<CountingHandler>> sub_;
};

TEST_F(SubscriberOomTest, RepliesThatCannotBeParsedAreCountedAndDropped) {
  sub_->on_datagram(feed_.dg(1), Rail::kA, now_);
  sub_->on_datagram(feed_.dg(3), Rail::kA, now_);
  sub_->poll(now_);
  const auto reqs = ctl_.all<RetransmitRequest>();
  ASSERT_EQ(reqs.size(), 1u);
  const Bytes reply = feed_.retransmit_reply(reqs[0].first, 2, 1);
  const Bytes error = encode_control(77, ErrorReply{ErrorCode::kOverloaded, std::string(100, 'x')});
  const Bytes malformed = from_hex("0c000000ff01000001000000");
  {
    NoMemory oom;
    sub_->on_control_frame(reply, now_);      // the datagram list
    sub_->on_control_frame(error, now_);      // the text
    sub_->on_control_frame(malformed, now_);  // the reason, and last_error
  }
  EXPECT_EQ(errors(), 3u);
  EXPECT_EQ(sub_->next_sequence(), 2u) << "the dropped reply delivered nothing";
  EXPECT_TRUE(sub_->last_error().empty()) << sub_->last_error();
  // The request it answered is still outstanding: its timeout asks again.
  ctl_.clear();
  now_ += sub_->config().request_timeout_ns;
  sub_->poll(now_);
  ASSERT_EQ(ctl_.all<RetransmitRequest>().size(), 1u);
  EXPECT_EQ(ctl_.all<RetransmitRequest>()[0].first, reqs[0].first);
  sub_->on_control_frame(reply, now_);
  EXPECT_EQ(sub_->next_sequence(), 4u);
  EXPECT_TRUE(sub_->caught_up());
}

TEST_F(SubscriberOomTest, RequestsThatCannotBeBuiltAreAskedAgainLater) {
  sub_->on_datagram(feed_.dg(1), Rail::kA, now_);
  sub_->on_datagram(feed_.dg(3), Rail::kA, now_);
  const auto& cfg = sub_->config();
  {
    NoMemory oom;
    sub_->poll(now_);                  // a retransmit request and a status report (the channel's copies fail)
    sub_->on_control_connected(now_);  // a subscribe
  }
  EXPECT_TRUE(ctl_.sent.empty());
  now_ += cfg.request_timeout_ns;
  sub_->poll(now_);
  EXPECT_EQ(ctl_.all<Subscribe>().size(), 1u) << "the subscribe is retried at its deadline";
  sub_->on_control_frame(encode_control(ctl_.all<Subscribe>()[0].first, SubscribeAck{kSession, 3, 1, ctl::kAll}),
                         now_);
  const auto reqs = ctl_.all<RetransmitRequest>();
  ASSERT_EQ(reqs.size(), 1u) << "and the retransmit request once subscribed";
  sub_->on_control_frame(feed_.retransmit_reply(reqs[0].first, 2, 1), now_);
  EXPECT_TRUE(sub_->caught_up());
  EXPECT_EQ(h_.messages, 6u);
  now_ += cfg.status_interval_ns;
  sub_->poll(now_);
  EXPECT_EQ(ctl_.all<StatusReport>().size(), 1u) << "the next interval reports";
}

}  // namespace
}  // namespace mdcast::test
