// Control frames: every type round-trips; malformed frames are refused with
// a reason and never crash; FrameAssembler cuts a byte stream into frames
// however the stream was split.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "mdcast/wire/control.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

template <class T>
T parse_as(const Bytes& f, uint32_t expect_rid) {
  std::string why;
  auto p = parse_control(f, &why);
  EXPECT_TRUE(p.has_value()) << why;
  if (!p) return T{};
  EXPECT_EQ(p->request_id, expect_rid);
  EXPECT_TRUE(std::holds_alternative<T>(p->body)) << "wrong body type, index " << p->body.index();
  if (!std::holds_alternative<T>(p->body)) return T{};
  return std::get<T>(p->body);
}

// Parsing must fail with a non-empty reason.
void expect_malformed(const Bytes& f, std::string_view what) {
  std::string why;
  const auto p = parse_control(f, &why);
  EXPECT_FALSE(p.has_value()) << what;
  EXPECT_FALSE(why.empty()) << what;
  // A null reason pointer must be fine too.
  EXPECT_FALSE(parse_control(f, nullptr).has_value()) << what;
}

TEST(WireControl, HeaderLayout) {
  const Bytes f = encode_control(0x11223344, RetransmitRequest{1, 2, 3});
  EXPECT_EQ(load_le<uint32_t>(f.data() + ctl::kLength), f.size());
  EXPECT_EQ(load_le<uint8_t>(f.data() + ctl::kType), static_cast<uint8_t>(CtlType::kRetransmitRequest));
  EXPECT_EQ(load_le<uint8_t>(f.data() + ctl::kVersion), kVersion);
  EXPECT_EQ(load_le<uint16_t>(f.data() + 6), 0);
  EXPECT_EQ(load_le<uint32_t>(f.data() + ctl::kRequestId), 0x11223344u);
}

TEST(WireControl, SubscribeRoundTrips) {
  Subscribe s;
  s.channel = 0xbeef;
  s.sender_id = 0x12345678;
  s.instruments.all = false;
  s.instruments.ids = {0, 5, UINT32_MAX - 1};
  const auto r = parse_as<Subscribe>(encode_control(9, s), 9);
  EXPECT_EQ(r.channel, s.channel);
  EXPECT_EQ(r.sender_id, s.sender_id);
  EXPECT_FALSE(r.instruments.all);
  EXPECT_EQ(r.instruments.ids, s.instruments.ids);

  Subscribe all;
  const Bytes fa = encode_control(1, all);
  EXPECT_EQ(fa.size(), 24u) << "no credential travels: header, channel, 0, sender id, count";
  EXPECT_EQ(load_le<uint16_t>(fa.data() + 14), 0);
  const auto ra = parse_as<Subscribe>(fa, 1);
  EXPECT_TRUE(ra.instruments.all);

  Subscribe none;
  none.instruments.all = false;  // an explicit empty list is not "all"
  const auto rn = parse_as<Subscribe>(encode_control(1, none), 1);
  EXPECT_FALSE(rn.instruments.all);
  EXPECT_TRUE(rn.instruments.ids.empty());
}

TEST(WireControl, SessionQueryAndStatusRoundTrip) {
  (void)parse_as<SessionQuery>(encode_control(4, SessionQuery{}), 4);
  const auto s = parse_as<SessionStatus>(encode_control(5, SessionStatus{0xfedcba9876543210, 99, 7, true, 98}), 5);
  EXPECT_EQ(s.session, 0xfedcba9876543210u);
  EXPECT_EQ(s.last_seq, 99u);
  EXPECT_EQ(s.oldest_retransmit, 7u);
  EXPECT_TRUE(s.ended);
  EXPECT_EQ(s.end_seq, 98u);
  const auto live = parse_as<SessionStatus>(encode_control(5, SessionStatus{1, 99, 7, false, 98}), 5);
  EXPECT_FALSE(live.ended);
  EXPECT_EQ(live.end_seq, 0u) << "no end sequence travels before the end";
}

TEST(WireControl, SubscribeAckRoundTrips) {
  const auto r = parse_as<SubscribeAck>(encode_control(2, SubscribeAck{0x8000000000000077, 1ull << 40, 5, 12}), 2);
  EXPECT_EQ(r.session, 0x8000000000000077u) << "all 64 bits of the session";
  EXPECT_EQ(r.last_seq, 1ull << 40);
  EXPECT_EQ(r.oldest_retransmit, 5u);
  EXPECT_EQ(r.granted, 12u);
  EXPECT_EQ(r.features, 0u);
  const Bytes f = encode_control(2, SubscribeAck{1, 2, 3, 4, SubscribeAck::kAcceptsLatency});
  EXPECT_EQ(load_le<uint16_t>(f.data() + ctl::kFeatures), SubscribeAck::kAcceptsLatency)
      << "the features ride in the header's reserved bytes, which earlier subscribers ignore";
  EXPECT_EQ(parse_as<SubscribeAck>(f, 2).features, SubscribeAck::kAcceptsLatency);
}

TEST(WireControl, LatencyReportRoundTrips) {
  const LatencyReport in{7, 1'500, 90'000, UINT64_MAX};
  const auto r = parse_as<LatencyReport>(encode_control(0, in), 0);
  EXPECT_EQ(r.count, 7u);
  EXPECT_EQ(r.p50_ns, 1'500u);
  EXPECT_EQ(r.p99_ns, 90'000u);
  EXPECT_EQ(r.max_ns, UINT64_MAX);
  std::array<std::byte, ctl::kSmallFrame> buf{};
  const size_t n = encode_control(3, in, buf);
  ASSERT_EQ(n, 44u);
  EXPECT_EQ(Bytes(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n)), encode_control(3, in));
  EXPECT_EQ(encode_control(3, in, std::span<std::byte>(buf.data(), 43)), 0u) << "too short a buffer";
  EXPECT_EQ(to_string(CtlType::kLatencyReport), "latency-report");
}

TEST(WireControl, UnsubscribeAndSnapshotRequestRoundTrip) {
  Unsubscribe u;
  u.instruments.all = false;
  u.instruments.ids = {3, 1, 2};
  const auto ru = parse_as<Unsubscribe>(encode_control(3, u), 3);
  EXPECT_FALSE(ru.instruments.all);
  EXPECT_EQ(ru.instruments.ids, u.instruments.ids);
  EXPECT_TRUE(parse_as<Unsubscribe>(encode_control(3, Unsubscribe{}), 3).instruments.all);

  SnapshotRequest q;
  q.instruments.all = false;
  q.instruments.ids = {42};
  const auto rq = parse_as<SnapshotRequest>(encode_control(4, q), 4);
  EXPECT_EQ(rq.instruments.ids, std::vector<uint32_t>{42});
  EXPECT_TRUE(parse_as<SnapshotRequest>(encode_control(4, SnapshotRequest{}), 4).instruments.all);
}

TEST(WireControl, RetransmitRequestRoundTrips) {
  const auto r = parse_as<RetransmitRequest>(encode_control(5, RetransmitRequest{9, UINT64_MAX, 65535}), 5);
  EXPECT_EQ(r.session, 9u);
  EXPECT_EQ(r.from_seq, UINT64_MAX);
  EXPECT_EQ(r.count, 65535u);
}

// The encoders into a caller's buffer (what a subscriber's control round
// uses) write exactly what the allocating ones return, and nothing useful
// when the buffer is short: they report 0 and the caller sends nothing.
TEST(WireControl, EncodersIntoABufferMatchAndRefuseShortBuffers) {
  std::array<std::byte, 256> buf{};
  auto same = [&](size_t n, const Bytes& want, std::string_view what) {
    ASSERT_EQ(n, want.size()) << what;
    EXPECT_EQ(to_hex({buf.data(), n}), to_hex(want)) << what;
  };
  same(encode_control(5, RetransmitRequest{9, 77, 3}, buf), encode_control(5, RetransmitRequest{9, 77, 3}),
       "retransmit request");
  same(encode_control(6, SessionQuery{}, buf), encode_control(6, SessionQuery{}), "session query");
  same(encode_control(7, StatusReport{1, 2, 3, 4}, buf), encode_control(7, StatusReport{1, 2, 3, 4}), "status");
  const std::vector<uint32_t> ids{4, 1, 9};
  SnapshotRequest q;
  q.instruments.all = false;
  q.instruments.ids = ids;
  same(encode_control(8, SnapshotRequestView{false, ids}, buf), encode_control(8, q), "snapshot request, a list");
  same(encode_control(8, SnapshotRequestView{}, buf), encode_control(8, SnapshotRequest{}), "snapshot request, all");
  EXPECT_EQ(ctl::snapshot_request_size(ids.size()), encode_control(8, q).size());

  const std::span<std::byte> shorter(buf.data(), ctl::snapshot_request_size(ids.size()) - 1);
  EXPECT_EQ(encode_control(8, SnapshotRequestView{false, ids}, shorter), 0u);
  EXPECT_EQ(encode_control(5, RetransmitRequest{}, std::span<std::byte>(buf.data(), 31)), 0u);
  EXPECT_EQ(encode_control(6, SessionQuery{}, std::span<std::byte>(buf.data(), 11)), 0u);
  EXPECT_EQ(encode_control(7, StatusReport{}, std::span<std::byte>(buf.data(), 43)), 0u);
}

TEST(WireControl, RetransmitReplyRoundTripsDatagrams) {
  const Bytes d1 = DatagramBuilder(10).add(Message::make_delete(1, 1)).build();
  const Bytes d2 = DatagramBuilder(11).flags(kFlagCrc).add(Message::make_status(2, TradingStatus::kHalted)).build();
  RetransmitReplyBuilder b(6, 33, RetransmitStatus::kOk, 10, 4);
  ASSERT_TRUE(b.add(d1));
  ASSERT_TRUE(b.add(d2));
  EXPECT_EQ(b.count(), 2u);
  const Bytes f = std::move(b).finish();
  std::string why;
  const auto p = parse_control(f, &why);
  ASSERT_TRUE(p) << why;
  const auto& r = std::get<RetransmitReply>(p->body);
  EXPECT_EQ(p->request_id, 6u);
  EXPECT_EQ(r.session, 33u);
  EXPECT_EQ(r.status, RetransmitStatus::kOk);
  EXPECT_EQ(r.from_seq, 10u);
  EXPECT_EQ(r.oldest_available, 4u);
  ASSERT_EQ(r.datagrams.size(), 2u);
  EXPECT_EQ(to_hex(r.datagrams[0]), to_hex(d1));
  EXPECT_EQ(to_hex(r.datagrams[1]), to_hex(d2));
  // Views point into the frame: no copy.
  EXPECT_GE(r.datagrams[0].data(), f.data());
  EXPECT_LT(r.datagrams[1].data(), f.data() + f.size());

  for (auto st : {RetransmitStatus::kTooOld, RetransmitStatus::kNotYet, RetransmitStatus::kWrongSession}) {
    const auto e = parse_as<RetransmitReply>(RetransmitReplyBuilder(1, 2, st, 3, 4).finish(), 1);
    EXPECT_EQ(e.status, st);
    EXPECT_TRUE(e.datagrams.empty());
  }
}

TEST(WireControl, RetransmitReplyBuilderRespectsMaxFrame) {
  const Bytes d = DatagramBuilder(1).add(Message::make_delete(1, 1)).build();
  RetransmitReplyBuilder b(1, 1, RetransmitStatus::kOk, 1, 1);
  const size_t one = 44 + 2 + d.size();  // header fields + one entry
  EXPECT_TRUE(b.add(d, one));
  EXPECT_FALSE(b.add(d, one + 2 + d.size() - 1)) << "one byte short of the second";
  EXPECT_TRUE(b.add(d, one + 2 + d.size()));
  EXPECT_EQ(b.count(), 2u);
  const Bytes f = std::move(b).finish();
  EXPECT_EQ(f.size(), one + 2 + d.size());
  EXPECT_EQ(parse_as<RetransmitReply>(f, 1).datagrams.size(), 2u);
}

TEST(WireControl, RetransmitReplyMayCarryAnEmptyEntry) {
  // Not something the service sends, but the builder must not invoke UB on it
  // (memcpy from a null span), and the parser must keep the framing.
  RetransmitReplyBuilder b(1, 1, RetransmitStatus::kOk, 1, 1);
  ASSERT_TRUE(b.add({}));
  const auto r = parse_as<RetransmitReply>(std::move(b).finish(), 1);
  ASSERT_EQ(r.datagrams.size(), 1u);
  EXPECT_TRUE(r.datagrams[0].empty());
}

TEST(WireControl, SnapshotDataRoundTrips) {
  SnapshotDataBuilder b(7, 55);
  EXPECT_TRUE(b.empty());
  const Bytes def = encode_msg(Message::make_definition(3, "ABC", 1, -2));
  std::memcpy(b.reserve(def.size()), def.data(), def.size());
  const Bytes chunk = snapshot_chunk_msg(3, 8, 100, 0, 1, TradingStatus::kTrading, {{1, 2, 3, Side::kSell}});
  std::memcpy(b.reserve(chunk.size()), chunk.data(), chunk.size());
  EXPECT_FALSE(b.empty());
  const Bytes f = std::move(b).finish();
  const auto r = parse_as<SnapshotData>(f, 7);
  EXPECT_EQ(r.session, 55u);
  ASSERT_EQ(r.messages.size(), def.size() + chunk.size());
  EXPECT_EQ(validate_message_run(r.messages.data(), r.messages.size()), 2);
  EXPECT_EQ(0, std::memcmp(r.messages.data(), def.data(), def.size()));

  const auto e = parse_as<SnapshotData>(SnapshotDataBuilder(1, 2).finish(), 1);
  EXPECT_TRUE(e.messages.empty());
}

TEST(WireControl, SnapshotDoneStatusReportErrorRoundTrip) {
  const auto d = parse_as<SnapshotDone>(encode_control(8, SnapshotDone{1, SnapshotStatus::kNotEntitled, 3, 99}), 8);
  EXPECT_EQ(d.session, 1u);
  EXPECT_EQ(d.status, SnapshotStatus::kNotEntitled);
  EXPECT_EQ(d.instrument_count, 3u);
  EXPECT_EQ(d.snapshot_seq, 99u);

  const auto s = parse_as<StatusReport>(encode_control(0, StatusReport{1, 2, 3, UINT64_MAX}), 0);
  EXPECT_EQ(s.position, 1u);
  EXPECT_EQ(s.lag, 2u);
  EXPECT_EQ(s.drops, 3u);
  EXPECT_EQ(s.capacity, UINT64_MAX);

  const auto e = parse_as<ErrorReply>(encode_control(10, ErrorReply{ErrorCode::kNotEntitled, "no: 7"}), 10);
  EXPECT_EQ(e.code, ErrorCode::kNotEntitled);
  EXPECT_EQ(e.text, "no: 7");
}

TEST(WireControl, EncodersCapOverlongStrings) {
  const auto e = parse_as<ErrorReply>(encode_control(1, ErrorReply{ErrorCode::kMalformed, std::string(5000, 'e')}), 1);
  EXPECT_EQ(e.text.size(), 1024u);
}

// ------------------------------------------------------------- malformed --

// Every valid frame type, for the generic truncation/trailing-byte checks.
std::vector<std::pair<std::string, Bytes>> every_frame() {
  Subscribe s;
  s.instruments.all = false;
  s.instruments.ids = {1, 2};
  Unsubscribe u;
  u.instruments.all = false;
  u.instruments.ids = {1};
  SnapshotDataBuilder sd(1, 1);
  const Bytes m = encode_msg(Message::make_delete(1, 1));
  std::memcpy(sd.reserve(m.size()), m.data(), m.size());
  RetransmitReplyBuilder rr(1, 1, RetransmitStatus::kOk, 1, 1);
  rr.add(DatagramBuilder(1).build());
  return {
      {"subscribe", encode_control(1, s)},
      {"subscribe-all", encode_control(1, Subscribe{})},
      {"subscribe-ack", encode_control(1, SubscribeAck{})},
      {"unsubscribe", encode_control(1, u)},
      {"unsubscribe-all", encode_control(1, Unsubscribe{})},
      {"retransmit-request", encode_control(1, RetransmitRequest{1, 1, 1})},
      {"retransmit-reply", std::move(rr).finish()},
      {"snapshot-request", encode_control(1, SnapshotRequest{})},
      {"snapshot-data", std::move(sd).finish()},
      {"snapshot-done", encode_control(1, SnapshotDone{})},
      {"status-report", encode_control(1, StatusReport{})},
      {"latency-report", encode_control(1, LatencyReport{})},
      {"error", encode_control(1, ErrorReply{ErrorCode::kMalformed, "x"})},
      {"session-query", encode_control(1, SessionQuery{})},
      {"session-status", encode_control(1, SessionStatus{1, 2, 3, true, 2})},
  };
}

// Cuts or extends f and fixes up the length field, so only the body is wrong.
Bytes resized(Bytes f, size_t n) {
  f.resize(n);
  if (n >= 4) store_le<uint32_t>(f.data() + ctl::kLength, static_cast<uint32_t>(n));
  return f;
}

TEST(WireControlMalformed, EveryTruncationIsRefused) {
  for (const auto& [name, f] : every_frame()) {
    ASSERT_TRUE(parse_control(f, nullptr)) << name;
    for (size_t n = 0; n < f.size(); ++n) {
      // A snapshot-data frame cut at a message boundary is still valid.
      if (name == "snapshot-data" && n == ctl::kHeaderSize + 8) continue;
      expect_malformed(resized(f, n), name + " cut to " + std::to_string(n));
    }
  }
}

TEST(WireControlMalformed, TrailingBytesAreRefused) {
  for (const auto& [name, f] : every_frame()) {
    for (size_t extra : {1, 3, 4, 100}) {
      Bytes x = resized(f, f.size() + extra);
      expect_malformed(x, name + " + " + std::to_string(extra));
    }
  }
}

TEST(WireControlMalformed, LengthFieldMustMatch) {
  for (const auto& [name, f] : every_frame()) {
    Bytes x = f;
    store_le<uint32_t>(x.data(), static_cast<uint32_t>(f.size() + 1));
    expect_malformed(x, name + " length+1");
    store_le<uint32_t>(x.data(), static_cast<uint32_t>(f.size() - 1));
    expect_malformed(x, name + " length-1");
    store_le<uint32_t>(x.data(), 0);
    expect_malformed(x, name + " length 0");
  }
}

TEST(WireControlMalformed, UnknownTypeAndVersion) {
  Bytes f = encode_control(1, StatusReport{});
  for (uint8_t t : {0, 16, 200, 255}) {
    store_le<uint8_t>(f.data() + ctl::kType, t);
    std::string why;
    EXPECT_FALSE(parse_control(f, &why)) << int{t};
    EXPECT_NE(why.find("unknown"), std::string::npos) << why;
  }
  f = encode_control(1, StatusReport{});
  store_le<uint8_t>(f.data() + ctl::kVersion, 1);
  expect_malformed(f, "version 1");
}

TEST(WireControlMalformed, HugeCountsAreRefusedWithoutAllocating) {
  // Instrument list counts far beyond the frame: must not resize to the count.
  for (uint32_t n : {2u, 1000u, (1u << 20) + 1, 0xfffffffeu}) {
    Bytes f = encode_control(1, SnapshotRequest{});
    store_le<uint32_t>(f.data() + 12, n);
    expect_malformed(f, "snapshot-request count " + std::to_string(n));
    Bytes u = encode_control(1, Unsubscribe{});
    store_le<uint32_t>(u.data() + 12, n);
    expect_malformed(u, "unsubscribe count " + std::to_string(n));
    Bytes s = encode_control(1, Subscribe{});
    store_le<uint32_t>(s.data() + 20, n);
    expect_malformed(s, "subscribe count " + std::to_string(n));
  }
  // A retransmit reply claiming billions of datagrams.
  for (uint32_t n : {1u, 5u, 0x7fffffffu, 0xffffffffu}) {
    Bytes r = RetransmitReplyBuilder(1, 1, RetransmitStatus::kOk, 1, 1).finish();
    store_le<uint32_t>(r.data() + 24, n);
    expect_malformed(r, "retransmit-reply count " + std::to_string(n));
  }
  // A datagram length beyond the frame.
  RetransmitReplyBuilder b(1, 1, RetransmitStatus::kOk, 1, 1);
  b.add(DatagramBuilder(1).build());
  Bytes r = std::move(b).finish();
  store_le<uint16_t>(r.data() + 44, 0xffff);
  expect_malformed(r, "datagram length beyond frame");
}

TEST(WireControlMalformed, FieldRanges) {
  // Where the credential's length once was: an old client's secret is
  // refused, with a reason that says what changed.
  for (uint16_t legacy : {1, 4, 256, 257}) {
    Bytes s = encode_control(1, Subscribe{});
    store_le<uint16_t>(s.data() + 14, legacy);
    Bytes with_cred = resized(s, s.size() + legacy);
    std::string why;
    EXPECT_FALSE(parse_control(with_cred, &why)) << legacy;
    EXPECT_NE(why.find("credentials no longer travel"), std::string::npos) << why;
    EXPECT_FALSE(parse_control(s, nullptr)) << legacy;
  }
  Bytes rr = RetransmitReplyBuilder(1, 1, RetransmitStatus::kOk, 1, 1).finish();
  store_le<uint8_t>(rr.data() + 20, 4);
  expect_malformed(rr, "retransmit status 4");
  Bytes sd = encode_control(1, SnapshotDone{});
  store_le<uint8_t>(sd.data() + 20, 3);
  expect_malformed(sd, "snapshot status 3");
  Bytes ss = encode_control(1, SessionStatus{});
  store_le<uint8_t>(ss.data() + 36, 2);
  expect_malformed(ss, "session status flags 2");
  Bytes e = encode_control(1, ErrorReply{ErrorCode::kMalformed, ""});
  store_le<uint16_t>(e.data() + 14, 1025);
  expect_malformed(resized(e, e.size() + 1025), "error text 1025");
  // Snapshot data must hold a valid message run.
  SnapshotDataBuilder b(1, 1);
  Bytes add = encode_msg(Message::make_add(1, 2, 3, 4, Side::kBuy));
  store_le<uint8_t>(add.data() + add_order::kSide, 9);
  std::memcpy(b.reserve(add.size()), add.data(), add.size());
  expect_malformed(std::move(b).finish(), "snapshot data with a bad side");
}

TEST(WireControl, ToStringCoversEveryValue) {
  for (int t = 1; t <= 15; ++t) EXPECT_NE(to_string(static_cast<CtlType>(t)), "unknown") << t;
  for (int c = 1; c <= 8; ++c) EXPECT_NE(to_string(static_cast<ErrorCode>(c)), "unknown") << c;
  for (int s = 0; s <= 3; ++s) EXPECT_NE(to_string(static_cast<RetransmitStatus>(s)), "unknown") << s;
}

// ------------------------------------------------------------ assembler --

Bytes stream_of(const std::vector<std::pair<std::string, Bytes>>& frames) {
  Bytes s;
  for (const auto& [n, f] : frames) s.insert(s.end(), f.begin(), f.end());
  return s;
}

// Feeds `pieces` and collects frames as hex.
std::vector<std::string> assemble(FrameAssembler& a, const std::vector<std::span<const std::byte>>& pieces,
                                  bool* bad = nullptr) {
  std::vector<std::string> out;
  for (auto p : pieces) {
    a.append(p);
    std::span<const std::byte> f;
    for (;;) {
      const auto st = a.next(f);
      if (st == FrameAssembler::Status::kFrame) {
        out.push_back(to_hex(f));
        continue;
      }
      if (st == FrameAssembler::Status::kBadFrame && bad) *bad = true;
      break;
    }
  }
  return out;
}

TEST(WireFrameAssembler, SplitAtEveryByteBoundary) {
  const auto frames = every_frame();
  const Bytes s = stream_of(frames);
  std::vector<std::string> want;
  for (const auto& [n, f] : frames) want.push_back(to_hex(f));
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    FrameAssembler a;
    const std::span<const std::byte> all(s);
    const auto got = assemble(a, {all.first(cut), all.subspan(cut)});
    ASSERT_EQ(got, want) << "cut at " << cut;
    EXPECT_EQ(a.buffered(), 0u);
  }
  // Two cuts: every pair would be quadratic in a long stream; stride it.
  for (size_t c1 = 0; c1 <= s.size(); c1 += 7)
    for (size_t c2 = c1; c2 <= s.size(); c2 += 5) {
      FrameAssembler a;
      const std::span<const std::byte> all(s);
      ASSERT_EQ(assemble(a, {all.first(c1), all.subspan(c1, c2 - c1), all.subspan(c2)}), want) << c1 << "," << c2;
    }
}

TEST(WireFrameAssembler, OneByteAtATime) {
  const auto frames = every_frame();
  const Bytes s = stream_of(frames);
  FrameAssembler a;
  std::vector<std::span<const std::byte>> pieces;
  for (size_t i = 0; i < s.size(); ++i) pieces.push_back(std::span<const std::byte>(s).subspan(i, 1));
  const auto got = assemble(a, pieces);
  ASSERT_EQ(got.size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) EXPECT_EQ(got[i], to_hex(frames[i].second)) << frames[i].first;
}

TEST(WireFrameAssembler, NeedsMoreUntilComplete) {
  const Bytes f = encode_control(1, StatusReport{});
  FrameAssembler a;
  std::span<const std::byte> out;
  EXPECT_EQ(a.next(out), FrameAssembler::Status::kNeedMore);
  a.append(std::span<const std::byte>(f).first(3));
  EXPECT_EQ(a.next(out), FrameAssembler::Status::kNeedMore) << "length field incomplete";
  a.append(std::span<const std::byte>(f).subspan(3, f.size() - 4));
  EXPECT_EQ(a.next(out), FrameAssembler::Status::kNeedMore) << "one byte missing";
  EXPECT_EQ(a.buffered(), f.size() - 1);
  a.append(std::span<const std::byte>(f).last(1));
  ASSERT_EQ(a.next(out), FrameAssembler::Status::kFrame);
  EXPECT_EQ(out.size(), f.size());
  EXPECT_EQ(a.next(out), FrameAssembler::Status::kNeedMore);
}

TEST(WireFrameAssembler, BadLengthsAreBadFrames) {
  for (uint32_t len : {0u, 1u, 11u}) {
    FrameAssembler a;
    Bytes b(4);
    store_le<uint32_t>(b.data(), len);
    a.append(b);
    std::span<const std::byte> out;
    EXPECT_EQ(a.next(out), FrameAssembler::Status::kBadFrame) << len;
  }
  {
    FrameAssembler a(1000);
    Bytes b(4);
    store_le<uint32_t>(b.data(), 1001);
    a.append(b);
    std::span<const std::byte> out;
    EXPECT_EQ(a.next(out), FrameAssembler::Status::kBadFrame) << "over the configured max";
    store_le<uint32_t>(b.data(), 1000);
    FrameAssembler ok(1000);
    ok.append(b);
    EXPECT_EQ(ok.next(out), FrameAssembler::Status::kNeedMore) << "exactly the max is allowed";
  }
  {
    FrameAssembler a;
    Bytes b(4);
    store_le<uint32_t>(b.data(), static_cast<uint32_t>(ctl::kMaxFrame + 1));
    a.append(b);
    std::span<const std::byte> out;
    EXPECT_EQ(a.next(out), FrameAssembler::Status::kBadFrame) << "over the default max";
  }
  // A bad frame after good ones: the good ones come out first.
  const Bytes good = encode_control(1, StatusReport{});
  Bytes s = good;
  s.insert(s.end(), {std::byte{5}, std::byte{0}, std::byte{0}, std::byte{0}});
  FrameAssembler a;
  bool bad = false;
  EXPECT_EQ(assemble(a, {s}, &bad).size(), 1u);
  EXPECT_TRUE(bad);
}

TEST(WireFrameAssembler, ManySmallFramesCompact) {
  // Lazy compaction must not lose or corrupt frames over a long stream.
  FrameAssembler a;
  std::span<const std::byte> out;
  for (uint32_t i = 0; i < 5000; ++i) {
    const Bytes f = encode_control(i, RetransmitRequest{i, i, i});
    a.append(std::span<const std::byte>(f).first(5));
    if (i > 0) {
      ASSERT_EQ(a.next(out), FrameAssembler::Status::kFrame);
      const auto p = parse_control(out, nullptr);
      ASSERT_TRUE(p);
      ASSERT_EQ(p->request_id, i - 1);
    }
    a.append(std::span<const std::byte>(f).subspan(5));
  }
  ASSERT_EQ(a.next(out), FrameAssembler::Status::kFrame);
  EXPECT_EQ(a.next(out), FrameAssembler::Status::kNeedMore);
  EXPECT_EQ(a.buffered(), 0u);
}

}  // namespace
}  // namespace mdcast::test
