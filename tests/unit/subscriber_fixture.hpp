// The fixture of the subscriber's unit tests: a Subscriber<Handler> over a
// recording control channel, a feed of datagrams built by hand, a virtual
// clock. Shared by subscriber_test.cpp and subscriber_recovery_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include "book_support.hpp"
#include "subscriber_support.hpp"

namespace mdcast::test {

using feed::Rail;
using feed::Subscriber;
using feed::SubscriberEvent;
using namespace wire;

class SubscriberTest : public ::testing::Test {
 protected:
  // Creates the subscriber and completes its subscription.
  void start(feed::SubscriberConfig c = sub_config(), uint64_t ack_last_seq = 0) {
    sub_ = std::make_unique<Subscriber<Handler>>(c, h_, &ctl_);
    sub_->on_control_connected(now_);
    const auto subs = ctl_.all<Subscribe>();
    ASSERT_EQ(subs.size(), 1u);
    EXPECT_EQ(subs[0].second.channel, c.channel);
    ctl_.clear();
    reply(encode_control(subs[0].first, SubscribeAck{feed_.session, ack_last_seq, 1, ctl::kAll}));
    ASSERT_TRUE(sub_->subscribed());
  }
  void rx(const Bytes& d, Rail r = Rail::kA) { sub_->on_datagram(d, r, now_); }
  void rx_seq(std::initializer_list<uint64_t> seqs) {
    for (uint64_t s : seqs) rx(feed_.dg(s));
  }
  void reply(const Bytes& f) { sub_->on_control_frame(f, now_); }
  void reply(const std::vector<Bytes>& fs) {
    for (const auto& f : fs) reply(f);
  }
  void poll() { sub_->poll(now_); }
  // Publishes n datagrams, each with one add on instrument 1 and one on 2.
  void publish_pairs(int n) {
    for (int i = 0; i < n; ++i) feed_.publish({feed_.add(1), feed_.add(2)});
  }
  std::vector<std::pair<uint64_t, uint32_t>> requests() const {
    std::vector<std::pair<uint64_t, uint32_t>> v;
    for (const auto& [rid, r] : ctl_.all<RetransmitRequest>()) {
      EXPECT_EQ(r.session, kSession);
      v.emplace_back(r.from_seq, r.count);
    }
    return v;
  }
  uint32_t rid_of(uint64_t from) const {
    for (const auto& [rid, r] : ctl_.all<RetransmitRequest>())
      if (r.from_seq == from) return rid;
    ADD_FAILURE() << "no request from " << from;
    return 0;
  }
  // Books identical to the feed's for every instrument the subscriber wants.
  void expect_books_equal() const {
    ASSERT_NE(sub_->books(), nullptr);
    for (uint32_t i = 0; i < kBooks.max_instruments; ++i) {
      if (sub_->wants(i)) {
        EXPECT_EQ(feed_.books.diff(i, *sub_->books()), "") << i;
      }
    }
  }
  // Every instrument's delivered sequence is gap-free from `from` (exactly once, in order).
  void expect_iseqs(uint32_t inst, uint32_t from, uint32_t to) const {
    std::vector<uint32_t> want;
    for (uint32_t i = from; i <= to; ++i) want.push_back(i);
    EXPECT_EQ(h_.iseqs(inst), want) << "instrument " << inst;
  }

  uint64_t now_ = 1'000'000;
  Feed feed_;
  Handler h_;
  FakeControl ctl_;
  std::unique_ptr<Subscriber<Handler>> sub_;
};

}  // namespace mdcast::test
