// ControlService's subscriber table: a row per subscribed client (not per
// connection), what its status reports and requests say, given back when it
// leaves, bounded by the rows there are (the rest counted), refreshed from
// tick() at most every kRefreshNs.
#include <gtest/gtest.h>

#include <memory>
#include <new>

#include "control_support.hpp"
#include "mdcast/feed/subscriber_table.hpp"

namespace mdcast::test {
namespace {

using feed::SubscriberRow;
using feed::SubscriberTable;
using namespace wire;

// Rows in plain memory, as a counters file would hold them.
struct Rows {
  explicit Rows(size_t n)
      : bytes(n * SeqlockRows::stride(feed::kSubscriberRowWords)),
        mem(new(std::align_val_t{64}) std::byte[bytes]()),
        table(SeqlockRows(mem.get(), n, feed::kSubscriberRowWords)) {}
  SubscriberRow at(size_t i) const {
    SubscriberRow r;
    EXPECT_NE(SeqlockRows::read_struct(mem.get() + i * SeqlockRows::stride(feed::kSubscriberRowWords), r), UINT64_MAX);
    return r;
  }
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  size_t bytes;
  std::unique_ptr<std::byte[], Free> mem;
  SubscriberTable table;
};

TEST(ControlView, ASubscribedClientHasARowWithItsReportsAndRequests) {
  World w;
  Rows rows(4);
  w.svc.show_subscribers(&rows.table);
  for (int i = 0; i < 5; ++i) w.publish(w.add(1));
  w.commit();
  w.svc.on_connect(7, w.now);
  w.svc.on_peer(7, media::PeerInfo{media::PeerInfo::Kind::kUnix, 4242, 1000, 0, 0});
  EXPECT_EQ(rows.at(0).client, 0u) << "connected but not subscribed: no row";
  w.subscribe(7);
  SubscriberRow r = rows.at(0);
  EXPECT_EQ(r.client, 8u);  // the id + 1: 0 is a free row
  EXPECT_EQ(r.channel, 4u);
  EXPECT_EQ(r.pid, 4242u);
  EXPECT_EQ(r.peer, 1000u);
  EXPECT_EQ(r.flags & SubscriberRow::kSubscribed, SubscriberRow::kSubscribed);
  EXPECT_EQ(r.flags & SubscriberRow::kUnixPeer, SubscriberRow::kUnixPeer);
  EXPECT_EQ(r.report_ns, 0u);

  const uint64_t last = w.core.last_committed();
  ASSERT_GT(last, 0u);
  EXPECT_TRUE(w.send(7, StatusReport{1, 0, 3, 0}, 0));
  EXPECT_TRUE(w.send(7, RetransmitRequest{900, 1, 1}, 5));
  EXPECT_TRUE(w.send(7, RetransmitRequest{900, 0, 1}, 6));  // refused: from 0
  w.svc.tick(w.now);
  w.now += SubscriberTable::kRefreshNs;
  w.svc.tick(w.now);
  r = rows.at(0);
  EXPECT_EQ(r.position, 1u);
  EXPECT_EQ(r.lag, last);  // it has nothing: everything committed is behind it
  EXPECT_EQ(r.drops, 3u);
  EXPECT_EQ(r.retransmit_requests, 2u);
  EXPECT_EQ(r.datagrams_retransmitted, 1u);
  EXPECT_EQ(r.recoveries, 1u);
  EXPECT_EQ(r.refused, 1u);
  EXPECT_EQ(r.report_ns, kT);
  EXPECT_EQ(r.written_ns, w.now);
  EXPECT_EQ(r.latency_count, 0u) << "no latency reported yet";

  EXPECT_TRUE(w.send(7, LatencyReport{40, 2100, 8800, 15000}, 0));
  w.now += SubscriberTable::kRefreshNs;
  w.svc.tick(w.now);
  r = rows.at(0);
  EXPECT_EQ(r.latency_count, 40u);
  EXPECT_EQ(r.latency_p50_ns, 2100u);
  EXPECT_EQ(r.latency_p99_ns, 8800u);
  EXPECT_EQ(r.latency_max_ns, 15000u);

  w.svc.on_disconnect(7);
  EXPECT_EQ(rows.at(0).client, 0u) << "a client that left is gone at once";
}

// The ack tells a subscriber it may send latency; before it subscribed, a
// latency report is refused like any other frame that needs a subscription.
TEST(ControlView, TheAckOffersLatencyReportsAndOnlySubscribersMaySendThem) {
  World w;
  w.svc.on_connect(3, w.now);
  EXPECT_TRUE(w.send(3, LatencyReport{1, 1, 1, 1}, 9));
  auto replies = w.out.to(3);
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(replies[0].body));
  EXPECT_EQ(std::get<ErrorReply>(replies[0].body).code, ErrorCode::kNotSubscribed);
  w.subscribe(3);
  replies = w.out.to(3);
  ASSERT_EQ(replies.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<SubscribeAck>(replies[1].body));
  EXPECT_EQ(std::get<SubscribeAck>(replies[1].body).features & SubscribeAck::kAcceptsLatency,
            SubscribeAck::kAcceptsLatency);
}

TEST(ControlView, RowsAreBoundedAndTheRestCounted) {
  World w;
  Rows rows(2);
  w.svc.show_subscribers(&rows.table);
  for (ClientId c = 1; c <= 4; ++c) w.subscribe(c);
  EXPECT_EQ(rows.at(0).client, 2u);
  EXPECT_EQ(rows.at(1).client, 3u);
  EXPECT_EQ(w.svc.counters().subscribers_unlisted.get(), 2u);
  w.subscribe(3);  // subscribing again takes no second row
  EXPECT_EQ(w.svc.counters().subscribers_unlisted.get(), 2u);
  w.svc.on_disconnect(4);
  EXPECT_EQ(w.svc.counters().subscribers_unlisted.get(), 1u);
  w.svc.on_disconnect(1);
  EXPECT_EQ(rows.at(0).client, 0u);
  w.subscribe(5);  // a newcomer takes the free row
  EXPECT_EQ(rows.at(0).client, 6u);
}

TEST(ControlView, WithoutATableNothingIsWritten) {
  World w;
  w.subscribe(1);
  EXPECT_TRUE(w.send(1, StatusReport{1, 0, 0, 0}, 0));
  w.svc.tick(w.now);
  const auto row = w.svc.subscriber_row(1, w.now);
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->position, 1u);
  EXPECT_EQ(w.svc.counters().subscribers_unlisted.get(), 0u);
}

}  // namespace
}  // namespace mdcast::test
