// The in-memory control hub as a ReplySink for a streamed reply: it reports
// each link's queued reply bytes, and continues the reply through
// on_writable once the subscriber has taken what was queued.
#include <gtest/gtest.h>

#include "mdcast/media/mem/mem_medium.hpp"
#include "stream_server_support.hpp"

namespace mdcast::media::test {
namespace {

TEST(MemControlHub, QueuedBytesAndOnWritableCarryAStreamedReply) {
  mem::ControlHub hub;
  FakeHandler h;
  h.stream_chunks = 10;
  h.stream_chunk_bytes = 1000;
  h.stream_share = 3000;  // three chunks per turn
  mem::ControlLink& link = hub.connect();
  hub.pump(h, 1);
  ASSERT_TRUE(link.send(frame_of(44, 1, wire::CtlType::kSnapshotRequest)));
  hub.pump(h, 2);
  EXPECT_EQ(hub.queued_bytes(link.id()), 3000u);
  EXPECT_EQ(link.queued_bytes(), 3000u);
  EXPECT_EQ(h.writable_calls, 0u) << "not while the subscriber has not taken its replies";
  hub.pump(h, 3);
  EXPECT_EQ(h.writable_calls, 0u);
  std::vector<Bytes> got;
  Bytes f;
  for (uint64_t now = 4; now < 100 && got.size() < 10; ++now) {
    while (link.pop_reply(f)) got.push_back(f);
    EXPECT_EQ(link.queued_bytes(), 0u);
    hub.pump(h, now);
  }
  ASSERT_EQ(got.size(), 10u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(rid_of(got[i]), i);
  EXPECT_EQ(h.writable_calls, 3u);  // 3 + 3 + 3 + 1
  EXPECT_EQ(hub.counters().writable_calls.get(), 3u);
  EXPECT_FALSE(h.has_pending(link.id()));
  hub.disconnect(link);
  EXPECT_EQ(hub.queued_bytes(link.id()), 0u);
}

}  // namespace
}  // namespace mdcast::media::test
