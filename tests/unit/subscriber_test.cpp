// Subscriber<Handler>, the exact-delivery state machine, driven datagram by
// datagram and frame by frame: the live path, gaps and the requests they
// cause, duplicates, rails, sessions, heartbeats, per-instrument recovery.
// (Retries, snapshots, control and reconnection: subscriber_recovery_test.cpp.)
#include "subscriber_fixture.hpp"

namespace mdcast::test {
namespace {

// The handler concept takes on_reset's argument as the 64-bit session it
// is: a handler that would truncate it is refused at compile time.
struct WideHandler {
  void on_message(const wire::Message&, const feed::Delivery&) noexcept {}
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};
struct NarrowHandler {
  void on_message(const wire::Message&, const feed::Delivery&) noexcept {}
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint32_t) noexcept {}
};
struct ByReferenceHandler {
  void on_message(const wire::Message&, const feed::Delivery&) noexcept {}
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(const uint64_t&) noexcept {}
};
static_assert(feed::SubscriberHandler<WideHandler>);
static_assert(feed::SubscriberHandler<ByReferenceHandler>);
static_assert(!feed::SubscriberHandler<NarrowHandler>, "a uint32_t session would be truncated");

TEST_F(SubscriberTest, InOrderDeliveryZeroCopyPath) {
  start();
  EXPECT_EQ(h_.resets, std::vector<uint64_t>{kSession}) << "the ack started the session";
  publish_pairs(3);
  rx_seq({1, 2, 3});
  ASSERT_EQ(h_.msgs.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(h_.msgs[i].seq, i / 2 + 1);
    EXPECT_FALSE(h_.msgs[i].recovered);
    EXPECT_EQ(h_.msgs[i].type, MsgType::kAddOrder);
  }
  expect_iseqs(1, 1, 3);
  expect_iseqs(2, 1, 3);
  EXPECT_EQ(sub_->next_sequence(), 4u);
  EXPECT_EQ(sub_->session(), kSession);
  EXPECT_TRUE(sub_->caught_up());
  expect_books_equal();
  const auto& c = sub_->counters();
  EXPECT_EQ(c.datagrams_received.get(), 3u);
  EXPECT_EQ(c.datagrams_delivered.get(), 3u);
  EXPECT_EQ(c.messages_delivered.get(), 6u);
  EXPECT_EQ(c.gaps.get(), 0u);
  EXPECT_EQ(c.next_sequence.get(), 4u);
  EXPECT_EQ(sub_->instrument_seq(1), 3u);
  poll();
  EXPECT_TRUE(ctl_.sent.empty()) << "nothing to ask for";
}

TEST_F(SubscriberTest, InstrumentFilter) {
  auto c = sub_config();
  c.all_instruments = false;
  c.instruments = {2};
  start(c);
  publish_pairs(2);
  rx_seq({1, 2});
  EXPECT_TRUE(h_.iseqs(1).empty());
  expect_iseqs(2, 1, 2);
  EXPECT_EQ(sub_->counters().messages_filtered.get(), 2u);
  EXPECT_FALSE(sub_->wants(1));
  EXPECT_TRUE(sub_->wants(2));
  EXPECT_FALSE(sub_->wants(100));
}

TEST_F(SubscriberTest, GapRequestsExactlyTheMissingRuns) {
  start();
  publish_pairs(8);
  rx_seq({1, 3, 5, 8});
  EXPECT_EQ(sub_->next_sequence(), 2u);
  EXPECT_EQ(sub_->highest_sequence(), 8u);
  EXPECT_TRUE(sub_->recovering());
  EXPECT_EQ(sub_->counters().gaps.get(), 1u);
  EXPECT_EQ(sub_->buffered(), 3u);
  EXPECT_TRUE(ctl_.sent.empty()) << "requests go out from poll()";
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 1}, {4, 1}, {6, 2}}));
  EXPECT_EQ(sub_->counters().retransmit_requests.get(), 3u);
  ctl_.sent.clear();
  poll();
  EXPECT_TRUE(ctl_.sent.empty()) << "nothing asked twice while outstanding";
}

TEST_F(SubscriberTest, RecoveredDatagramsFillTheGapsInOrder) {
  start();
  publish_pairs(8);
  rx_seq({1, 3, 5, 8});
  poll();
  const uint32_t r2 = rid_of(2), r4 = rid_of(4), r6 = rid_of(6);
  reply(feed_.retransmit_reply(r4, 4, 1));
  EXPECT_EQ(sub_->next_sequence(), 2u) << "4 is buffered behind the hole at 2";
  reply(feed_.retransmit_reply(r2, 2, 1));
  EXPECT_EQ(sub_->next_sequence(), 6u);
  reply(feed_.retransmit_reply(r6, 6, 2));
  EXPECT_EQ(sub_->next_sequence(), 9u);
  EXPECT_EQ(h_.seqs(), (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  expect_iseqs(1, 1, 8);
  expect_iseqs(2, 1, 8);
  for (const auto& m : h_.msgs) EXPECT_EQ(m.recovered, m.seq != 1) << m.seq;
  EXPECT_TRUE(sub_->caught_up());
  EXPECT_EQ(sub_->buffered(), 0u);
  EXPECT_EQ(sub_->counters().datagrams_recovered.get(), 4u);
  expect_books_equal();
  // A late duplicate reply changes nothing.
  reply(feed_.retransmit_reply(r2, 2, 1));
  EXPECT_EQ(h_.msgs.size(), 16u);
}

TEST_F(SubscriberTest, MaxOutstandingIsRespected) {
  auto c = sub_config();
  c.max_outstanding = 2;
  start(c);
  publish_pairs(7);
  rx_seq({1, 3, 5, 7});
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 1}, {4, 1}}));
  const uint32_t r2 = rid_of(2);
  ctl_.clear();
  poll();
  EXPECT_TRUE(requests().empty());
  reply(feed_.retransmit_reply(r2, 2, 1));
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{6, 1}})) << "a freed slot takes the next run";
}

TEST_F(SubscriberTest, PartialReplyIsAskedForAgain) {
  start();
  publish_pairs(6);
  rx_seq({1, 6});
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 4}}));
  const uint32_t r = rid_of(2);
  ctl_.clear();
  reply(feed_.retransmit_reply(r, 2, 2));  // a capped reply: 2 and 3 only
  EXPECT_EQ(sub_->next_sequence(), 4u);
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{4, 2}}));
}

// "Not yet" means the subscriber's idea of the tail was wrong, or ahead of
// the publisher: it asks the publisher where it stands before asking again.
TEST_F(SubscriberTest, NotYetAsksTheSessionStatusThenAgain) {
  start();
  publish_pairs(3);
  rx_seq({1, 3});
  poll();
  const uint32_t r = rid_of(2);
  ctl_.clear();
  reply(feed_.retransmit_reply(r, 2, 1, RetransmitStatus::kNotYet));
  EXPECT_FALSE(sub_->in_snapshot());
  poll();
  EXPECT_TRUE(requests().empty()) << "no new request before the publisher said where it is";
  const auto q = ctl_.all<SessionQuery>();
  ASSERT_EQ(q.size(), 1u);
  reply(encode_control(q[0].first, SessionStatus{kSession, 3, 1, false, 0}));
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{2, 1}}));
}

TEST_F(SubscriberTest, ReorderWaitDelaysRequests) {
  auto c = sub_config();
  c.reorder_wait_ns = 500;
  start(c);
  publish_pairs(3);
  rx_seq({1, 3});
  poll();
  EXPECT_TRUE(requests().empty()) << "2 may just be late";
  now_ += 499;
  poll();
  EXPECT_TRUE(requests().empty());
  now_ += 1;
  poll();
  EXPECT_EQ(requests().size(), 1u);
  // Reordering that resolves itself needs no request at all.
  ctl_.clear();
  publish_pairs(2);
  rx_seq({5, 4});
  poll();
  EXPECT_TRUE(requests().empty());
}

TEST_F(SubscriberTest, DuplicatesAreDropped) {
  start();
  publish_pairs(4);
  rx_seq({1, 1, 3, 3, 2, 2, 4});
  EXPECT_EQ(h_.seqs(), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(h_.msgs.size(), 8u);
  EXPECT_EQ(sub_->counters().duplicates.get(), 3u);
}

TEST_F(SubscriberTest, ABArbitrationTakesTheFirstCopy) {
  start();
  publish_pairs(4);
  rx(feed_.dg(1), Rail::kA);
  rx(feed_.dg(1), Rail::kB);
  rx(feed_.dg(2), Rail::kB);
  rx(feed_.dg(2), Rail::kA);
  rx(feed_.dg(4), Rail::kB);  // A lost 3 and 4; B lost 3
  rx(feed_.dg(3), Rail::kA);
  rx(feed_.dg(4), Rail::kA);
  rx(feed_.dg(3), Rail::kB);
  EXPECT_EQ(h_.seqs(), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(sub_->counters().rail_a_first.get(), 2u);
  EXPECT_EQ(sub_->counters().rail_b_first.get(), 2u);
  EXPECT_EQ(sub_->counters().duplicates.get(), 4u);
}

TEST_F(SubscriberTest, OwnLoopedBackDatagramsAreDropped) {
  auto c = sub_config();
  c.sender_id = kPubSender;  // pretend we are the publishing process
  start(c);
  publish_pairs(1);
  rx(feed_.dg(1));
  EXPECT_TRUE(h_.msgs.empty());
  EXPECT_EQ(sub_->counters().dropped_own.get(), 1u);
  EXPECT_EQ(sub_->highest_sequence(), 0u) << "own frames do not open gaps";
}

TEST_F(SubscriberTest, ForeignChannelAndMalformedAreDropped) {
  start();
  Feed other;
  other.channel = 2;
  other.publish({other.add(1)});
  rx(other.dg(1));
  EXPECT_EQ(sub_->counters().foreign_channel.get(), 1u);
  publish_pairs(1);
  Bytes bad = feed_.dg(1);
  bad.back() ^= std::byte{1};
  rx(bad);
  EXPECT_EQ(sub_->counters().malformed.get(), 1u);
  EXPECT_EQ(sub_->counters().crc_errors.get(), 1u);
  rx(Bytes(bad.begin(), bad.begin() + 30));
  EXPECT_EQ(sub_->counters().malformed.get(), 2u);
  EXPECT_TRUE(h_.msgs.empty());
  EXPECT_EQ(sub_->highest_sequence(), 0u) << "nothing trusted from a bad datagram";
  rx(feed_.dg(1));
  EXPECT_EQ(h_.msgs.size(), 2u);
}

// Another session's datagram is a claim: dropped, and the control plane
// asked. Only the publisher's answer changes the session (see
// subscriber_session_test.cpp for forgeries).
TEST_F(SubscriberTest, AnotherSessionIsConfirmedBeforeItResets) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  Feed next;
  next.session = 0x9e3779b97f4a7c15;  // random ids: no order between them
  next.publish({next.add(3)});
  rx(next.dg(1));
  EXPECT_EQ(sub_->session(), kSession) << "a datagram alone changes nothing";
  EXPECT_EQ(sub_->counters().claims_held.get(), 1u);
  EXPECT_EQ(h_.msgs.size(), 4u);
  EXPECT_TRUE(ctl_.all<SessionQuery>().empty()) << "a datagram sends nothing: the next poll asks";
  poll();
  const auto q = ctl_.all<SessionQuery>();
  ASSERT_EQ(q.size(), 1u);
  rx(next.dg(1));  // more of the same claim: still one query in flight
  poll();
  EXPECT_EQ(ctl_.all<SessionQuery>().size(), 1u);
  reply(encode_control(q[0].first, SessionStatus{next.session, 1, 1, false, 0}));
  EXPECT_EQ(sub_->session(), next.session);
  EXPECT_EQ(h_.resets, (std::vector<uint64_t>{kSession, next.session}));
  EXPECT_EQ(sub_->counters().session_changes.get(), 1u);
  EXPECT_EQ(sub_->books()->book(1).order_count(), 0u) << "books of the old session are gone";
  ASSERT_FALSE(h_.events.empty());
  EXPECT_EQ(h_.events.back(), SubscriberEvent::kSessionChanged);
  // The datagram that was dropped is recovered as a gap of the new session.
  EXPECT_EQ(sub_->highest_sequence(), 1u);
  poll();
  EXPECT_EQ(ctl_.all<RetransmitRequest>().back().second.session, next.session);
  // Late datagrams of the session left behind are stale, not new claims.
  ctl_.clear();
  rx(feed_.dg(2));
  EXPECT_EQ(sub_->counters().stale_session.get(), 1u);
  poll();
  EXPECT_TRUE(ctl_.all<SessionQuery>().empty());
}

TEST_F(SubscriberTest, HeartbeatWithAHigherLastSeqOpensATailGap) {
  start();
  publish_pairs(4);
  rx_seq({1, 2});
  rx(feed_.heartbeat({}));  // the publisher is at 4
  EXPECT_EQ(sub_->highest_sequence(), 4u);
  EXPECT_EQ(sub_->counters().heartbeats.get(), 1u);
  EXPECT_TRUE(sub_->recovering());
  poll();
  EXPECT_EQ(requests(), (std::vector<std::pair<uint64_t, uint32_t>>{{3, 2}}));
  EXPECT_FALSE(sub_->session_ended());
}

TEST_F(SubscriberTest, EndOfSessionHeartbeat) {
  start();
  publish_pairs(1);
  rx(feed_.dg(1));
  rx(feed_.heartbeat({}, {}, {}, kFlagEndOfSession));
  EXPECT_FALSE(sub_->session_ended()) << "the control plane confirms an end first";
  poll();
  const auto q = ctl_.all<SessionQuery>();
  ASSERT_EQ(q.size(), 1u);
  reply(encode_control(q[0].first, SessionStatus{kSession, 1, 1, true, 1}));
  EXPECT_TRUE(sub_->session_ended());
  EXPECT_EQ(sub_->end_sequence(), 1u);
  EXPECT_TRUE(sub_->caught_up());
  EXPECT_TRUE(sub_->delivered_to_end());
  ASSERT_FALSE(h_.events.empty());
  EXPECT_EQ(h_.events.back(), SubscriberEvent::kSessionEnded);
}

TEST_F(SubscriberTest, HeartbeatChecksumsVerify) {
  start();
  publish_pairs(3);
  rx_seq({1, 2, 3});
  rx(feed_.heartbeat({1, 2}));
  // Two entries and the global checksum (caught up, whole feed).
  EXPECT_EQ(sub_->counters().checksum_ok.get(), 3u);
  EXPECT_EQ(sub_->counters().checksum_mismatch.get(), 0u);
  // An entry for a sequence we are not at is not comparable: skipped.
  feed_.publish({feed_.add(1)});
  rx(feed_.heartbeat({1, 2}));
  EXPECT_EQ(sub_->counters().checksum_ok.get(), 4u) << "only instrument 2 compared; global needs caught up";
  EXPECT_EQ(sub_->counters().checksum_mismatch.get(), 0u);
}

TEST_F(SubscriberTest, GlobalChecksumMismatchForcesAFullSnapshot) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  // Entries agree, the global sum does not (a divergence in an instrument the
  // rotation has not reached yet).
  Bytes hb = DatagramBuilder(2, kSession, kChannel, kPubSender)
                 .flags(kFlagUnsequenced)
                 .raw(heartbeat_msg(2, feed_.books.global_checksum() + 1, kBooks.max_instruments, {}))
                 .build();
  rx(hb);
  EXPECT_EQ(sub_->counters().checksum_mismatch.get(), 1u);
  EXPECT_TRUE(sub_->in_snapshot());
  EXPECT_TRUE(ctl_.all<SnapshotRequest>().empty()) << "a datagram sends nothing: the next poll asks";
  poll();
  ASSERT_EQ(ctl_.all<SnapshotRequest>().size(), 1u);
  EXPECT_TRUE(ctl_.all<SnapshotRequest>()[0].second.instruments.all);
}

TEST_F(SubscriberTest, ChecksumMismatchRecoversOneInstrumentWhileOthersFlow) {
  start();
  publish_pairs(3);
  rx_seq({1, 2, 3});
  // Instrument 2 diverged silently: its heartbeat checksum disagrees.
  rx(feed_.heartbeat({1, 2}, {}, {{2, 0xbad}}));
  EXPECT_EQ(sub_->counters().checksum_mismatch.get(), 1u);
  EXPECT_FALSE(sub_->in_snapshot()) << "one instrument, not the whole feed";
  poll();
  const auto snaps = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_FALSE(snaps[0].second.instruments.all);
  EXPECT_EQ(snaps[0].second.instruments.ids, std::vector<uint32_t>{2});
  const uint32_t rid = snaps[0].first;
  EXPECT_TRUE(sub_->recovering());

  // Meanwhile: instrument 1 keeps flowing, instrument 2 is held.
  h_.msgs.clear();
  publish_pairs(1);  // datagram 4: iseq 4 on both
  rx(feed_.dg(4));
  EXPECT_EQ(h_.iseqs(1), std::vector<uint32_t>{4});
  EXPECT_TRUE(h_.iseqs(2).empty()) << "held until the snapshot";
  // The publisher's snapshot is taken now, at datagram 4 (instrument 2 at iseq 4).
  const auto snap = feed_.snapshot(rid, {2});
  publish_pairs(2);  // datagrams 5 and 6 reach the subscriber before the snapshot does
  rx_seq({5, 6});
  EXPECT_EQ(h_.iseqs(1), (std::vector<uint32_t>{4, 5, 6}));
  EXPECT_TRUE(h_.iseqs(2).empty());
  reply(snap);
  EXPECT_EQ(h_.snapshots, std::vector<uint32_t>{2});
  // Held messages replayed: only those after the snapshot (iseq > 4).
  EXPECT_EQ(h_.iseqs(2), (std::vector<uint32_t>{5, 6}));
  for (const auto& m : h_.msgs) {
    if (m.inst == 2) {
      EXPECT_TRUE(m.recovered);
    }
  }
  EXPECT_FALSE(sub_->recovering());
  EXPECT_EQ(sub_->counters().instrument_recoveries.get(), 1u);
  EXPECT_EQ(sub_->counters().instrument_recovered.get(), 1u);
  expect_books_equal();
  // Later traffic flows normally for both.
  publish_pairs(1);
  rx(feed_.dg(7));
  EXPECT_EQ(h_.iseqs(2), (std::vector<uint32_t>{5, 6, 7}));
}

TEST_F(SubscriberTest, InstrumentSequenceJumpRecoversThatInstrument) {
  start();
  publish_pairs(2);
  rx_seq({1, 2});
  // The publisher's instrument 2 skips a sequence (a message the filtered
  // retransmit left out, say): the subscriber cannot trust its book.
  (void)feed_.next_iseq(2);  // 3: never published
  Message gap = feed_.add(2);
  gap.instrument_seq = feed_.next_iseq(2);  // 4
  feed_.note_applied(gap);
  Bytes d = DatagramBuilder(3, kSession, kChannel, kPubSender).add(gap).build();
  rx(d);
  EXPECT_EQ(sub_->counters().instrument_gaps.get(), 1u);
  poll();
  const auto snaps = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].second.instruments.ids, std::vector<uint32_t>{2});
  EXPECT_EQ(sub_->next_sequence(), 4u) << "the datagram stream itself is fine";
}

TEST_F(SubscriberTest, BookErrorRecoversThatInstrument) {
  start();
  publish_pairs(1);
  rx(feed_.dg(1));
  // A delete of an order the subscriber's book does not have, in sequence.
  Message m = Message::make_delete(2, 424242);
  m.instrument_seq = 2;
  rx(DatagramBuilder(2, kSession, kChannel, kPubSender).add(m).build());
  EXPECT_EQ(sub_->counters().book_errors.get(), 1u);
  poll();
  const auto snaps = ctl_.all<SnapshotRequest>();
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].second.instruments.ids, std::vector<uint32_t>{2});
  EXPECT_EQ(h_.iseqs(2), std::vector<uint32_t>{1}) << "the refused message is held, not delivered";
}

TEST_F(SubscriberTest, RefusedInstrumentRecoveryDropsTheInstrument) {
  start();
  publish_pairs(1);
  rx(feed_.dg(1));
  rx(feed_.heartbeat({2}, {}, {{2, 1}}));
  poll();
  const uint32_t rid = ctl_.all<SnapshotRequest>().at(0).first;
  reply(encode_control(rid, SnapshotDone{kSession, SnapshotStatus::kNotEntitled, 0, 0}));
  EXPECT_FALSE(sub_->wants(2));
  EXPECT_FALSE(sub_->recovering());
  publish_pairs(1);
  rx(feed_.dg(2));
  EXPECT_EQ(h_.iseqs(2), std::vector<uint32_t>{1});
  EXPECT_EQ(h_.iseqs(1), (std::vector<uint32_t>{1, 2}));
}

}  // namespace
}  // namespace mdcast::test
