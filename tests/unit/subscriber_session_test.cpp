// What a datagram claims and the control plane confirms: forged sessions,
// forged ends of session, forged far-ahead sequences and tails. Anyone on the
// group can send these; each costs a subscriber at most one session query,
// is counted, and never acts alone.
#include "subscriber_fixture.hpp"

namespace mdcast::test {
namespace {

class SubscriberSessionTest : public SubscriberTest {
 protected:
  // The one query in flight, sent by the control round after the claim
  // (fails the test if there is not exactly one).
  uint32_t query() {
    poll();
    const auto q = ctl_.all<SessionQuery>();
    EXPECT_EQ(q.size(), 1u);
    return q.empty() ? 0 : q.back().first;
  }
  void status(uint32_t rid, bool ended = false, uint64_t end = 0) {
    reply(encode_control(rid, SessionStatus{feed_.session, feed_.newest(), 1, ended, end}));
  }
};

TEST_F(SubscriberSessionTest, ForgedNewSessionIsRefutedAndTheFeedGoesOn) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  Feed forger;
  forger.session = feed_.session + 1;  // what broke every subscriber before: session + 1
  rx(forger.heartbeat({}, 1u << 20));
  forger.publish({forger.add(1)});
  rx(forger.dg(1));
  EXPECT_EQ(sub_->session(), kSession);
  status(query());
  EXPECT_EQ(sub_->session(), kSession);
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 2u);
  EXPECT_EQ(sub_->counters().session_changes.get(), 0u);
  EXPECT_EQ(h_.resets.size(), 1u) << "books never wiped";
  publish_pairs(1);
  rx(feed_.dg(3));
  EXPECT_EQ(sub_->next_sequence(), 4u);
  expect_books_equal();
}

TEST_F(SubscriberSessionTest, ForgedEndOfSessionNeverEndsTheFeed) {
  start();
  publish_pairs(1);
  const Bytes end = feed_.heartbeat({}, 1, {}, kFlagEndOfSession);  // checksums true at 1
  publish_pairs(2);
  rx_seq({1});
  rx(end);
  EXPECT_FALSE(sub_->session_ended());
  status(query());  // the publisher is live at 3
  EXPECT_FALSE(sub_->session_ended());
  EXPECT_FALSE(sub_->delivered_to_end());
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 1u);
  // Replayed: one more query, one more refutation, nothing else.
  ctl_.clear();
  rx(end);
  status(query());
  EXPECT_FALSE(sub_->session_ended());
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 2u);
  rx_seq({2, 3});
  EXPECT_EQ(sub_->next_sequence(), 4u);
}

TEST_F(SubscriberSessionTest, ConfirmedEndWaitsForEverythingThroughIt) {
  start();
  publish_pairs(3);
  const Bytes end = feed_.heartbeat({}, 3, {}, kFlagEndOfSession);
  publish_pairs(2);
  rx_seq({1, 2, 3});
  rx(end);  // an end claim that reached us before 4 and 5
  status(query(), true, 5);
  EXPECT_TRUE(sub_->session_ended());
  EXPECT_EQ(sub_->end_sequence(), 5u);
  EXPECT_FALSE(sub_->delivered_to_end()) << "4 and 5 are still missing";
  EXPECT_EQ(sub_->highest_sequence(), 5u) << "the confirmed end is the tail to recover";
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{4, 2}}));
  reply(feed_.retransmit_reply(rid_of(4), 4, 2));
  EXPECT_TRUE(sub_->delivered_to_end());
  expect_books_equal();
}

TEST_F(SubscriberSessionTest, ForgedHugeTailCostsAQueryNotASnapshot) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  rx(feed_.heartbeat({}, uint64_t{1} << 40));  // last_seq = 2^40
  EXPECT_EQ(sub_->highest_sequence(), 2u);
  EXPECT_FALSE(sub_->recovering());
  status(query());
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 1u);
  poll();
  EXPECT_TRUE(ctl_.all<SnapshotRequest>().empty());
  EXPECT_TRUE(requests().empty());
  EXPECT_TRUE(sub_->caught_up());
}

// A lie small enough to fit the window: the retransmit request it causes is
// answered "not yet", the status bounds the tail, and the requests stop.
TEST_F(SubscriberSessionTest, ForgedNearTailIsClampedByThePublishersWord) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  rx(feed_.heartbeat({}, 10));
  EXPECT_TRUE(sub_->recovering());
  poll();
  ASSERT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 8}}));
  reply(feed_.retransmit_reply(rid_of(3), 3, 8, RetransmitStatus::kNotYet));
  status(query());
  EXPECT_FALSE(sub_->recovering());
  EXPECT_EQ(sub_->highest_sequence(), 2u);
  EXPECT_GE(sub_->counters().forged_datagrams.get(), 1u);
  ctl_.clear();
  for (int i = 0; i < 5; ++i) {
    now_ += 10'000;
    poll();
  }
  EXPECT_TRUE(requests().empty()) << "no endless asking for what was never sent";
  EXPECT_TRUE(ctl_.all<SnapshotRequest>().empty());
}

// The same "not yet" from a member of a pair, within pair_lag of what the
// other member sent: the tail is bounded as before, but what was dropped is
// the other member's data, not a forgery, and is counted so.
TEST_F(SubscriberSessionTest, APairMemberBehindSayingNotYetIsNotCalledForged) {
  auto c = sub_config();
  c.pair_lag = 20;
  start(c);
  publish_pairs(2);
  rx_seq({1, 2});
  rx(feed_.heartbeat({}, 10));
  poll();
  ASSERT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 8}}));
  reply(feed_.retransmit_reply(rid_of(3), 3, 8, RetransmitStatus::kNotYet));
  status(query());
  EXPECT_EQ(sub_->highest_sequence(), 2u);
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
  EXPECT_EQ(sub_->counters().session_changes.get(), 0u);
}

// A "not yet" is checked with a session query; data that arrived while the
// answer was on its way (held up by a TCP retransmission on a lossy link)
// was sent after the answer was written, so the answer does not judge it
// (netns.loss, 5 % loss both ways, counted such datagrams as forged before).
TEST_F(SubscriberSessionTest, DataThatArrivedWhileTheAnswerWasOnItsWayIsNotJudgedByIt) {
  start();
  publish_pairs(12);
  rx_seq({1, 2});
  rx(feed_.heartbeat({}, 6));
  poll();
  ASSERT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 4}}));
  reply(feed_.retransmit_reply(rid_of(3), 3, 4, RetransmitStatus::kNotYet));
  const uint32_t q = query();
  rx(feed_.dg(9));  // after the query went out
  reply(encode_control(q, SessionStatus{feed_.session, 6, 1, false, 0}));
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
  EXPECT_EQ(sub_->counters().window_discards.get(), 0u);
  EXPECT_EQ(sub_->highest_sequence(), 9u) << "9 kept";
}

// A control connection slower than the data (a TCP retransmission on a lossy
// link): the answer says where the publisher was when it left, and data sent
// since has overtaken it. That is not forgery: not counted as forged, and
// the dropped datagrams are recovered as a gap.
TEST_F(SubscriberSessionTest, DataThatOvertookTheAnswerIsNotCalledForged) {
  auto c = sub_config();
  c.window_bytes = 16 * 512;  // 16 slots
  start(c);
  publish_pairs(24);
  rx_seq({1});
  rx(feed_.dg(24));  // beyond the window, beyond what the control plane confirmed
  EXPECT_EQ(sub_->highest_sequence(), 1u) << "held: a claim";
  reply(encode_control(query(), SessionStatus{feed_.session, 12, 1, false, 0}));
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
  EXPECT_EQ(sub_->counters().claims_overtaken.get(), 1u);
  rx(feed_.dg(24));  // its successors: now within reach of what was confirmed
  EXPECT_EQ(sub_->highest_sequence(), 24u);
  EXPECT_TRUE(sub_->recovering()) << "the gap it left is recovered";
}

// An answer was written before the claims that came after its query: a
// confirmation in flight when the end of session arrives says "not ended",
// and that is no refutation (netns.loss counted one such end as forged).
// The end is asked about with the next query.
TEST_F(SubscriberSessionTest, AClaimAfterTheQueryWentOutWaitsForTheNextOne) {
  auto c = sub_config();
  c.window_bytes = 16 * 512;  // 16 slots: a confirmation each 8 datagrams
  start(c);
  publish_pairs(9);
  rx_seq({1, 2, 3, 4, 5, 6, 7, 8, 9});
  const uint32_t confirmation = query();
  EXPECT_EQ(sub_->counters().confirmations.get(), 1u);
  const Bytes end = feed_.heartbeat({}, 9, {}, kFlagEndOfSession);
  rx(end);  // the publisher ended after it answered
  reply(encode_control(confirmation, SessionStatus{feed_.session, 9, 1, false, 0}));
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
  EXPECT_FALSE(sub_->session_ended());
  ctl_.clear();
  const uint32_t about_the_end = query();
  EXPECT_NE(about_the_end, confirmation);
  status(about_the_end, true, 9);
  EXPECT_TRUE(sub_->session_ended());
  EXPECT_TRUE(sub_->delivered_to_end());
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
  EXPECT_EQ(sub_->counters().claims_confirmed.get(), 1u);
}

// The same order with a forger's end: refuted by the answer that judges it.
TEST_F(SubscriberSessionTest, AForgedEndAfterTheQueryWentOutIsRefutedByTheNextAnswer) {
  auto c = sub_config();
  c.window_bytes = 16 * 512;
  start(c);
  publish_pairs(12);
  rx_seq({1, 2, 3, 4, 5, 6, 7, 8, 9});
  const uint32_t confirmation = query();
  rx(feed_.heartbeat({}, 9, {}, kFlagEndOfSession));
  reply(encode_control(confirmation, SessionStatus{feed_.session, 9, 1, false, 0}));
  ctl_.clear();
  status(query());  // live at 12
  EXPECT_FALSE(sub_->session_ended());
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 1u);
}

TEST_F(SubscriberSessionTest, ManyClaimsOneQueryInFlightRetriedOnTimeout) {
  start();
  publish_pairs(1);
  rx(feed_.dg(1));
  Feed forger;
  forger.session = 0xdead;
  forger.publish({forger.add(1)});
  for (int i = 0; i < 100; ++i) rx(forger.dg(1));
  EXPECT_TRUE(ctl_.all<SessionQuery>().empty()) << "a datagram sends nothing: the next poll asks";
  poll();
  EXPECT_EQ(ctl_.all<SessionQuery>().size(), 1u) << "a flood of claims is one probe";
  EXPECT_EQ(sub_->counters().claims_held.get(), 100u);
  now_ += sub_config().request_timeout_ns;
  poll();
  EXPECT_EQ(ctl_.all<SessionQuery>().size(), 2u) << "an unanswered query is asked again";
  EXPECT_EQ(ctl_.all<SessionQuery>().front().first, ctl_.all<SessionQuery>().back().first) << "the same question";
  status(ctl_.all<SessionQuery>().back().first);
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 100u);
  EXPECT_EQ(sub_->session(), kSession);
}

// A publisher slower to answer than the timeout (a thousand subscribers
// asking at once): the answer to the first asking settles the question, and
// each retry waits longer, so that retries do not keep the publisher slow.
TEST_F(SubscriberSessionTest, AnAnswerSlowerThanTheTimeoutStillSettlesTheQuery) {
  start();
  publish_pairs(3);
  const Bytes end = feed_.heartbeat({}, 3, {}, kFlagEndOfSession);
  rx_seq({1, 2, 3});
  rx(end);
  const uint32_t q = query();
  const uint64_t t = sub_config().request_timeout_ns;
  now_ += t;
  poll();
  ASSERT_EQ(ctl_.all<SessionQuery>().size(), 2u);
  now_ += t;  // the retry waits twice as long
  poll();
  EXPECT_EQ(ctl_.all<SessionQuery>().size(), 2u);
  now_ += t;
  poll();
  EXPECT_EQ(ctl_.all<SessionQuery>().size(), 3u);
  for (const auto& [rid, body] : ctl_.all<SessionQuery>()) EXPECT_EQ(rid, q);
  status(q, true, 3);  // the answer to the first asking, arriving now
  EXPECT_TRUE(sub_->session_ended());
  EXPECT_TRUE(sub_->delivered_to_end());
  status(q, true, 3);  // and the answers to the retries after it: nothing more
  EXPECT_EQ(sub_->counters().claims_confirmed.get(), 1u);
  EXPECT_EQ(sub_->counters().forged_datagrams.get(), 0u);
}

TEST_F(SubscriberSessionTest, AnAcknowledgementSlowerThanTheTimeoutStillSubscribes) {
  sub_ = std::make_unique<Subscriber<Handler>>(sub_config(), h_, &ctl_);
  sub_->on_control_connected(now_);
  const uint64_t t = sub_config().request_timeout_ns;
  for (int i = 0; i < 3; ++i) {
    now_ += t << i;
    poll();
  }
  const auto subs = ctl_.all<Subscribe>();
  ASSERT_EQ(subs.size(), 4u) << "asked again at 1, 2 and 4 timeouts";
  for (const auto& [rid, body] : subs) EXPECT_EQ(rid, subs[0].first) << "the same Subscribe each time";
  reply(encode_control(subs[0].first, SubscribeAck{feed_.session, 0, 1, ctl::kAll}));
  EXPECT_TRUE(sub_->subscribed()) << "the first asking's acknowledgement, late, counts";
  reply(encode_control(subs[0].first, SubscribeAck{feed_.session, 0, 1, ctl::kAll}));
  EXPECT_TRUE(sub_->subscribed());
  EXPECT_EQ(sub_->counters().control_errors.get(), 0u);
}

TEST_F(SubscriberSessionTest, AReusedSessionIdIsANewRunWhenThePublisherWentBack) {
  start();
  publish_pairs(5);
  rx_seq({1, 2, 3, 4, 5});
  // The publisher restarts with the same (configured) id and is at 2.
  sub_->on_control_disconnected();
  sub_->on_control_connected(now_);
  const auto subs = ctl_.all<Subscribe>();
  ASSERT_FALSE(subs.empty());
  reply(encode_control(subs.back().first, SubscribeAck{kSession, 2, 1, ctl::kAll}));
  EXPECT_EQ(sub_->counters().session_changes.get(), 1u);
  EXPECT_EQ(sub_->next_sequence(), 1u) << "the new run's data is delivered from its start";
  EXPECT_EQ(sub_->highest_sequence(), 2u);
}

// A publisher pair: the member the connection moved to has not yet
// published what the dead one sent. Within pair_lag that is the other
// member, which will send the same datagrams: nothing is reset, and its
// copies are duplicates until it passes us. Beyond it, a new run as above.
TEST_F(SubscriberSessionTest, APairMemberBehindIsNotANewRun) {
  auto c = sub_config();
  c.pair_lag = 2;
  start(c);
  publish_pairs(6);
  rx_seq({1, 2, 3, 4, 5});
  sub_->on_control_disconnected();
  sub_->on_control_connected(now_);
  // Delivered through 5; the member is at 3: two behind.
  reply(encode_control(ctl_.all<Subscribe>().back().first, SubscribeAck{kSession, 3, 1, ctl::kAll}));
  EXPECT_EQ(sub_->counters().session_changes.get(), 0u);
  EXPECT_EQ(sub_->next_sequence(), 6u);
  rx_seq({4, 5, 6});
  EXPECT_EQ(sub_->counters().duplicates.get(), 2u);
  EXPECT_EQ(sub_->next_sequence(), 7u);
  expect_books_equal();
  // Delivered through 6, a member at 3 is three behind, one more than
  // pair_lag allows: a new run.
  sub_->on_control_disconnected();
  sub_->on_control_connected(now_);
  reply(encode_control(ctl_.all<Subscribe>().back().first, SubscribeAck{kSession, 3, 1, ctl::kAll}));
  EXPECT_EQ(sub_->counters().session_changes.get(), 1u);
  EXPECT_EQ(sub_->next_sequence(), 1u);
}

TEST_F(SubscriberSessionTest, TheAcknowledgementConfirmsOrReplacesTheSessionDataSuggested) {
  sub_ = std::make_unique<Subscriber<Handler>>(sub_config(), h_, &ctl_);
  Feed forger;
  forger.session = 0xbad;
  forger.publish({forger.add(1)});
  rx(forger.dg(1));  // heard before the subscription: taken on trust for now
  EXPECT_EQ(sub_->session(), 0xbadu);
  EXPECT_FALSE(sub_->session_confirmed());
  sub_->on_control_connected(now_);
  reply(encode_control(ctl_.all<Subscribe>().back().first, SubscribeAck{kSession, 0, 1, ctl::kAll}));
  EXPECT_EQ(sub_->session(), kSession);
  EXPECT_TRUE(sub_->session_confirmed());
  EXPECT_EQ(sub_->books()->book(1).order_count(), 0u) << "what the stranger said is gone";
  publish_pairs(1);
  rx(feed_.dg(1));
  expect_books_equal();
}

TEST(SubscriberWithoutControl, DataDecidesWhenThereIsNothingToAsk) {
  Handler h;
  auto sub = std::make_unique<Subscriber<Handler>>(sub_config(), h, nullptr);
  Feed a;
  a.publish({a.add(1)});
  sub->on_datagram(a.dg(1), Rail::kA, 1);
  Feed b;
  b.session = kSession + 7;
  b.publish({b.add(2)});
  sub->on_datagram(b.dg(1), Rail::kA, 2);
  EXPECT_EQ(sub->session(), b.session);
  sub->on_datagram(b.heartbeat({}, {}, {}, kFlagEndOfSession), Rail::kA, 3);
  EXPECT_TRUE(sub->session_ended());
  EXPECT_TRUE(sub->delivered_to_end());
}

}  // namespace
}  // namespace mdcast::test
