// PublisherCore: batching into datagrams, flush timing, fragmentation,
// sequencing, rejection without side effects, back-pressure, heartbeats.
// Every committed datagram is checked with validate_datagram: what the
// publisher commits is exactly what subscribers must accept.
#include <gtest/gtest.h>

#include <cstring>

#include "book_support.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using feed::PublisherConfig;
using feed::PublisherCore;
using feed::PublishResult;
using namespace wire;

constexpr uint64_t kT = 1'000'000'000;

PublisherConfig config() {
  PublisherConfig c;
  c.channel = 3;
  c.session = 77;
  c.sender_id = 5;
  c.max_datagram = 256;  // 216 bytes of messages: six AddOrders
  c.max_message = 4096;
  c.flush_interval_ns = 10'000;
  c.heartbeat_interval_ns = 1'000'000;
  c.heartbeat_entries = 2;
  c.retransmit_bytes = 64u << 10;
  c.max_unsent = 16;
  c.books = {8, 1024, 16};
  return c;
}

struct Decoded {
  DatagramHeader h;
  std::vector<Bytes> messages;
};

Decoded decoded(std::span<const std::byte> d) {
  Decoded out;
  EXPECT_FALSE(d.empty());
  if (d.empty()) return out;
  uint32_t unknown = 0;
  EXPECT_EQ(validate_datagram(d, out.h, &unknown), DatagramCheck::kOk);
  EXPECT_EQ(unknown, 0u);
  MessageCursor c = MessageCursor::payload_of(d);
  MessageView v;
  while (c.next(v)) out.messages.emplace_back(v.bytes().begin(), v.bytes().end());
  return out;
}

class PublisherCoreTest : public ::testing::Test {
 protected:
  Message add(uint32_t inst, int64_t px = 100, uint32_t qty = 10, Side s = Side::kBuy) {
    return Message::make_add(inst, next_id_++, px, qty, s);
  }
  // Takes temporaries too; an lvalue gets its assigned instrument_seq back.
  template <class M>
  PublishResult stage(PublisherCore& p, M&& m) {
    return p.stage(m, now_);
  }
  uint64_t next_id_ = 1;
  uint64_t now_ = kT;
};

TEST_F(PublisherCoreTest, HeaderFieldsAndIdentity) {
  PublisherCore p(config());
  EXPECT_EQ(p.session(), 77u);
  EXPECT_EQ(p.datagram_capacity(), 216u);
  now_ = kT + 5;
  Message m = add(1);
  ASSERT_EQ(p.stage(m, now_), PublishResult::kOk);
  p.commit_open(now_ + 7);
  const Decoded d = decoded(p.datagram(1));
  EXPECT_EQ(d.h.channel, 3);
  EXPECT_EQ(d.h.session, 77u);
  EXPECT_EQ(d.h.sender, 5u);
  EXPECT_EQ(d.h.sequence, 1u);
  EXPECT_EQ(d.h.send_time_ns, kT + 5) << "stamped when its first message was published (batching delay counts)";
  EXPECT_EQ(d.h.flags, 0);
  ASSERT_EQ(d.messages.size(), 1u);
  EXPECT_EQ(to_hex(d.messages[0]), to_hex(encode_msg(m))) << "m carries its assigned iseq";
}

TEST_F(PublisherCoreTest, BatchesUntilTheDatagramIsFull) {
  PublisherCore p(config());
  std::vector<Message> sent;
  for (int i = 0; i < 5; ++i) {
    sent.push_back(add(1));
    ASSERT_EQ(stage(p, sent.back()), PublishResult::kOk);
  }
  EXPECT_TRUE(p.has_open());
  EXPECT_EQ(p.last_committed(), 0u) << "5 x 36 bytes + room for more: still open";
  // A delete (20 bytes) fills it to 200; a further one would not fit.
  sent.push_back(Message::make_delete(1, 1));
  ASSERT_EQ(stage(p, sent.back()), PublishResult::kOk);
  EXPECT_EQ(p.last_committed(), 0u);
  sent.push_back(Message::make_delete(1, 2));
  ASSERT_EQ(stage(p, sent.back()), PublishResult::kOk);
  EXPECT_EQ(p.last_committed(), 1u) << "the full datagram was sealed first";
  EXPECT_TRUE(p.has_open());
  const Decoded d = decoded(p.datagram(1));
  EXPECT_EQ(d.h.length, 40 + 5 * 36 + 20);
  ASSERT_EQ(d.messages.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(to_hex(d.messages[i]), to_hex(encode_msg(sent[i]))) << i;
  // Exactly full (6 adds = 216 bytes) seals at once, without waiting.
  PublisherCore q(config());
  for (int i = 0; i < 6; ++i) ASSERT_EQ(stage(q, add(2)), PublishResult::kOk);
  EXPECT_EQ(q.last_committed(), 1u);
  EXPECT_FALSE(q.has_open());
  EXPECT_EQ(decoded(q.datagram(1)).h.length, 256);
}

TEST_F(PublisherCoreTest, FlushInterval) {
  PublisherCore p(config());
  EXPECT_FALSE(p.flush_due(now_));
  ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  now_ += 4'000;
  ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  EXPECT_FALSE(p.flush_due(kT + 9'999)) << "measured from the first message";
  EXPECT_TRUE(p.flush_due(kT + 10'000));
  p.commit_open(kT + 10'000);
  EXPECT_FALSE(p.has_open());
  EXPECT_FALSE(p.flush_due(kT + 20'000));
  EXPECT_EQ(decoded(p.datagram(1)).messages.size(), 2u);
  p.commit_open(kT + 30'000);
  EXPECT_EQ(p.last_committed(), 1u) << "nothing open: commit_open does nothing";
}

TEST_F(PublisherCoreTest, NoBatchingWhenFlushIntervalIsZero) {
  auto c = config();
  c.flush_interval_ns = 0;
  PublisherCore p(c);
  for (uint64_t i = 1; i <= 5; ++i) {
    ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
    EXPECT_EQ(p.last_committed(), i);
    EXPECT_FALSE(p.has_open());
    EXPECT_EQ(decoded(p.datagram(i)).messages.size(), 1u);
  }
}

// A pair member (Boundaries::kInput): only a full datagram or the
// application's flush ends one; no timer does, and a heartbeat waits for the
// flush rather than sealing a datagram the other member would seal elsewhere.
TEST_F(PublisherCoreTest, InputBoundariesEndDatagramsOnlyWhenFullOrFlushed) {
  auto c = config();
  c.flush_interval_ns = 0;
  c.boundaries = feed::Boundaries::kInput;
  PublisherCore p(c);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  EXPECT_EQ(p.last_committed(), 0u) << "flush_interval 0 does not mean 'each message' here";
  EXPECT_FALSE(p.flush_due(now_ + 60 * kT)) << "no timer ends it";
  EXPECT_FALSE(p.may_seal());
  EXPECT_FALSE(p.heartbeat_due(now_ + 60 * kT)) << "a heartbeat would seal the open datagram";
  p.commit_open(now_);  // the application's flush
  EXPECT_EQ(p.last_committed(), 1u);
  EXPECT_EQ(decoded(p.datagram(1)).messages.size(), 3u);
  EXPECT_TRUE(p.may_seal());
  EXPECT_TRUE(p.heartbeat_due(now_ + 60 * kT));
  // Full still ends one: six adds fill 216 bytes.
  for (int i = 0; i < 6; ++i) ASSERT_EQ(stage(p, add(2)), PublishResult::kOk);
  EXPECT_EQ(p.last_committed(), 2u);
  // A flush timer beside input boundaries is a configuration error.
  c.flush_interval_ns = 10'000;
  EXPECT_THROW(PublisherCore{c}, Error);
}

TEST_F(PublisherCoreTest, InstrumentSequences) {
  PublisherCore p(config());
  std::vector<std::pair<uint32_t, uint32_t>> got;
  for (uint32_t inst : {1, 2, 1, 1, 2, 7}) {
    Message m = add(inst);
    ASSERT_EQ(stage(p, m), PublishResult::kOk);
    got.emplace_back(inst, m.instrument_seq);
  }
  std::byte payload[10]{};
  Message o = Message::make_opaque(2, payload);
  ASSERT_EQ(stage(p, o), PublishResult::kOk);
  got.emplace_back(2, o.instrument_seq);
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {2, 1}, {1, 2}, {1, 3}, {2, 2}, {7, 1}, {2, 3}}));
  EXPECT_EQ(p.books().book(1).instrument_seq(), 3u);
  EXPECT_EQ(p.books().book(2).instrument_seq(), 3u) << "opaque messages are sequenced too";
  EXPECT_EQ(p.books().book(0).instrument_seq(), 0u);
  EXPECT_EQ(p.counters().messages_published.get(), 7u);
}

TEST_F(PublisherCoreTest, FragmentsLargeMessagesAndTheyReassemble) {
  PublisherCore p(config());
  ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);  // left open: must be sealed before the fragments
  Bytes payload(1000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(static_cast<uint8_t>(i * 3 + 1));
  Message m = Message::make_opaque(4, payload);
  ASSERT_EQ(stage(p, m), PublishResult::kOk);
  EXPECT_EQ(m.instrument_seq, 1u);
  const Bytes whole = encode_msg(m);
  ASSERT_EQ(whole.size(), 1012u);
  // 196-byte pieces (216 - 20-byte fragment header): 6 fragments.
  EXPECT_EQ(p.last_committed(), 7u);
  EXPECT_EQ(decoded(p.datagram(1)).messages.size(), 1u) << "the open datagram went first";
  feed::Reassembler r(1, 4096);
  Bytes concat;
  uint32_t id = 0;
  for (uint64_t s = 2; s <= 7; ++s) {
    const Decoded d = decoded(p.datagram(s));
    ASSERT_EQ(d.messages.size(), 1u);
    const MessageView v(d.messages[0].data(), static_cast<uint16_t>(d.messages[0].size()));
    ASSERT_EQ(v.type(), MsgType::kFragment);
    const FragmentView f(v);
    EXPECT_EQ(f.instrument(), 4u);
    EXPECT_EQ(f.index(), s - 2);
    EXPECT_EQ(f.count(), 6);
    EXPECT_EQ(f.total_length(), 1012u);
    if (s == 2) id = f.message_id();
    EXPECT_EQ(f.message_id(), id);
    EXPECT_LE(d.h.length, 256);
    concat.insert(concat.end(), f.payload().begin(), f.payload().end());
    std::span<const std::byte> out;
    const auto res = r.add(f, out);
    if (s < 7) {
      EXPECT_EQ(res, feed::Reassembler::Result::kIncomplete);
    } else {
      ASSERT_EQ(res, feed::Reassembler::Result::kComplete);
      EXPECT_EQ(to_hex(out), to_hex(whole));
    }
  }
  EXPECT_EQ(concat, whole);
  EXPECT_EQ(p.counters().fragments_sent.get(), 6u);
  // The next fragmented message gets a new id.
  Message m2 = Message::make_opaque(4, payload);
  ASSERT_EQ(stage(p, m2), PublishResult::kOk);
  EXPECT_NE(FragmentView(MessageView(p.datagram(8).data() + 40, static_cast<uint16_t>(p.datagram(8).size() - 40)))
                .message_id(),
            id);
}

TEST_F(PublisherCoreTest, TooLarge) {
  PublisherCore p(config());
  Bytes big(4096 - 12 + 1);
  Message m = Message::make_opaque(1, big);
  EXPECT_EQ(stage(p, m), PublishResult::kTooLarge);
  Bytes fits(4096 - 12);
  EXPECT_EQ(stage(p, Message::make_opaque(1, fits)), PublishResult::kOk);
}

TEST_F(PublisherCoreTest, RejectionLeavesTheFeedUnchanged) {
  auto c = config();
  c.pacing.mode = feed::PacingMode::kFixed;
  c.pacing.rate = 1;
  c.pacing.burst = 2;
  PublisherCore p(c);
  ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  const std::string books = dump(p.books());
  const uint64_t committed = p.last_committed();
  const Message bad[] = {Message::make_delete(1, 999), Message::make_add(1, 1, 5, 5, Side::kBuy),
                         Message::make_add(1, 50, 5, 0, Side::kBuy), Message::make_modify(2, 1, 5, 5),
                         Message::make_add(8, 51, 5, 5, Side::kBuy)};
  const book::ApplyResult why[] = {book::ApplyResult::kUnknownOrder, book::ApplyResult::kDuplicateOrder,
                                   book::ApplyResult::kBadQuantity, book::ApplyResult::kUnknownOrder,
                                   book::ApplyResult::kBadInstrument};
  for (size_t i = 0; i < std::size(bad); ++i) {
    Message m = bad[i];
    EXPECT_EQ(p.stage(m, now_), PublishResult::kRejected) << i;
    EXPECT_EQ(p.last_reject(), why[i]) << i;
    EXPECT_EQ(m.instrument_seq, 0u) << "no sequence assigned";
  }
  EXPECT_EQ(dump(p.books()), books);
  EXPECT_EQ(p.last_committed(), committed);
  EXPECT_EQ(p.counters().messages_rejected.get(), std::size(bad));
  EXPECT_EQ(p.counters().messages_published.get(), 1u);
  // Rejections took no pacing tokens: the second of the burst is still there.
  Message ok = add(1);
  EXPECT_EQ(p.stage(ok, now_), PublishResult::kOk);
  EXPECT_EQ(ok.instrument_seq, 2u) << "no hole in the instrument sequence";
  p.commit_open(now_);
  const Decoded d = decoded(p.datagram(1));
  EXPECT_EQ(d.messages.size(), 2u) << "refused messages never reach the datagram";
}

TEST_F(PublisherCoreTest, BackPressureWhenUnsentDatagramsWait) {
  auto c = config();
  c.flush_interval_ns = 0;
  c.max_unsent = 4;
  PublisherCore p(c);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  EXPECT_EQ(p.next_unsent(), 1u);
  Message m = add(1);
  EXPECT_EQ(p.stage(m, now_), PublishResult::kBackPressured);
  EXPECT_EQ(m.instrument_seq, 0u);
  EXPECT_EQ(p.last_committed(), 4u);
  EXPECT_EQ(p.books().book(1).order_count(), 4u) << "not applied";
  EXPECT_EQ(p.counters().messages_back_pressured.get(), 1u);
  p.mark_sent(1, p.datagram(1).size(), now_);
  EXPECT_EQ(p.next_unsent(), 2u);
  EXPECT_EQ(p.stage(m, now_), PublishResult::kOk) << "the same message, retried";
  EXPECT_EQ(m.instrument_seq, 5u);
  EXPECT_EQ(p.counters().datagrams_sent.get(), 1u);
  EXPECT_EQ(p.counters().bytes_sent.get(), p.datagram(1).size());
}

TEST_F(PublisherCoreTest, PacingBackPressures) {
  auto c = config();
  c.pacing.mode = feed::PacingMode::kFixed;
  c.pacing.rate = 1000;
  c.pacing.burst = 3;
  PublisherCore p(c);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  Message m = add(1);
  EXPECT_EQ(p.stage(m, now_), PublishResult::kBackPressured);
  EXPECT_EQ(p.books().book(1).instrument_seq(), 3u);
  EXPECT_EQ(p.stage(m, now_ + kNsPerMs), PublishResult::kOk);
  EXPECT_EQ(p.counters().pacing_rate.get(), 1000u);
}

TEST_F(PublisherCoreTest, HeartbeatContents) {
  auto c = config();
  c.crc = true;
  PublisherCore p(c);
  for (uint32_t inst : {1, 3, 5}) ASSERT_EQ(stage(p, add(inst)), PublishResult::kOk);
  ASSERT_EQ(stage(p, add(3)), PublishResult::kOk);
  EXPECT_TRUE(p.has_open());
  auto hb = p.build_heartbeat(now_, false);
  EXPECT_FALSE(p.has_open()) << "the open datagram is committed first";
  EXPECT_EQ(p.last_committed(), 1u);
  std::vector<std::vector<uint32_t>> rotations;
  for (int k = 0; k < 3; ++k) {
    if (k > 0) hb = p.build_heartbeat(now_, k == 2);
    const Decoded d = decoded(hb);
    EXPECT_EQ(d.h.flags & kFlagUnsequenced, kFlagUnsequenced);
    EXPECT_EQ(d.h.flags & kFlagCrc, kFlagCrc);
    EXPECT_EQ((d.h.flags & kFlagEndOfSession) != 0, k == 2);
    EXPECT_EQ(d.h.sequence, 1u) << "repeats the last sequenced datagram";
    EXPECT_EQ(d.h.session, 77u);
    ASSERT_EQ(d.messages.size(), 1u);
    const HeartbeatView v(MessageView(d.messages[0].data(), static_cast<uint16_t>(d.messages[0].size())));
    EXPECT_EQ(v.last_seq(), 1u);
    EXPECT_EQ(v.global_checksum(), p.books().global_checksum());
    EXPECT_EQ(v.instrument_count(), 8u);
    ASSERT_EQ(v.entry_count(), 2) << "heartbeat_entries per heartbeat";
    std::vector<uint32_t> r;
    for (uint16_t i = 0; i < v.entry_count(); ++i) {
      const auto e = v.entry(i);
      r.push_back(e.instrument);
      EXPECT_EQ(e.instrument_seq, p.books().book(e.instrument).instrument_seq());
      EXPECT_EQ(e.checksum, p.books().book(e.instrument).checksum());
    }
    rotations.push_back(r);
  }
  // Only instruments with traffic, rotating: (1,3) (5,1) (3,5).
  EXPECT_EQ(rotations, (std::vector<std::vector<uint32_t>>{{1, 3}, {5, 1}, {3, 5}}));
}

TEST_F(PublisherCoreTest, HeartbeatEntriesFitTheDatagram) {
  auto c = config();
  c.heartbeat_entries = 100;
  c.books = {64, 1024, 16};
  PublisherCore p(c);
  for (uint32_t inst = 0; inst < 40; ++inst) ASSERT_EQ(stage(p, add(inst)), PublishResult::kOk);
  const Decoded d = decoded(p.build_heartbeat(now_, false));
  const HeartbeatView v(MessageView(d.messages[0].data(), static_cast<uint16_t>(d.messages[0].size())));
  EXPECT_EQ(v.entry_count(), (256 - 40 - 28) / 16);
  EXPECT_LE(d.h.length, 256);
}

TEST_F(PublisherCoreTest, HeartbeatBeforeAnyTraffic) {
  PublisherCore p(config());
  const Decoded d = decoded(p.build_heartbeat(now_, false));
  EXPECT_EQ(d.h.sequence, 0u);
  const HeartbeatView v(MessageView(d.messages[0].data(), static_cast<uint16_t>(d.messages[0].size())));
  EXPECT_EQ(v.last_seq(), 0u);
  EXPECT_EQ(v.entry_count(), 0);
}

TEST_F(PublisherCoreTest, HeartbeatDue) {
  PublisherCore p(config());
  EXPECT_TRUE(p.heartbeat_due(kT));
  p.mark_heartbeat_sent(kT);
  EXPECT_FALSE(p.heartbeat_due(kT + 999'999));
  EXPECT_TRUE(p.heartbeat_due(kT + 1'000'000));
  ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
  p.commit_open(kT + 500'000);
  p.mark_sent(1, 10, kT + 500'000);
  EXPECT_TRUE(p.heartbeat_due(kT + 1'000'000)) << "a busy feed still carries heartbeats (checksums) on the clock";
  p.mark_heartbeat_sent(kT + 1'000'000);
  EXPECT_FALSE(p.heartbeat_due(kT + 1'500'000));
  EXPECT_EQ(p.counters().heartbeats_sent.get(), 2u);
}

TEST_F(PublisherCoreTest, CrcFlag) {
  for (bool crc : {false, true}) {
    auto c = config();
    c.crc = crc;
    c.flush_interval_ns = 0;
    PublisherCore p(c);
    ASSERT_EQ(stage(p, add(1)), PublishResult::kOk);
    Bytes d(p.datagram(1).begin(), p.datagram(1).end());
    EXPECT_EQ((d[dgram::kFlags] & std::byte{kFlagCrc}) != std::byte{0}, crc);
    DatagramHeader h;
    ASSERT_EQ(validate_datagram(d, h), DatagramCheck::kOk);
    d.back() ^= std::byte{1};
    EXPECT_EQ(validate_datagram(d, h), crc ? DatagramCheck::kBadCrc : DatagramCheck::kOk);
  }
}

TEST_F(PublisherCoreTest, DatagramsStayRetrievableUntilTheRingWraps) {
  auto c = config();
  c.flush_interval_ns = 0;
  c.max_unsent = 1;
  // Caller-provided ring memory: exactly 50 slots of 320 bytes (an owned
  // mapping is rounded up to whole pages, huge ones where the host has them).
  const size_t bytes = history::RetransmitLog::memory_for(50 * 320, 256);
  auto mem = std::make_unique<std::byte[]>(bytes + 64);
  std::byte* aligned = mem.get() + (64 - reinterpret_cast<uintptr_t>(mem.get()) % 64) % 64;
  PublisherCore p(c, {aligned, bytes});
  const size_t slots = p.ring().slots();
  ASSERT_EQ(slots, 50u);
  for (uint64_t i = 1; i <= slots * 3; ++i) {
    Message m = Message::make_status(1, TradingStatus::kTrading);
    ASSERT_EQ(p.stage(m, now_), PublishResult::kOk) << i;
    p.mark_sent(i, p.datagram(i).size(), now_);
  }
  EXPECT_EQ(p.ring().newest(), slots * 3);
  EXPECT_TRUE(p.datagram(slots * 2).empty());
  EXPECT_FALSE(p.datagram(slots * 2 + 1).empty());
}

TEST_F(PublisherCoreTest, InvalidConfigsThrow) {
  auto c = config();
  c.max_datagram = 255;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.max_datagram = kMaxDatagram + 1;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.sender_id = 0;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.max_unsent = 0;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.max_message = 63;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.pacing.mode = feed::PacingMode::kFixed;
  c.pacing.rate = 0;
  EXPECT_THROW(PublisherCore{c}, Error);
  c = config();
  c.max_unsent = 100'000;  // cannot fit twice in a 64 KiB ring
  EXPECT_THROW(PublisherCore{c}, Error);
  // Caller-provided ring memory that is too small.
  c = config();
  alignas(64) static std::byte small[512];
  EXPECT_THROW((PublisherCore{c, std::span<std::byte>(small)}), Error);
}

// Every message a publisher accepts must be one its subscribers accept: a
// datagram failing validate_datagram is lost to every subscriber for good (a
// retransmit returns the same bytes), forcing snapshots forever after.
// Found by this test, since fixed: PublisherCore::stage() (src/feed/publisher_core.cpp) accepts
// messages no subscriber can receive - types that are not publishable
// (heartbeat, fragment, snapshot chunk: check() says kIgnored, encode()
// writes only their first 12 bytes and leaves ring garbage after them) and
// out-of-range Side / TradingStatus values (BookSet::check does not look at
// them). It should reject them with kRejected before touching the book.
TEST_F(PublisherCoreTest, AcceptedMessagesAlwaysValidate) {
  auto c = config();
  c.flush_interval_ns = 0;
  PublisherCore p(c);
  Message bad_side = add(1);
  bad_side.add.side = static_cast<Side>(2);
  Message bad_status = Message::make_status(1, static_cast<TradingStatus>(9));
  Message hb;
  hb.type = MsgType::kHeartbeat;
  hb.instrument = 1;
  Message frag;
  frag.type = MsgType::kFragment;
  frag.instrument = 1;
  Message chunk;
  chunk.type = MsgType::kSnapshotChunk;
  chunk.instrument = 1;
  for (Message m : {bad_side, bad_status, hb, frag, chunk}) {
    SCOPED_TRACE(std::string(to_string(m.type)));
    const uint64_t before = p.last_committed();
    const PublishResult r = p.stage(m, now_);
    if (r == PublishResult::kOk) {
      DatagramHeader h;
      EXPECT_EQ(validate_datagram(p.datagram(before + 1), h), DatagramCheck::kOk)
          << "accepted a message that makes an invalid datagram";
      EXPECT_NE(m.type, MsgType::kHeartbeat) << "a heartbeat inside a sequenced datagram is skipped by "
                                                "subscribers, leaving a hole in the instrument sequence";
    } else {
      EXPECT_EQ(r, PublishResult::kRejected);
    }
  }
}

// A relay whose upstream took a snapshot: the log goes on at the sequence
// after it, with the snapshot's books; nothing before is served.
TEST_F(PublisherCoreTest, BeginAtGoesOnFromASequenceWithTheBooksGiven) {
  PublisherConfig c = config();
  c.boundaries = feed::Boundaries::kInput;
  c.flush_interval_ns = 0;
  book::BookSet books(c.books);
  ASSERT_EQ(books.apply(Message::make_add(2, 900, 100, 4, Side::kBuy)), book::ApplyResult::kOk);
  books.set_instrument_seq(2, 17);

  PublisherCore p(c);
  ASSERT_TRUE(p.begin_at(500, books));
  EXPECT_EQ(p.first_sequence(), 500u);
  EXPECT_EQ(p.last_committed(), 499u);
  EXPECT_EQ(p.next_unsent(), 500u);
  EXPECT_EQ(p.books().book(2).checksum(), books.book(2).checksum());
  Message m = Message::make_delete(2, 900);  // an order only the books given hold
  ASSERT_EQ(stage(p, m), PublishResult::kOk);
  EXPECT_EQ(m.instrument_seq, 18u) << "instrument sequences go on from the snapshot's";
  p.commit_open(now_);
  EXPECT_EQ(p.last_committed(), 500u);
  EXPECT_EQ(decoded(p.datagram(500)).h.sequence, 500u);
  EXPECT_TRUE(p.datagram(499).empty());
  EXPECT_TRUE(p.datagram(1).empty());
  EXPECT_EQ(p.ring().oldest(), 500u);
  EXPECT_FALSE(p.begin_at(900, books)) << "datagram 500 was not handed to the medium yet";
  p.mark_sent(500, p.datagram(500).size(), now_);
  EXPECT_FALSE(p.begin_at(500, books)) << "not past the last committed";
  // A later snapshot: the session skips ahead to 900; what lies below is too old.
  ASSERT_TRUE(p.begin_at(900, books));
  EXPECT_EQ(p.ring().oldest(), 900u) << "nothing below the skip is served";
  EXPECT_EQ(p.first_sequence(), 900u);
  Message again = Message::make_delete(2, 900);
  ASSERT_EQ(stage(p, again), PublishResult::kOk) << "the books are the second snapshot's";
  EXPECT_EQ(again.instrument_seq, 18u);
  p.commit_open(now_);
  EXPECT_EQ(p.last_committed(), 900u);
  EXPECT_EQ(decoded(p.datagram(900)).h.sequence, 900u);

  PublisherCore q(c);
  ASSERT_EQ(stage(q, add(1)), PublishResult::kOk);
  EXPECT_FALSE(q.begin_at(10, books)) << "a datagram is open";
}

}  // namespace
}  // namespace mdcast::test
