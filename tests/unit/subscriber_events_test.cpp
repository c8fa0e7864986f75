// Subscriber<Handler> as media see it: datagrams a medium fetched itself
// (ControlEvents::on_retransmitted), requests re-sent after a reconnection,
// and the delivery hook a recorder uses.
#include "subscriber_fixture.hpp"

namespace mdcast::test {
namespace {

// ------------------------------------------------ media::ControlEvents --

// Datagrams a medium fetched itself: no frame, same outcome as a reply.
TEST_F(SubscriberTest, RetransmitsFetchedByTheMediumAreHandledAsAReply) {
  ctl_.fetches = true;
  start();
  publish_pairs(6);
  rx_seq({1, 3, 6});
  poll();
  ASSERT_EQ(ctl_.fetch_requests.size(), 2u);
  EXPECT_TRUE(requests().empty()) << "a fetching medium gets typed requests, not frames";
  const auto r2 = ctl_.fetch_requests[0], r4 = ctl_.fetch_requests[1];
  EXPECT_EQ(r2.session, kSession);
  EXPECT_EQ(r2.from, 2u);
  EXPECT_EQ(r2.count, 1u);
  EXPECT_EQ(r4.from, 4u);
  EXPECT_EQ(r4.count, 2u);
  media::ControlEvents& ev = *sub_;  // what a medium's poll_control is handed
  const std::span<const std::byte> two[] = {feed_.dg(2)};
  ev.on_retransmitted(r2.rid, kSession, two, now_);
  EXPECT_EQ(sub_->next_sequence(), 4u);
  const std::span<const std::byte> four_five[] = {feed_.dg(4), feed_.dg(5)};
  ev.on_retransmitted(r4.rid, kSession, four_five, now_);
  EXPECT_EQ(sub_->next_sequence(), 7u);
  EXPECT_EQ(h_.seqs(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(sub_->counters().datagrams_recovered.get(), 3u);
  EXPECT_TRUE(sub_->caught_up());
  expect_books_equal();
  // Retired: neither a late answer nor a timeout brings anything back.
  ev.on_retransmitted(r2.rid, kSession, two, now_);
  EXPECT_EQ(sub_->counters().duplicates.get(), 0u) << "a retired request's late answer is not even looked at";
  ctl_.fetch_requests.clear();
  now_ += 10'000;
  poll();
  EXPECT_TRUE(ctl_.fetch_requests.empty());
  EXPECT_EQ(sub_->counters().retransmit_timeouts.get(), 0u);
}

TEST_F(SubscriberTest, FetchedRetransmitsOfAnotherSessionAreIgnored) {
  ctl_.fetches = true;
  start();
  publish_pairs(3);
  rx_seq({1, 3});
  poll();
  ASSERT_EQ(ctl_.fetch_requests.size(), 1u);
  const uint32_t rid = ctl_.fetch_requests[0].rid;
  ctl_.fetch_requests.clear();
  const std::span<const std::byte> two[] = {feed_.dg(2)};
  sub_->on_retransmitted(rid, kSession - 1, two, now_);
  EXPECT_EQ(sub_->next_sequence(), 2u);
  EXPECT_EQ(sub_->counters().datagrams_recovered.get(), 0u);
  // As a reply of another session would: retired, and the run asked for anew.
  poll();
  ASSERT_EQ(ctl_.fetch_requests.size(), 1u);
  EXPECT_NE(ctl_.fetch_requests[0].rid, rid);
  EXPECT_EQ(ctl_.fetch_requests[0].from, 2u);
}

// Nothing fetched: asked again at the next poll (same request, no timeout
// wait), each time a retry, so a range the medium can never fetch ends in a
// snapshot instead of a loop.
TEST_F(SubscriberTest, NothingFetchedIsAskedAgainThenSnapshot) {
  ctl_.fetches = true;
  start();
  publish_pairs(3);
  rx_seq({1, 3});
  poll();
  ASSERT_EQ(ctl_.fetch_requests.size(), 1u);
  const uint32_t rid = ctl_.fetch_requests[0].rid;
  for (uint32_t retry = 1; retry <= 2; ++retry) {
    ctl_.fetch_requests.clear();
    sub_->on_retransmitted(rid, kSession, {}, now_);
    EXPECT_TRUE(ctl_.fetch_requests.empty()) << "never re-asked from inside the medium's callback";
    poll();  // no time passes
    ASSERT_EQ(ctl_.fetch_requests.size(), 1u) << "retry " << retry;
    EXPECT_EQ(ctl_.fetch_requests[0].rid, rid) << "the same request";
    EXPECT_EQ(ctl_.fetch_requests[0].from, 2u);
  }
  EXPECT_EQ(sub_->counters().retransmit_timeouts.get(), 0u);
  EXPECT_EQ(sub_->counters().retransmit_requests.get(), 1u);
  EXPECT_FALSE(sub_->in_snapshot());
  sub_->on_retransmitted(rid, kSession, {}, now_);  // beyond max_retries = 2
  EXPECT_TRUE(sub_->in_snapshot());
  EXPECT_TRUE(ctl_.all<SnapshotRequest>().empty()) << "never asked from inside the medium's callback";
  poll();
  ASSERT_EQ(ctl_.all<SnapshotRequest>().size(), 1u);
  reply(feed_.snapshot(ctl_.all<SnapshotRequest>()[0].first, feed_.instruments_with_data()));
  EXPECT_TRUE(sub_->caught_up());
  expect_books_equal();
}

// ---------------------------------------------------------- reconnection --

// The replies to what was asked on a lost connection are lost with it: once
// the new subscription is acknowledged, outstanding requests go out again at
// once (same request ids), not after request_timeout.
TEST_F(SubscriberTest, OutstandingRequestsAreResentWhenResubscribed) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  rx(feed_.heartbeat({1, 2}, {}, {{2, 0xbad}}));  // instrument 2 is recovered alone
  poll();
  const auto irec = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(irec.size(), 1u);
  publish_pairs(2);
  rx(feed_.dg(4));
  poll();
  ASSERT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 1}}));
  const uint32_t r3 = rid_of(3);

  sub_->on_control_disconnected();
  ctl_.clear();
  now_ += 10;
  sub_->on_control_connected(now_);
  const auto subs = ctl_.all<Subscribe>();
  ASSERT_EQ(subs.size(), 1u);
  poll();
  EXPECT_TRUE(requests().empty()) << "nothing is asked before the subscription is acknowledged";
  EXPECT_TRUE(ctl_.all<SnapshotRequest>().empty());
  ctl_.clear();
  reply(encode_control(subs[0].first, SubscribeAck{kSession, feed_.newest(), 1, ctl::kAll}));
  // No time passed: these are not timeouts.
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 1}}));
  EXPECT_EQ(rid_of(3), r3);
  const auto again = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].first, irec[0].first);
  EXPECT_EQ(again[0].second.instruments.ids, std::vector<uint32_t>{2});
  EXPECT_EQ(sub_->counters().retransmit_timeouts.get(), 0u);
  EXPECT_EQ(sub_->counters().retransmit_requests.get(), 1u) << "the same request, sent again";
  // A repeated ack on the same connection re-sends nothing.
  ctl_.clear();
  reply(encode_control(subs[0].first, SubscribeAck{kSession, feed_.newest(), 1, ctl::kAll}));
  EXPECT_TRUE(ctl_.sent.empty());

  reply(feed_.retransmit_reply(r3, 3, 1));
  reply(feed_.snapshot(irec[0].first, {2}));
  EXPECT_TRUE(sub_->caught_up());
  expect_iseqs(1, 1, 4);
  EXPECT_EQ(h_.snapshots, std::vector<uint32_t>{2});
  expect_books_equal();
}

TEST_F(SubscriberTest, SnapshotRequestIsResentWhenResubscribed) {
  start();
  publish_pairs(3);
  rx_seq({1, 3});
  poll();
  reply(feed_.retransmit_reply(rid_of(2), 2, 1, RetransmitStatus::kTooOld));
  poll();
  const auto snaps = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(snaps.size(), 1u);
  // The connection drops; the medium reports only the new one.
  ctl_.clear();
  now_ += 10;
  sub_->on_control_connected(now_);
  const auto subs = ctl_.all<Subscribe>();
  ASSERT_EQ(subs.size(), 1u);
  ctl_.clear();
  reply(encode_control(subs[0].first, SubscribeAck{kSession, feed_.newest(), 1, ctl::kAll}));
  const auto again = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(again.size(), 1u) << "sent at once, not at its deadline";
  EXPECT_EQ(again[0].first, snaps[0].first);
  EXPECT_TRUE(again[0].second.instruments.all);
  EXPECT_EQ(sub_->counters().retransmit_timeouts.get(), 0u);
  reply(feed_.snapshot(snaps[0].first, feed_.instruments_with_data()));
  EXPECT_TRUE(sub_->caught_up());
  expect_books_equal();
}

// ------------------------------------------------------- delivery hook --

// A handler with the optional on_datagram_delivered hook: records each call
// with how many messages had been delivered when it came.
struct HookHandler : Handler {
  struct Call {
    uint64_t seq;
    bool recovered;
    Bytes bytes;
    size_t msgs_before;
  };
  std::vector<Call> calls;
  void on_datagram_delivered(std::span<const std::byte> d, const feed::Delivery& dl) noexcept {
    calls.push_back({dl.sequence, dl.recovered, Bytes(d.begin(), d.end()), msgs.size()});
  }
  std::vector<uint64_t> seqs_hooked() const {
    std::vector<uint64_t> v;
    for (const auto& c : calls) v.push_back(c.seq);
    return v;
  }
};

TEST(SubscriberDeliveryHook, OncePerDatagramInSequenceOrderBeforeItsMessages) {
  uint64_t now = 1'000'000;
  Feed feed;
  HookHandler h;
  FakeControl ctl;
  Subscriber<HookHandler> sub(sub_config(), h, &ctl);
  sub.on_control_connected(now);
  sub.on_control_frame(encode_control(ctl.all<Subscribe>().at(0).first, SubscribeAck{kSession, 0, 1, ctl::kAll}), now);
  for (int i = 0; i < 8; ++i) feed.publish({feed.add(1), feed.add(2)});
  auto rx = [&](uint64_t seq) { sub.on_datagram(feed.dg(seq), Rail::kA, now); };
  rx(1);                // live
  rx(3);                // buffered
  rx(5);                // buffered
  rx(3);                // a duplicate: not delivered, not hooked
  rx(2);                // live, then 3 from the window
  sub.on_datagram(feed.heartbeat({}), Rail::kA, now);  // unsequenced: not hooked
  EXPECT_EQ(h.seqs_hooked(), (std::vector<uint64_t>{1, 2, 3}));
  ctl.clear();
  sub.poll(now);
  uint32_t r4 = 0, r6 = 0;
  for (const auto& [rid, r] : ctl.all<RetransmitRequest>()) (r.from_seq == 4 ? r4 : r6) = rid;
  ASSERT_NE(r4, 0u);
  ASSERT_NE(r6, 0u);
  sub.on_control_frame(feed.retransmit_reply(r6, 6, 3), now);  // buffered behind the hole at 4
  EXPECT_EQ(h.seqs_hooked(), (std::vector<uint64_t>{1, 2, 3}));
  sub.on_control_frame(feed.retransmit_reply(r4, 4, 1), now);  // 4 in order, then 5..8 from the window
  EXPECT_EQ(h.seqs_hooked(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  for (const auto& c : h.calls) {
    SCOPED_TRACE(c.seq);
    EXPECT_EQ(c.bytes, feed.dg(c.seq)) << "the datagram as published";
    EXPECT_EQ(c.recovered, c.seq >= 3) << "live 1 and 2, the rest recovered";
    EXPECT_EQ(c.msgs_before, 2 * (c.seq - 1)) << "called before the datagram's own messages";
  }
  EXPECT_EQ(h.calls.size(), sub.counters().datagrams_delivered.get());

  // A full snapshot replaces datagrams: the hook resumes after it.
  for (int i = 0; i < 4; ++i) feed.publish({feed.add(1), feed.add(2)});  // 9..12
  rx(12);
  sub.on_control_frame(feed.retransmit_reply(0, 9, 3), now);  // an unasked reply: ignored
  ctl.clear();
  sub.poll(now);
  const auto req = ctl.all<RetransmitRequest>().at(0);
  sub.on_control_frame(feed.retransmit_reply(req.first, 9, 3, RetransmitStatus::kTooOld), now);
  ASSERT_TRUE(sub.in_snapshot());
  sub.poll(now);
  const auto snap = feed.snapshot(ctl.all<SnapshotRequest>().at(0).first, feed.instruments_with_data());  // at 12
  feed.publish({feed.add(1), feed.add(2)});  // 13
  rx(13);
  for (const auto& f : snap) sub.on_control_frame(f, now);
  EXPECT_TRUE(sub.caught_up());
  EXPECT_EQ(h.seqs_hooked(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 13}));
  EXPECT_EQ(h.calls.back().msgs_before, h.msgs.size() - 2);
  EXPECT_EQ(h.calls.size(), sub.counters().datagrams_delivered.get());
}

// Messages the filter drops or an instrument recovery holds do not hide
// their datagram from the hook.
TEST(SubscriberDeliveryHook, SeesDatagramsWhoseMessagesAreFilteredOrHeld) {
  uint64_t now = 1'000'000;
  Feed feed;
  HookHandler h;
  FakeControl ctl;
  auto c = sub_config();
  c.all_instruments = false;
  c.instruments = {2};
  Subscriber<HookHandler> sub(c, h, &ctl);
  sub.on_control_connected(now);
  sub.on_control_frame(encode_control(ctl.all<Subscribe>().at(0).first, SubscribeAck{kSession, 0, 1, ctl::kAll}), now);
  feed.publish({feed.add(1)});
  feed.publish({feed.add(2)});
  sub.on_datagram(feed.dg(1), Rail::kA, now);
  sub.on_datagram(feed.dg(2), Rail::kB, now);
  sub.on_datagram(feed.heartbeat({2}, {}, {{2, 0xbad}}), Rail::kA, now);  // instrument 2 now held
  feed.publish({feed.add(2)});
  sub.on_datagram(feed.dg(3), Rail::kA, now);
  EXPECT_EQ(h.seqs_hooked(), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(h.iseqs(2), std::vector<uint32_t>{1}) << "2's second message is held";
}

}  // namespace
}  // namespace mdcast::test
