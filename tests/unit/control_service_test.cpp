// ControlService: subscribe and entitlements, retransmits (including the
// filtered copies a partially entitled client gets), snapshots, error
// handling that isolates a misbehaving client, slowest-subscriber pacing.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "auth_support.hpp"
#include "book_support.hpp"
#include "control_support.hpp"
#include "mdcast/feed/control_service.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using feed::ClientId;
using feed::ControlConfig;
using feed::ControlService;
using feed::PublisherConfig;
using feed::PublisherCore;
using namespace wire;

class ControlServiceTest : public ::testing::Test {
 protected:
  explicit ControlServiceTest(ControlConfig cc = {}) : core_(pub_config()), svc_(std::move(cc), core_) {}

  void publish(Message m) {
    ASSERT_EQ(core_.stage(m, now_), feed::PublishResult::kOk) << book::to_string(core_.last_reject());
    // Pretend the medium took everything, so back-pressure never interferes.
    for (uint64_t s = core_.next_unsent(); s <= core_.last_committed(); ++s) core_.mark_sent(s, 0, now_);
  }
  void commit() {
    core_.commit_open(now_);
    for (uint64_t s = core_.next_unsent(); s <= core_.last_committed(); ++s) core_.mark_sent(s, 0, now_);
  }
  Message add(uint32_t inst, uint32_t qty = 10) { return Message::make_add(inst, next_id_++, 100, qty, Side::kBuy); }

  template <class Body>
  bool send(ClientId c, const Body& b, uint32_t rid = 1) {
    return svc_.on_frame(c, encode_control(rid, b), now_, out_);
  }
  bool subscribe(ClientId c, InstrumentSet set = {}, uint16_t channel = 4) {
    Subscribe s;
    s.channel = channel;
    s.sender_id = static_cast<uint32_t>(c);
    s.instruments = std::move(set);
    return send(c, s, 100);
  }

  uint64_t now_ = kT;
  uint64_t next_id_ = 1;
  PublisherCore core_;
  ControlService svc_;
  Capture out_;
};

TEST_F(ControlServiceTest, SubscribeGrantsEverythingWithoutEntitlements) {
  publish(add(1));
  commit();
  EXPECT_TRUE(subscribe(1));
  const auto ack = only<SubscribeAck>(out_.to(1));
  EXPECT_EQ(out_.to(1)[0].request_id, 100u);
  EXPECT_EQ(ack.session, 900u);
  EXPECT_EQ(ack.last_seq, 1u);
  EXPECT_EQ(ack.oldest_retransmit, 1u);
  EXPECT_EQ(ack.granted, ctl::kAll);
  EXPECT_EQ(svc_.clients(), 1u);
  EXPECT_EQ(svc_.counters().subscribes.get(), 1u);
  const auto views = svc_.client_views();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_TRUE(views[0].subscribed);
  EXPECT_EQ(views[0].sender_id, 1u);
}

TEST_F(ControlServiceTest, SubscribeToAListCountsIt) {
  EXPECT_TRUE(subscribe(1, list({1, 2, 3})));
  EXPECT_EQ(only<SubscribeAck>(out_.to(1)).granted, 3u);
}

// A subscription to no instrument watches the session (a relay's probe of
// its upstream): answered like any, but a publisher waiting for its
// subscribers does not count it - it leaves once it has the session.
TEST_F(ControlServiceTest, ASubscriptionToNoInstrumentIsNotCountedAsASubscriber) {
  publish(add(1));
  commit();
  EXPECT_TRUE(subscribe(1, list({})));
  const auto ack = only<SubscribeAck>(out_.to(1));
  EXPECT_EQ(ack.session, 900u);
  EXPECT_EQ(ack.granted, 0u);
  EXPECT_EQ(svc_.subscribed_clients(), 0u);
  EXPECT_TRUE(subscribe(2, list({1})));
  EXPECT_TRUE(subscribe(3));
  EXPECT_EQ(svc_.subscribed_clients(), 2u);
  EXPECT_TRUE(send(3, Unsubscribe{{}}));  // "all": it takes nothing now
  EXPECT_EQ(svc_.subscribed_clients(), 1u);
}

TEST_F(ControlServiceTest, SubscribeErrors) {
  EXPECT_TRUE(subscribe(1, {}, 5));
  EXPECT_EQ(only<ErrorReply>(out_.to(1)).code, ErrorCode::kUnknownChannel);
  out_.clear();
  EXPECT_TRUE(subscribe(1, list({8})));
  EXPECT_EQ(only<ErrorReply>(out_.to(1)).code, ErrorCode::kMalformed) << "id outside the books";
  EXPECT_EQ(out_.to(1)[0].request_id, 100u) << "errors echo the request id";
  out_.clear();
  EXPECT_TRUE(subscribe(1, list({UINT32_MAX})));
  EXPECT_EQ(only<ErrorReply>(out_.to(1)).code, ErrorCode::kMalformed);
  EXPECT_EQ(svc_.counters().requests_rejected.get(), 3u);
  EXPECT_EQ(svc_.counters().subscribes.get(), 0u);
  EXPECT_FALSE(svc_.client_views()[0].subscribed);
}

TEST_F(ControlServiceTest, RequestsBeforeSubscribeAreErrors) {
  EXPECT_TRUE(send(1, RetransmitRequest{900, 1, 1}));
  EXPECT_TRUE(send(1, SnapshotRequest{}));
  EXPECT_TRUE(send(1, Unsubscribe{}));
  const auto r = out_.to(1);
  ASSERT_EQ(r.size(), 3u);
  for (const auto& f : r) {
    ASSERT_TRUE(std::holds_alternative<ErrorReply>(f.body));
    EXPECT_EQ(std::get<ErrorReply>(f.body).code, ErrorCode::kNotSubscribed);
  }
}

TEST_F(ControlServiceTest, FramesAPublisherDoesNotTake) {
  EXPECT_TRUE(send(1, SubscribeAck{}));
  EXPECT_TRUE(send(1, SnapshotDone{}));
  EXPECT_TRUE(send(1, ErrorReply{}));
  for (const auto& f : out_.to(1)) EXPECT_EQ(std::get<ErrorReply>(f.body).code, ErrorCode::kUnsupported);
  EXPECT_EQ(out_.to(1).size(), 3u);
}

TEST_F(ControlServiceTest, RetransmitReturnsTheRingBytes) {
  for (int i = 0; i < 3; ++i) {
    publish(add(1));
    commit();
  }
  ASSERT_TRUE(subscribe(1));
  out_.clear();
  EXPECT_TRUE(send(1, RetransmitRequest{900, 2, 5}, 42));
  const auto v = out_.to(1);
  const auto r = only<RetransmitReply>(v);
  EXPECT_EQ(v[0].request_id, 42u);
  EXPECT_EQ(r.status, RetransmitStatus::kOk);
  EXPECT_EQ(r.session, 900u);
  EXPECT_EQ(r.from_seq, 2u);
  EXPECT_EQ(r.oldest_available, 1u);
  ASSERT_EQ(r.datagrams.size(), 2u) << "clipped to the newest";
  EXPECT_EQ(to_hex(r.datagrams[0]), to_hex(core_.datagram(2)));
  EXPECT_EQ(to_hex(r.datagrams[1]), to_hex(core_.datagram(3)));
  EXPECT_EQ(svc_.counters().retransmit_requests.get(), 1u);
  EXPECT_EQ(svc_.counters().datagrams_retransmitted.get(), 2u);
}

TEST_F(ControlServiceTest, RetransmitStatuses) {
  publish(add(1));
  commit();
  ASSERT_TRUE(subscribe(1));
  out_.clear();
  EXPECT_TRUE(send(1, RetransmitRequest{900, 2, 1}));
  EXPECT_EQ(only<RetransmitReply>(out_.to(1)).status, RetransmitStatus::kNotYet);
  out_.clear();
  EXPECT_TRUE(send(1, RetransmitRequest{899, 1, 1}));
  const auto ws = only<RetransmitReply>(out_.to(1));
  EXPECT_EQ(ws.status, RetransmitStatus::kWrongSession);
  EXPECT_EQ(ws.session, 900u) << "tells the client the current session";
  EXPECT_TRUE(ws.datagrams.empty());
  out_.clear();
  // Wrap the ring past sequence 1.
  const size_t slots = core_.ring().slots();
  for (size_t i = 0; i < slots + 1; ++i) {
    publish(Message::make_status(1, TradingStatus::kTrading));
    commit();
  }
  ASSERT_GT(core_.ring().oldest(), 1u);
  EXPECT_TRUE(send(1, RetransmitRequest{900, 1, 3}));
  const auto old = only<RetransmitReply>(out_.to(1));
  EXPECT_EQ(old.status, RetransmitStatus::kTooOld);
  EXPECT_EQ(old.oldest_available, core_.ring().oldest());
  EXPECT_TRUE(old.datagrams.empty());
  EXPECT_EQ(svc_.counters().retransmit_too_old.get(), 1u);
  out_.clear();
  // An empty range or sequence 0 is a malformed request.
  EXPECT_TRUE(send(1, RetransmitRequest{900, 0, 1}));
  EXPECT_TRUE(send(1, RetransmitRequest{900, 5, 0}));
  for (const auto& f : out_.to(1)) EXPECT_EQ(std::get<ErrorReply>(f.body).code, ErrorCode::kMalformed);
}

TEST_F(ControlServiceTest, RetransmitReplySizeCapGivesAPartialReply) {
  ControlConfig cc;
  cc.max_reply_bytes = 44 + 3 * (2 + 40 + 36);  // three one-add datagrams
  PublisherCore core(pub_config());
  ControlService svc(cc, core);
  Capture out;
  for (int i = 0; i < 6; ++i) {
    Message m = add(2);
    ASSERT_EQ(core.stage(m, now_), feed::PublishResult::kOk);
    core.commit_open(now_);
    core.mark_sent(core.last_committed(), 0, now_);
  }
  ASSERT_TRUE(svc.on_frame(1, encode_control(1, Subscribe{4, 1, {}}), now_, out));
  out.clear();
  ASSERT_TRUE(svc.on_frame(1, encode_control(2, RetransmitRequest{900, 1, 6}), now_, out));
  const auto r = only<RetransmitReply>(out.to(1));
  EXPECT_EQ(r.status, RetransmitStatus::kOk);
  ASSERT_EQ(r.datagrams.size(), 3u) << "the first three, in order; the client asks again for the rest";
  for (uint64_t s = 1; s <= 3; ++s) EXPECT_EQ(to_hex(r.datagrams[s - 1]), to_hex(core.datagram(s)));
  EXPECT_LE(out.frames[0].second.size(), cc.max_reply_bytes);
}

// Entitlements come with identities: "gold" may have everything, "silver"
// instruments 1 and 3 (auth_support.hpp). The handshake itself is auth_test's.
class EntitledTest : public ControlServiceTest {
 protected:
  static ControlConfig entitlements() {
    ControlConfig cc;
    cc.secrets = test_secrets();
    return cc;
  }
  EntitledTest() : ControlServiceTest(entitlements()) {}
  // Authenticates c as `identity` (once per client), then subscribes.
  bool subscribe(ClientId c, const std::string& identity, InstrumentSet set = {}) {
    if (!proven_[c]) {
      HandClient h;
      h.id = c;
      h.identity = identity;
      h.key_seed = identity == "gold" ? 1 : 2;
      EXPECT_TRUE(h.authenticate(svc_, out_, now_)) << identity;
      std::erase_if(out_.frames, [c](const auto& p) { return p.first == c; });  // the challenge
      proven_[c] = true;
    }
    return ControlServiceTest::subscribe(c, std::move(set));
  }
  std::map<ClientId, bool> proven_;
};

TEST_F(EntitledTest, CredentialsAndEntitlements) {
  EXPECT_TRUE(ControlServiceTest::subscribe(1));
  EXPECT_EQ(only<ErrorReply>(out_.to(1)).code, ErrorCode::kBadCredential) << "authentication is required";
  EXPECT_FALSE(svc_.admitted(1));
  out_.clear();
  EXPECT_TRUE(subscribe(1, "silver", list({1, 2})));
  EXPECT_EQ(only<ErrorReply>(out_.to(1)).code, ErrorCode::kNotEntitled);
  out_.clear();
  EXPECT_FALSE(svc_.admitted(1)) << "authenticated, but no subscription granted yet";
  EXPECT_TRUE(subscribe(1, "silver", list({3})));
  EXPECT_EQ(only<SubscribeAck>(out_.to(1)).granted, 1u);
  EXPECT_TRUE(svc_.admitted(1));
  out_.clear();
  EXPECT_TRUE(subscribe(2, "silver"));
  EXPECT_EQ(only<SubscribeAck>(out_.to(2)).granted, 2u) << "'all' grants what the credential allows";
  EXPECT_TRUE(subscribe(3, "gold"));
  EXPECT_EQ(only<SubscribeAck>(out_.to(3)).granted, ctl::kAll);
}

TEST_F(EntitledTest, RetransmitToAPartiallyEntitledClientIsFiltered) {
  // One datagram mixing entitled (1, 3) and unentitled (0, 2) instruments.
  for (uint32_t inst : {0, 1, 2, 3, 2}) publish(add(inst));
  commit();
  // A fragmented message of an unentitled instrument, and one of an entitled one.
  Bytes big(1500);
  publish(Message::make_opaque(2, big));
  publish(Message::make_opaque(3, big));
  const uint64_t last = core_.last_committed();
  ASSERT_TRUE(subscribe(1, "silver"));
  ASSERT_TRUE(subscribe(2, "gold"));
  out_.clear();
  ASSERT_TRUE(send(1, RetransmitRequest{900, 1, static_cast<uint32_t>(last)}));
  ASSERT_TRUE(send(2, RetransmitRequest{900, 1, static_cast<uint32_t>(last)}));
  const auto silver = only<RetransmitReply>(out_.to(1));
  const auto gold = only<RetransmitReply>(out_.to(2));
  ASSERT_EQ(silver.datagrams.size(), last);
  ASSERT_EQ(gold.datagrams.size(), last);
  for (uint64_t s = 1; s <= last; ++s) {
    SCOPED_TRACE(s);
    EXPECT_EQ(to_hex(gold.datagrams[s - 1]), to_hex(core_.datagram(s))) << "an entitled-to-all client gets the original";
    const auto d = silver.datagrams[s - 1];
    DatagramHeader h;
    ASSERT_EQ(validate_datagram(d, h), DatagramCheck::kOk) << "a filtered copy is a valid datagram";
    EXPECT_EQ(h.sequence, s);
    EXPECT_TRUE(h.flags & kFlagFiltered);
    EXPECT_TRUE(core_.tagged()) << "a feed with secrets tags its data";
    EXPECT_TRUE(tag_ok(d, core_.data_key())) << "the filtered copy is sealed again";
    MessageCursor c = MessageCursor::payload_of(d);
    MessageView v;
    uint16_t n = 0;
    while (c.next(v)) {
      ++n;
      const uint32_t inst = v.type() == MsgType::kFragment ? FragmentView(v).instrument() : v.instrument();
      EXPECT_TRUE(inst == 1 || inst == 3) << "leaked instrument " << inst;
    }
    EXPECT_EQ(n, h.message_count);
  }
  // The first datagram kept exactly the entitled messages, in order.
  DatagramHeader h;
  ASSERT_EQ(validate_datagram(silver.datagrams[0], h), DatagramCheck::kOk);
  EXPECT_EQ(h.message_count, 2);
  EXPECT_EQ(h.length, 40 + 2 * 36 + dgram::kTagSize);
}

TEST_F(EntitledTest, SnapshotEntitlement) {
  publish(add(1));
  publish(add(2));
  ASSERT_TRUE(subscribe(1, "silver"));
  out_.clear();
  EXPECT_TRUE(send(1, SnapshotRequest{list({2})}, 7));
  const auto v = out_.to(1);
  ASSERT_EQ(v.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<SnapshotDone>(v[0].body));
  EXPECT_EQ(std::get<SnapshotDone>(v[0].body).status, SnapshotStatus::kNotEntitled);
  EXPECT_EQ(v[0].request_id, 7u);
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(v[1].body));
  EXPECT_EQ(std::get<ErrorReply>(v[1].body).code, ErrorCode::kNotEntitled);
  out_.clear();
  // "All" means what the client subscribed to: instrument 1 only (3 has no data).
  EXPECT_TRUE(send(1, SnapshotRequest{}, 8));
  const auto w = out_.to(1);
  ASSERT_FALSE(w.empty());
  const auto& done = std::get<SnapshotDone>(w.back().body);
  EXPECT_EQ(done.status, SnapshotStatus::kOk);
  EXPECT_EQ(done.instrument_count, 1u);
}

TEST_F(ControlServiceTest, SnapshotOfEverythingRebuildsTheBooks) {
  publish(Message::make_definition(1, "ONE", 10, -2));
  publish(Message::make_status(1, TradingStatus::kTrading));
  for (int i = 0; i < 30; ++i) publish(add(static_cast<uint32_t>(i % 3)));
  publish(Message::make_delete(0, 1));
  publish(Message::make_status(2, TradingStatus::kHalted));
  EXPECT_TRUE(core_.has_open());
  ASSERT_TRUE(subscribe(1));
  out_.clear();
  EXPECT_TRUE(send(1, SnapshotRequest{}, 9));
  EXPECT_FALSE(core_.has_open()) << "the open datagram is sealed: the books equal the committed stream";
  const auto v = out_.to(1);
  ASSERT_GE(v.size(), 2u);
  const auto& done = std::get<SnapshotDone>(v.back().body);
  EXPECT_EQ(done.status, SnapshotStatus::kOk);
  EXPECT_EQ(done.session, 900u);
  EXPECT_EQ(done.snapshot_seq, core_.last_committed());
  EXPECT_EQ(done.instrument_count, 3u) << "instruments with data only";
  book::BookSet b(pub_config().books);
  apply_snapshot(v, b);
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(core_.books().diff(i, b), "") << i;
  EXPECT_TRUE(b.book(1).defined());
  EXPECT_EQ(b.book(1).definition().symbol_view(), "ONE");
  EXPECT_EQ(svc_.counters().snapshot_requests.get(), 1u);
  EXPECT_EQ(svc_.counters().snapshot_instruments.get(), 3u);
}

TEST_F(ControlServiceTest, SnapshotOfAListAndOfAnEmptyInstrument) {
  publish(add(1));
  publish(add(2));
  ASSERT_TRUE(subscribe(1));
  out_.clear();
  EXPECT_TRUE(send(1, SnapshotRequest{list({2, 5})}));
  const auto v = out_.to(1);
  std::map<uint32_t, int> chunks;
  book::BookSet b(pub_config().books);
  apply_snapshot(v, b, &chunks);
  EXPECT_EQ(chunks, (std::map<uint32_t, int>{{2, 1}, {5, 1}})) << "an untouched instrument gets an empty chunk";
  EXPECT_EQ(b.book(2).order_count(), 1u);
  EXPECT_EQ(b.book(1).order_count(), 0u);
  EXPECT_EQ(std::get<SnapshotDone>(v.back().body).instrument_count, 2u);
  out_.clear();
  EXPECT_TRUE(send(1, SnapshotRequest{list({8})}));
  const auto w = out_.to(1);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(std::get<SnapshotDone>(w[0].body).status, SnapshotStatus::kNotEntitled);
  EXPECT_EQ(std::get<ErrorReply>(w[1].body).code, ErrorCode::kMalformed);
}

TEST_F(ControlServiceTest, LargeBooksAreChunkedAndFramed) {
  ControlConfig cc;
  cc.snapshot_frame_bytes = 16u << 10;
  PublisherCore core(pub_config());
  ControlService svc(cc, core);
  Capture out;
  for (uint32_t i = 0; i < 4500; ++i) {
    Message m = Message::make_add(3, i + 1, 100 + i % 50, 1 + i, i % 2 ? Side::kBuy : Side::kSell);
    ASSERT_EQ(core.stage(m, now_), feed::PublishResult::kOk);
    core.commit_open(now_);
    core.mark_sent(core.last_committed(), 0, now_);
  }
  ASSERT_TRUE(svc.on_frame(1, encode_control(1, Subscribe{4, 1, {}}), now_, out));
  out.clear();
  ASSERT_TRUE(svc.on_frame(1, encode_control(2, SnapshotRequest{}), now_, out));
  const auto v = out.to(1);
  size_t data_frames = 0;
  std::vector<std::pair<uint16_t, uint16_t>> idx;
  for (const auto& f : v) {
    if (!std::holds_alternative<SnapshotData>(f.body)) continue;
    ++data_frames;
    const auto& sd = std::get<SnapshotData>(f.body);
    MessageCursor c(sd.messages.data(), sd.messages.size());
    MessageView m;
    while (c.next(m))
      if (m.type() == MsgType::kSnapshotChunk) idx.emplace_back(SnapshotChunkView(m).chunk_index(),
                                                                 SnapshotChunkView(m).chunk_count());
  }
  EXPECT_EQ(idx, (std::vector<std::pair<uint16_t, uint16_t>>{{0, 3}, {1, 3}, {2, 3}})) << "2000 orders per chunk";
  EXPECT_GE(data_frames, 3u) << "each 48 KB chunk exceeds the 16 KB frame target: one frame each";
  book::BookSet b(pub_config().books);
  apply_snapshot(v, b);
  EXPECT_EQ(core.books().diff(3, b), "");
  EXPECT_EQ(b.book(3).order_count(), 4500u);
}

TEST_F(ControlServiceTest, GarbageDisconnectsOnlyThatClient) {
  ControlConfig cc;
  cc.max_errors_per_client = 3;
  PublisherCore core(pub_config());
  ControlService svc(cc, core);
  Capture out;
  ASSERT_TRUE(svc.on_frame(2, encode_control(1, Subscribe{4, 2, {}}), now_, out));
  const Bytes garbage = from_hex("0c000000ff01000007000000");  // unknown type 255
  const Bytes truncated = from_hex("0500");
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(svc.on_frame(1, i % 2 ? truncated : garbage, now_, out)) << i;
    // The well-behaved client interleaves and is never refused.
    EXPECT_TRUE(svc.on_frame(2, encode_control(5, StatusReport{1, 0, 0, 0}), now_, out));
  }
  EXPECT_FALSE(svc.on_frame(1, garbage, now_, out)) << "the error beyond max_errors_per_client disconnects";
  const auto r1 = out.to(1);
  ASSERT_EQ(r1.size(), 4u) << "every bad frame is answered";
  for (const auto& f : r1) EXPECT_EQ(std::get<ErrorReply>(f.body).code, ErrorCode::kMalformed);
  EXPECT_EQ(r1[0].request_id, 7u) << "the request id is echoed when the header is readable";
  EXPECT_EQ(svc.counters().malformed_frames.get(), 4u);
  svc.on_disconnect(1);
  EXPECT_EQ(svc.clients(), 1u);
  EXPECT_EQ(svc.counters().client_disconnects.get(), 1u);
  out.clear();
  EXPECT_TRUE(svc.on_frame(2, encode_control(6, SnapshotRequest{}), now_, out));
  EXPECT_EQ(std::get<SnapshotDone>(out.to(2).back().body).status, SnapshotStatus::kOk);
  // Errors are counted per client: a fresh connection starts clean.
  svc.on_connect(1, now_);
  EXPECT_TRUE(svc.on_frame(1, garbage, now_, out));
}

// A snapshot request may list up to 2^20 ids. Repeats must not multiply the
// work: the publisher's thread builds the reply, so a 4 MB request naming one
// busy instrument a million times would stall the feed for every subscriber.
// Found by this test, since fixed: ControlService::handle(SnapshotRequest) (src/feed/control_service.cpp)
// copies the list as given into `ids`, so each repeat is snapshotted again
// (and instrument_count counts repeats). Fix: deduplicate (a vector<bool> of
// max_instruments, as the subscribe path already builds), or refuse lists
// longer than max_instruments.
TEST_F(ControlServiceTest, SnapshotListRepeatsAreNotAmplified) {
  for (int i = 0; i < 50; ++i) publish(add(2));
  ASSERT_TRUE(subscribe(1));
  out_.clear();
  ASSERT_TRUE(send(1, SnapshotRequest{list({2})}));
  size_t once = 0;
  for (const auto& [c, f] : out_.frames) once += f.size();
  out_.clear();
  ASSERT_TRUE(send(1, SnapshotRequest{list(std::vector<uint32_t>(1000, 2))}));
  size_t repeated = 0;
  for (const auto& [c, f] : out_.frames) repeated += f.size();
  EXPECT_EQ(repeated, once);
  EXPECT_EQ(std::get<SnapshotDone>(out_.to(1).back().body).instrument_count, 1u);
}

class PacingTest : public ::testing::Test {
 protected:
  static PublisherConfig cfg() {
    auto c = pub_config();
    c.pacing.mode = feed::PacingMode::kSlowest;
    c.pacing.rate = 50'000;
    c.pacing.min_rate = 1'000;
    c.pacing.report_ttl_ns = 2 * kNsPerSec;
    return c;
  }
  void report(ClientId c, uint64_t capacity) {
    ASSERT_TRUE(svc_.on_frame(c, encode_control(0, StatusReport{1, 0, 0, capacity}), now_, out_));
  }
  void sub(ClientId c) { ASSERT_TRUE(svc_.on_frame(c, encode_control(1, Subscribe{4, 1, {}}), now_, out_)); }
  uint64_t now_ = kT;
  PublisherCore core_{cfg()};
  ControlService svc_{ControlConfig{}, core_};
  Capture out_;
};

TEST_F(PacingTest, SlowestLiveSubscriberSetsTheRate) {
  EXPECT_EQ(core_.pacer().rate(), 50'000.0);
  sub(1);
  sub(2);
  sub(3);
  report(1, 20'000);
  EXPECT_EQ(core_.pacer().rate(), 20'000.0);
  report(2, 8'000);
  EXPECT_EQ(core_.pacer().rate(), 8'000.0);
  report(3, 0);  // "unknown" does not count
  EXPECT_EQ(core_.pacer().rate(), 8'000.0);
  EXPECT_EQ(svc_.counters().slowest_capacity.get(), 8'000u);
  EXPECT_EQ(svc_.counters().status_reports.get(), 3u);
  // Client 2 goes quiet: its report ages out, client 1 refreshes its own.
  now_ += kNsPerSec + kNsPerSec / 2;
  report(1, 30'000);
  EXPECT_EQ(core_.pacer().rate(), 8'000.0);
  now_ += kNsPerSec;
  svc_.tick(now_);
  EXPECT_EQ(core_.pacer().rate(), 30'000.0) << "the stale report is ignored";
  // A disconnected client no longer counts.
  report(2, 5'000);
  EXPECT_EQ(core_.pacer().rate(), 5'000.0);
  svc_.on_disconnect(2);
  svc_.tick(now_);
  EXPECT_EQ(core_.pacer().rate(), 30'000.0);
}

TEST_F(PacingTest, FloorsAtMinRateAndIgnoresUnsubscribed) {
  report(9, 10);  // not subscribed: ignored
  EXPECT_EQ(core_.pacer().rate(), 50'000.0);
  sub(1);
  report(1, 10);  // one hostile report cannot stall the feed
  EXPECT_EQ(core_.pacer().rate(), 1'000.0);
  now_ += 3 * kNsPerSec;
  svc_.tick(now_);
  EXPECT_EQ(core_.pacer().rate(), 50'000.0) << "no live reports: back to the configured rate";
  EXPECT_EQ(svc_.counters().slowest_capacity.get(), 0u);
}

TEST(ControlServicePacing, FixedModeIsNotOverridden) {
  auto c = pub_config();
  c.pacing.mode = feed::PacingMode::kFixed;
  c.pacing.rate = 7'000;
  PublisherCore core(c);
  ControlService svc(ControlConfig{}, core);
  Capture out;
  ASSERT_TRUE(svc.on_frame(1, encode_control(1, Subscribe{4, 1, {}}), kT, out));
  ASSERT_TRUE(svc.on_frame(1, encode_control(0, StatusReport{1, 0, 0, 100}), kT, out));
  EXPECT_EQ(core.pacer().rate(), 7'000.0);
  EXPECT_EQ(svc.counters().slowest_capacity.get(), 100u) << "still reported";
}

}  // namespace
}  // namespace mdcast::test
