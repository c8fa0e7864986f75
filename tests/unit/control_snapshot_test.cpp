// ControlService snapshots at a bounded cost: one shared copy of the books
// per interval, streamed as each client reads, a byte budget per client, a
// bounded queue per client, copies kept alive for slow readers capped.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "book_support.hpp"
#include "control_support.hpp"
#include "mdcast/feed/control_service.hpp"

namespace mdcast::test {
namespace {

using feed::ControlConfig;
using namespace wire;

// A subscriber's books from the snapshot frames of request rid.
book::BookSet books_from(const std::vector<ControlFrame>& v, uint32_t rid) {
  book::BookSet b(pub_config().books);
  apply_snapshot(with_rid(v, rid), b);
  return b;
}

const SnapshotDone* done_of(const std::vector<ControlFrame>& v, uint32_t rid) {
  for (const auto& f : v)
    if (f.request_id == rid && std::holds_alternative<SnapshotDone>(f.body)) return &std::get<SnapshotDone>(f.body);
  return nullptr;
}

void some_books(World& w) {
  w.publish(Message::make_definition(1, "ONE", 10, -2));
  w.publish(Message::make_status(1, TradingStatus::kTrading));
  for (uint32_t i = 0; i < 200; ++i) w.publish(w.add(i % 8));
  w.commit();
}

// A pair member (Boundaries::kInput): a snapshot copy must equal "every
// committed datagram", and only the application's flush may end the open
// one, so a request that comes while a datagram is open waits for the flush
// (tick() serves it then) instead of sealing it. Full and single-instrument
// copies alike; the open datagram is left as it was.
TEST(ControlSnapshot, WithInputBoundariesACopyWaitsForTheApplicationsFlush) {
  auto pc = pub_config();
  pc.flush_interval_ns = 0;
  pc.boundaries = feed::Boundaries::kInput;
  World w({}, pc);
  some_books(w);
  const uint64_t sealed = w.core.last_committed();
  w.publish(w.add(3));
  ASSERT_TRUE(w.core.has_open());
  w.subscribe(1);
  w.out.clear();
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 5));
  ASSERT_TRUE(w.send(1, SnapshotRequest{InstrumentSet{false, {2}}}, 6));
  w.now += kNsPerMs;
  w.svc.tick(w.now);
  EXPECT_TRUE(w.core.has_open()) << "the service sealed the application's open datagram";
  EXPECT_EQ(w.core.last_committed(), sealed);
  EXPECT_EQ(done_of(w.out.to(1), 5), nullptr);
  EXPECT_EQ(done_of(w.out.to(1), 6), nullptr);
  EXPECT_EQ(w.svc.counters().snapshot_builds.get() + w.svc.counters().snapshot_single_builds.get(), 0u);
  w.commit();  // the end of the upstream packet
  w.now += kNsPerMs;
  w.svc.tick(w.now);
  const auto frames = w.out.to(1);  // done_of points into these
  const SnapshotDone* full = done_of(frames, 5);
  const SnapshotDone* one = done_of(frames, 6);
  ASSERT_NE(full, nullptr);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(full->status, SnapshotStatus::kOk);
  EXPECT_EQ(full->snapshot_seq, sealed + 1) << "the copy is of the datagram the flush ended";
  EXPECT_EQ(one->snapshot_seq, sealed + 1);
  EXPECT_TRUE(books_from(w.out.to(1), 5).diff(3, w.core.books()).empty());
}

// The attack: 16-byte "all" requests, each of which used to serialize every
// book. 4096 of them (one 64 KiB write) within one interval: the books are
// serialized once, requests beyond the client's budget are refused with a
// time to retry, every request is answered, and another client is served.
TEST(ControlSnapshot, FloodOfFullRequestsBuildsOncePerIntervalAndIsRefusedBeyondTheBudget) {
  ControlConfig cc;
  cc.snapshot_interval_ns = 50 * kNsPerMs;
  cc.snapshot_min_cost = 4096;
  cc.snapshot_burst = 64.0 * 4096;  // some 64 requests of these small books
  cc.snapshot_rate = 100.0 * 4096;  // then 100 per second
  World w(cc);
  some_books(w);
  w.subscribe(1);
  w.subscribe(2);
  w.out.clear();
  for (uint32_t i = 0; i < 4096; ++i) {
    w.now += 10 * kNsPerUs;                   // 41 ms in all: one interval
    if (i % 64 == 0) {
      w.publish(w.add(i % 8));  // and the books keep changing
    }
    ASSERT_TRUE(w.send(1, SnapshotRequest{}, 1000 + i)) << "refusals are not errors held against the client";
    if (i == 2000) {
      ASSERT_TRUE(w.send(2, SnapshotRequest{}, 7));
    }
  }
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 1u);

  const auto v1 = w.out.to(1);
  std::set<uint32_t> answered;
  size_t refused = 0, replaced = 0;
  for (const auto& f : v1) {
    answered.insert(f.request_id);
    if (const auto* e = std::get_if<ErrorReply>(&f.body)) {
      EXPECT_EQ(e->code, ErrorCode::kOverloaded);
      if (e->text.find("replaced") != std::string::npos) {
        ++replaced;
      } else {
        ++refused;
        EXPECT_NE(e->text.find("retry after"), std::string::npos) << e->text;
      }
    }
  }
  EXPECT_EQ(answered.size(), 4096u) << "every request gets an answer";
  EXPECT_GT(refused, 4096u - 100) << "beyond the budget";
  const size_t served = count_of<SnapshotDone>(v1);
  EXPECT_GE(served, 10u) << "within it, served (this transport takes a whole small snapshot at once)";
  EXPECT_EQ(served + replaced + refused, 4096u);
  EXPECT_EQ(w.svc.counters().requests_overloaded.get(), refused);
  size_t data = 0;
  for (const auto& [c, f] : w.out.frames)
    if (c == 1 && load_le<uint8_t>(f.data() + ctl::kType) == static_cast<uint8_t>(CtlType::kSnapshotData))
      data += f.size();
  EXPECT_LE(static_cast<double>(data), cc.snapshot_burst + cc.snapshot_rate * 0.041 + 8192)
      << "what the client was sent is what its budget allows";

  const auto v2 = w.out.to(2);
  const auto* d2 = done_of(v2, 7);
  ASSERT_TRUE(d2) << "the other client is served";
  EXPECT_EQ(d2->status, SnapshotStatus::kOk);
  EXPECT_EQ(d2->instrument_count, 8u);

  // The next interval: one more build, whoever asks how often.
  w.now += 50 * kNsPerMs;
  w.publish(w.add(3));
  for (uint32_t i = 0; i < 100; ++i) {
    w.now += 10 * kNsPerUs;
    ASSERT_TRUE(w.send(2, SnapshotRequest{}, 20 + i));
  }
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 2u);
}

// A client reading slowly through a transport that reports its queue: the
// snapshot is produced while the queue is under the client's share and
// continues as it drains; the books move on meanwhile; the client ends up
// with the same books as a client served whole at the same moment, and as
// the publisher had when asked.
TEST(ControlSnapshot, StreamedAsTheClientReadsReassemblesToTheSameBooks) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 4096;
  cc.snapshot_share_bytes = 4096;
  World w(cc);
  some_books(w);
  w.big_book(3, 4500);  // 108 KB, three chunks
  w.big_book(5, 300);
  std::vector<uint64_t> want;
  for (uint32_t i = 0; i < 8; ++i) want.push_back(w.core.books().book(i).checksum());
  const uint32_t orders3 = w.core.books().book(3).order_count();

  Capture whole;  // a transport with no queue of its own
  w.out.queueing = true;
  w.subscribe(1);
  w.subscribe(2, &whole);
  w.out.drain(1);
  w.out.clear();
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 5));
  ASSERT_TRUE(w.send(2, SnapshotRequest{}, 6, &whole));
  EXPECT_TRUE(w.svc.has_pending(1));
  EXPECT_FALSE(w.svc.has_pending(2));
  constexpr size_t kLargestMessage = 28 + 2000 * 24;
  int rounds = 0;
  while (w.svc.has_pending(1) && rounds < 1000) {
    EXPECT_LE(w.out.queued_bytes(1), cc.snapshot_share_bytes + kLargestMessage + 64) << "round " << rounds;
    for (int k = 0; k < 5; ++k) w.publish(w.add(static_cast<uint32_t>(k) * 3 % 8));  // the feed goes on
    w.out.drain(1);
    w.now += 100 * kNsPerUs;
    w.svc.on_writable(1, w.now, w.out);
    ++rounds;
  }
  EXPECT_FALSE(w.svc.has_pending(1));
  EXPECT_GE(rounds, 3) << "produced in several rounds (one per 48 KB chunk of book 3), not queued whole";

  const auto v1 = w.out.to(1), v2 = whole.to(2);
  const auto* d1 = done_of(v1, 5);
  const auto* d2 = done_of(v2, 6);
  ASSERT_TRUE(d1 && d2);
  EXPECT_EQ(d1->snapshot_seq, d2->snapshot_seq) << "one copy serves both";
  EXPECT_EQ(d1->instrument_count, 8u);
  const auto streamed = books_from(v1, 5), at_once = books_from(v2, 6);
  for (uint32_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(streamed.book(i).checksum(), want[i]);
    EXPECT_EQ(at_once.book(i).checksum(), want[i]);
    EXPECT_EQ(streamed.diff(i, at_once), "");
  }
  EXPECT_EQ(streamed.book(3).order_count(), orders3);
  EXPECT_NE(w.core.books().book(3).checksum(), want[3]) << "the books did move on meanwhile";
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 1u);
}

// Over a transport that cannot say what it has queued (0 always), a poll
// produces a bounded amount and tick() carries on, clients in turn.
TEST(ControlSnapshot, WithoutAQueueToWatchEachPollProducesABoundedAmount) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 4096;
  cc.snapshot_client_poll_bytes = 8192;
  cc.snapshot_poll_bytes = 16384;
  World w(cc);
  w.big_book(3, 4500);
  w.big_book(6, 1500);
  for (ClientId c = 1; c <= 3; ++c) w.subscribe(c);
  w.out.clear();
  for (ClientId c = 1; c <= 3; ++c) ASSERT_TRUE(w.send(c, SnapshotRequest{}, 9));
  constexpr size_t kLargestMessage = 28 + 2000 * 24;
  size_t before = 0;
  for (const auto& [c, f] : w.out.frames) before += f.size();
  EXPECT_LE(before, 3 * (cc.snapshot_client_poll_bytes + kLargestMessage));
  int ticks = 0;
  while ((w.svc.has_pending(1) || w.svc.has_pending(2) || w.svc.has_pending(3)) && ticks < 1000) {
    const size_t n0 = w.out.frames.size();
    w.now += 100 * kNsPerUs;
    w.svc.tick(w.now);
    size_t made = 0;
    for (size_t k = n0; k < w.out.frames.size(); ++k) made += w.out.frames[k].second.size();
    EXPECT_LE(made, cc.snapshot_poll_bytes + 3 * kLargestMessage) << "tick " << ticks;
    ++ticks;
  }
  EXPECT_GT(ticks, 3);
  for (ClientId c = 1; c <= 3; ++c) {
    SCOPED_TRACE(c);
    const auto v = w.out.to(c);
    ASSERT_TRUE(done_of(v, 9));
    const auto b = books_from(v, 9);
    for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(w.core.books().diff(i, b), "") << i;
  }
}

// Within the interval too, a copy whose sequence is leaving the ring is
// built again: the subscriber could not fetch what follows it.
TEST(ControlSnapshot, ACopyLeavingTheRingIsBuiltAgain) {
  World w;
  some_books(w);
  w.subscribe(1);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 1));
  const uint64_t s0 = done_of(w.out.to(1), 1)->snapshot_seq;
  const size_t slots = w.core.ring().slots();
  while (w.core.last_committed() - s0 < slots / 2) {
    w.publish(w.add(1));
    w.commit();
  }
  w.now += kNsPerMs;
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 2));
  EXPECT_EQ(done_of(w.out.to(1), 2)->snapshot_seq, s0) << "half a lap: still served from the copy";
  while (w.core.last_committed() - s0 <= slots - slots / 4) {
    w.publish(w.add(1));
    w.commit();
  }
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 3));
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 2u);
  EXPECT_EQ(done_of(w.out.to(1), 3)->snapshot_seq, w.core.last_committed());
}

// A one-instrument request is a subscriber recovering that instrument: the
// copy answers it only if the book has not changed since.
TEST(ControlSnapshot, OneInstrumentIsNeverOlderThanTheRequest) {
  World w;
  some_books(w);
  w.subscribe(1);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 1));
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 1u);
  w.publish(w.add(2));  // changes book 2 (in the open datagram, not yet committed)
  w.out.clear();
  ASSERT_TRUE(w.send(1, SnapshotRequest{list({2})}, 2));
  EXPECT_EQ(w.svc.counters().snapshot_single_builds.get(), 1u);
  const auto v = w.out.to(1);
  const auto b2 = books_from(v, 2);
  EXPECT_EQ(w.core.books().diff(2, b2), "") << "the book as it is now";
  ASSERT_TRUE(done_of(v, 2));
  EXPECT_EQ(done_of(v, 2)->snapshot_seq, w.core.last_committed()) << "the open datagram was sealed for it";

  const uint64_t cached = w.svc.counters().snapshot_cached.get();
  ASSERT_TRUE(w.send(1, SnapshotRequest{list({1})}, 3));
  EXPECT_EQ(w.svc.counters().snapshot_single_builds.get(), 1u) << "book 1 is unchanged: the copy answers";
  EXPECT_EQ(w.svc.counters().snapshot_cached.get(), cached + 1);
  const auto b1 = books_from(w.out.to(1), 3);
  EXPECT_EQ(w.core.books().diff(1, b1), "");
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 1u);
}

// The same request id again after it was answered: the copy was older than
// the client's position. It waits for the next build, which it cannot
// bring forward; another request meanwhile gets the current copy.
TEST(ControlSnapshot, TheSameRequestAgainWaitsForANewerCopy) {
  ControlConfig cc;
  cc.snapshot_interval_ns = 50 * kNsPerMs;
  World w(cc);
  some_books(w);
  w.subscribe(1);
  w.subscribe(2);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 5));
  const uint64_t s0 = done_of(w.out.to(1), 5)->snapshot_seq;
  for (int i = 0; i < 20; ++i) w.publish(w.add(4));
  w.commit();
  w.out.clear();
  w.now += 10 * kNsPerMs;
  ASSERT_TRUE(w.send(2, SnapshotRequest{}, 5));
  ASSERT_TRUE(done_of(w.out.to(2), 5)) << "another client, the same id: served from the copy";
  EXPECT_EQ(done_of(w.out.to(2), 5)->snapshot_seq, s0);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 5));
  EXPECT_EQ(done_of(w.out.to(1), 5), nullptr);
  EXPECT_TRUE(w.svc.has_pending(1));
  w.now += 10 * kNsPerMs;
  w.svc.tick(w.now);
  EXPECT_TRUE(w.svc.has_pending(1)) << "not before the interval is over";
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 1u);
  w.now += 40 * kNsPerMs;
  w.svc.tick(w.now);
  const auto replies = w.out.to(1);  // d points into it
  const auto* d = done_of(replies, 5);
  ASSERT_TRUE(d);
  EXPECT_GT(d->snapshot_seq, s0);
  EXPECT_EQ(w.svc.counters().snapshot_builds.get(), 2u);
  const auto b = books_from(w.out.to(1), 5);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(w.core.books().diff(i, b), "") << i;
}

// One stream per client: the same id again is absorbed (the answer under
// way is its answer), a newer full request replaces the older one, which
// is told so.
TEST(ControlSnapshot, RepeatedAndReplacedRequests) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 4096;
  cc.snapshot_share_bytes = 4096;
  World w(cc);
  w.big_book(3, 4500);
  w.out.queueing = true;
  w.subscribe(1);
  w.out.drain(1);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 7));
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 7));
  EXPECT_EQ(w.svc.counters().snapshot_duplicates.get(), 1u);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 8));
  EXPECT_EQ(w.svc.counters().snapshot_replaced.get(), 1u);
  int rounds = 0;
  while (w.svc.has_pending(1) && rounds++ < 1000) {
    w.out.drain(1);
    w.svc.on_writable(1, w.now, w.out);
  }
  const auto v = w.out.to(1);
  EXPECT_EQ(done_of(v, 7), nullptr);
  const auto r7 = with_rid(v, 7);
  ASSERT_FALSE(r7.empty());
  const auto* e = std::get_if<ErrorReply>(&r7.back().body);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, ErrorCode::kOverloaded);
  EXPECT_NE(e->text.find("replaced by request 8"), std::string::npos) << e->text;
  ASSERT_TRUE(done_of(v, 8));
  const auto b = books_from(v, 8);
  EXPECT_EQ(w.core.books().diff(3, b), "");
}

// Whatever the service holds for a client is bounded, whatever it sends,
// and goes when it disconnects.
TEST(ControlSnapshot, WhatAClientHoldsIsBoundedAndGoesWithIt) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 4096;
  cc.snapshot_share_bytes = 4096;
  cc.max_snapshot_requests = 4;
  World w(cc);
  w.big_book(3, 4500);
  w.out.queueing = true;  // and client 1 never reads
  w.subscribe(1);
  w.subscribe(2);
  ASSERT_TRUE(w.send(1, SnapshotRequest{}, 1));  // stalls after its share
  for (uint32_t rid = 2; rid < 5; ++rid) ASSERT_TRUE(w.send(1, SnapshotRequest{list({rid})}, rid));
  EXPECT_EQ(w.svc.counters().snapshot_streams.get(), 4u);
  const size_t held = w.svc.client_bytes(1);
  w.out.clear();
  for (uint32_t rid = 5; rid < 2005; ++rid) {
    w.now += kNsPerMs;
    ASSERT_TRUE(w.send(1, SnapshotRequest{list({rid % 8})}, rid));
    ASSERT_TRUE(w.send(1, SnapshotRequest{list({0, 1, 2, 3, 4, 5, 6, 7})}, 100'000 + rid));  // replaces the full one
    ASSERT_TRUE(w.send(1, RetransmitRequest{900, 1, 5}, 200'000 + rid));
    if (rid % 100 == 0) w.svc.tick(w.now);
  }
  EXPECT_EQ(w.svc.counters().snapshot_streams.get(), 4u) << "the queue stays at its cap";
  EXPECT_LE(w.svc.client_bytes(1), held + 8 * sizeof(uint32_t)) << "a list of 8 in place of 'all'";
  for (const auto& f : w.out.to(1)) {
    if (const auto* e = std::get_if<ErrorReply>(&f.body)) {
      EXPECT_EQ(e->code, ErrorCode::kOverloaded) << e->text;
    }
  }
  EXPECT_LE(w.svc.counters().snapshot_bytes.get(), cc.snapshot_share_bytes + 28 + 2000 * 24 + 64)
      << "while it does not read, no more of its snapshot is produced: its share, and one message beyond";
  for (const auto& [c, f] : w.out.frames) EXPECT_LE(f.size(), 256u) << "refusals and replies of this loop are small";
  w.svc.on_disconnect(1);
  EXPECT_EQ(w.svc.client_bytes(1), 0u);
  EXPECT_FALSE(w.svc.has_pending(1));
  EXPECT_EQ(w.svc.counters().snapshot_streams.get(), 0u);
  w.svc.tick(w.now);
  // The other client is served as ever.
  w.out.clear();
  w.out.drain(2);
  ASSERT_TRUE(w.send(2, SnapshotRequest{list({3})}, 9));
  int rounds = 0;
  while (w.svc.has_pending(2) && rounds++ < 1000) {
    w.out.drain(2);
    w.svc.on_writable(2, w.now, w.out);
  }
  ASSERT_TRUE(done_of(w.out.to(2), 9));
}

// Slow readers keep old copies alive; at most max_snapshot_generations of
// them: the streams on the oldest are cut, with a clear error.
TEST(ControlSnapshot, SlowReadersPinAtMostMaxGenerationsCopies) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 4096;
  cc.snapshot_share_bytes = 4096;
  cc.max_snapshot_generations = 2;
  World w(cc);
  w.big_book(3, 4500);
  w.out.queueing = true;
  for (ClientId c = 1; c <= 4; ++c) w.subscribe(c);
  size_t one_copy = 0;
  for (ClientId c = 1; c <= 4; ++c) {
    w.publish(w.add(2));
    w.now += 60 * kNsPerMs;
    ASSERT_TRUE(w.send(c, SnapshotRequest{}, 50));
    EXPECT_EQ(w.svc.counters().snapshot_builds.get(), c);
    if (c == 1) one_copy = w.svc.snapshot_cache_bytes();
    EXPECT_LE(w.svc.snapshot_cache_bytes(), 2 * one_copy + 2 * 4096);
  }
  EXPECT_EQ(w.svc.counters().snapshot_abandoned.get(), 2u);
  for (ClientId c = 1; c <= 2; ++c) {
    const auto r = with_rid(w.out.to(c), 50);
    ASSERT_FALSE(r.empty());
    const auto* e = std::get_if<ErrorReply>(&r.back().body);
    ASSERT_TRUE(e) << c;
    EXPECT_EQ(e->code, ErrorCode::kOverloaded);
    EXPECT_NE(e->text.find("ask again"), std::string::npos) << e->text;
    EXPECT_FALSE(w.svc.has_pending(c));
  }
  EXPECT_TRUE(w.svc.has_pending(3));
  EXPECT_TRUE(w.svc.has_pending(4));
}

}  // namespace
}  // namespace mdcast::test
