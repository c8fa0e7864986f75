// Message codecs: every type round-trips, the views read what the writers
// wrote, and validate_message enforces each rule of the protocol.
#include <gtest/gtest.h>

#include <cstring>

#include "mdcast/wire/messages.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

MessageView view(const Bytes& b) { return MessageView(b.data(), static_cast<uint16_t>(b.size())); }

// Encodes, checks the framing, validates, decodes.
Message round_trip(const Message& m, size_t expected_size) {
  const Bytes b = encode_msg(m);
  EXPECT_EQ(b.size(), expected_size);
  EXPECT_EQ(load_le<uint16_t>(b.data() + msg::kLength), b.size());
  EXPECT_EQ(load_le<uint8_t>(b.data() + msg::kType), static_cast<uint8_t>(m.type));
  EXPECT_EQ(load_le<uint8_t>(b.data() + msg::kFlags), 0);
  EXPECT_EQ(validate_message(b.data(), static_cast<uint16_t>(b.size())), MessageCheck::kOk);
  return decode(view(b));
}

TEST(WireMessages, InstrumentDefinitionRoundTrips) {
  Message m = Message::make_definition(77, "ABCDEFGHIJKLMNOP-too-long", 250, -6);
  m.instrument_seq = 3;
  const Message d = round_trip(m, instrument_def::kSize);
  EXPECT_EQ(d.type, MsgType::kInstrumentDefinition);
  EXPECT_EQ(d.instrument, 77u);
  EXPECT_EQ(d.instrument_seq, 3u);
  // A 16-character symbol fills the field with no terminator; longer is cut.
  EXPECT_EQ(d.definition.symbol_view(), "ABCDEFGHIJKLMNOP");
  EXPECT_EQ(d.definition.lot_size, 250u);
  EXPECT_EQ(d.definition.price_exponent, -6);

  const Message s = round_trip(Message::make_definition(1, "XY", 1, 2), instrument_def::kSize);
  EXPECT_EQ(s.definition.symbol_view(), "XY");
  EXPECT_EQ(s.definition.price_exponent, 2);
}

TEST(WireMessages, AddOrderRoundTripsExtremes) {
  for (Side side : {Side::kBuy, Side::kSell}) {
    Message m = Message::make_add(0xfffffffeu, UINT64_MAX, INT64_MIN, UINT32_MAX, side);
    m.instrument_seq = UINT32_MAX;
    const Message d = round_trip(m, add_order::kSize);
    EXPECT_EQ(d.instrument, 0xfffffffeu);
    EXPECT_EQ(d.instrument_seq, UINT32_MAX);
    EXPECT_EQ(d.add.order_id, UINT64_MAX);
    EXPECT_EQ(d.add.price, INT64_MIN);
    EXPECT_EQ(d.add.quantity, UINT32_MAX);
    EXPECT_EQ(d.add.side, side);
  }
}

TEST(WireMessages, ModifyDeleteExecuteStatusRoundTrip) {
  Message mo = Message::make_modify(4, 99, -5, 7);
  mo.instrument_seq = 10;
  const Message dmo = round_trip(mo, modify_order::kSize);
  EXPECT_EQ(dmo.type, MsgType::kModifyOrder);
  EXPECT_EQ(dmo.modify.order_id, 99u);
  EXPECT_EQ(dmo.modify.price, -5);
  EXPECT_EQ(dmo.modify.quantity, 7u);
  EXPECT_EQ(dmo.instrument_seq, 10u);

  const Message dd = round_trip(Message::make_delete(4, 0x8000000000000001ull), delete_order::kSize);
  EXPECT_EQ(dd.type, MsgType::kDeleteOrder);
  EXPECT_EQ(dd.del.order_id, 0x8000000000000001ull);

  const Message de = round_trip(Message::make_execute(4, 12, INT64_MAX, 3, 0xabcdef0123ull), execute_order::kSize);
  EXPECT_EQ(de.type, MsgType::kExecuteOrder);
  EXPECT_EQ(de.execute.order_id, 12u);
  EXPECT_EQ(de.execute.price, INT64_MAX);
  EXPECT_EQ(de.execute.quantity, 3u);
  EXPECT_EQ(de.execute.trade_id, 0xabcdef0123ull);

  for (auto st : {TradingStatus::kPreOpen, TradingStatus::kTrading, TradingStatus::kHalted, TradingStatus::kClosed}) {
    const Message ds = round_trip(Message::make_status(9, st), trading_status::kSize);
    EXPECT_EQ(ds.type, MsgType::kTradingStatus);
    EXPECT_EQ(ds.status.status, st);
  }
}

TEST(WireMessages, OpaqueRoundTripsPayloadBytes) {
  Bytes payload(300);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte(static_cast<uint8_t>(i * 13 + 1));
  const Message m = Message::make_opaque(2, payload);
  const Bytes b = encode_msg(m);
  ASSERT_EQ(b.size(), opaque::kPayload + payload.size());
  ASSERT_EQ(validate_message(b.data(), static_cast<uint16_t>(b.size())), MessageCheck::kOk);
  const Message d = decode(view(b));
  ASSERT_EQ(d.opaque.size, payload.size());
  EXPECT_EQ(d.opaque.data, b.data() + opaque::kPayload) << "decode must view, not copy";
  EXPECT_EQ(0, std::memcmp(d.opaque.data, payload.data(), payload.size()));

  const Message empty = round_trip(Message::make_opaque(2, {}), opaque::kPayload);
  EXPECT_EQ(empty.opaque.size, 0);
}

TEST(WireMessages, OpaqueTooLargeForALengthHasSizeZero) {
  Bytes big(kMaxMessage - opaque::kPayload);
  EXPECT_EQ(encoded_size(Message::make_opaque(1, big)), kMaxMessage);
  Bytes bigger(kMaxMessage - opaque::kPayload + 1);
  EXPECT_EQ(encoded_size(Message::make_opaque(1, bigger)), 0u);
}

TEST(WireMessages, EncodeZeroesReservedBytes) {
  // Encoding into a dirty buffer must not leak old bytes into reserved fields:
  // receivers compare and checksum whole messages.
  Bytes b(64, std::byte{0xee});
  encode(Message::make_add(1, 2, 3, 4, Side::kSell), b.data());
  for (size_t i = add_order::kSide + 1; i < add_order::kSize; ++i) EXPECT_EQ(b[i], std::byte{0}) << i;
  std::fill(b.begin(), b.end(), std::byte{0xee});
  encode(Message::make_status(1, TradingStatus::kHalted), b.data());
  for (size_t i = trading_status::kStatus + 1; i < trading_status::kSize; ++i) EXPECT_EQ(b[i], std::byte{0}) << i;
  std::fill(b.begin(), b.end(), std::byte{0xee});
  encode(Message::make_definition(1, "A", 1, 1), b.data());
  for (size_t i = instrument_def::kPriceExponent + 1; i < instrument_def::kSize; ++i)
    EXPECT_EQ(b[i], std::byte{0}) << i;
  for (size_t i = instrument_def::kSymbol + 1; i < instrument_def::kSymbol + instrument_def::kSymbolLen; ++i)
    EXPECT_EQ(b[i], std::byte{0}) << "symbol padding " << i;
}

TEST(WireMessages, MarketDataClassification) {
  EXPECT_TRUE(is_market_data(MsgType::kAddOrder));
  EXPECT_TRUE(is_market_data(MsgType::kOpaque));
  EXPECT_TRUE(is_market_data(MsgType::kSnapshotChunk));
  EXPECT_FALSE(is_market_data(MsgType::kHeartbeat));
  EXPECT_FALSE(is_market_data(MsgType::kFragment));
  EXPECT_FALSE(is_market_data(static_cast<MsgType>(200)));
}

TEST(WireMessages, SnapshotChunkWriterAndView) {
  const std::vector<SnapshotChunkView::Entry> orders = {
      {1, 100, 10, Side::kBuy}, {0xffffffffffull, -7, UINT32_MAX, Side::kSell}, {3, 0, 1, Side::kBuy}};
  const Bytes b = snapshot_chunk_msg(12, 40, 0x123456789ull, 1, 3, TradingStatus::kHalted, orders);
  ASSERT_EQ(b.size(), snapshot_chunk::kOrders + 3 * snapshot_chunk::kEntrySize);
  ASSERT_EQ(validate_message(b.data(), static_cast<uint16_t>(b.size())), MessageCheck::kOk);
  const SnapshotChunkView v(view(b));
  EXPECT_EQ(v.instrument(), 12u);
  EXPECT_EQ(v.instrument_seq(), 40u);
  EXPECT_EQ(v.snapshot_seq(), 0x123456789ull);
  EXPECT_EQ(v.chunk_index(), 1);
  EXPECT_EQ(v.chunk_count(), 3);
  EXPECT_EQ(v.order_count(), 3);
  EXPECT_EQ(v.status(), TradingStatus::kHalted);
  for (size_t i = 0; i < orders.size(); ++i) {
    const auto e = v.order(i);
    EXPECT_EQ(e.order_id, orders[i].order_id);
    EXPECT_EQ(e.price, orders[i].price);
    EXPECT_EQ(e.quantity, orders[i].quantity);
    EXPECT_EQ(e.side, orders[i].side);
  }
}

TEST(WireMessages, HeartbeatWriterAndView) {
  const Bytes b = heartbeat_msg(555, 0xdeadbeefcafeull, 1024, {{1, 2, 3}, {UINT32_MAX, 7, UINT64_MAX}});
  ASSERT_EQ(b.size(), heartbeat::kEntries + 2 * heartbeat::kEntrySize);
  ASSERT_EQ(validate_message(b.data(), static_cast<uint16_t>(b.size())), MessageCheck::kOk);
  const HeartbeatView v(view(b));
  EXPECT_EQ(v.last_seq(), 555u);
  EXPECT_EQ(v.global_checksum(), 0xdeadbeefcafeull);
  EXPECT_EQ(v.instrument_count(), 1024u);
  ASSERT_EQ(v.entry_count(), 2);
  EXPECT_EQ(v.entry(0).instrument, 1u);
  EXPECT_EQ(v.entry(0).instrument_seq, 2u);
  EXPECT_EQ(v.entry(0).checksum, 3u);
  EXPECT_EQ(v.entry(1).instrument, UINT32_MAX);
  EXPECT_EQ(v.entry(1).checksum, UINT64_MAX);
  const Bytes empty = heartbeat_msg(0, 0, 0, {});
  EXPECT_EQ(validate_message(empty.data(), static_cast<uint16_t>(empty.size())), MessageCheck::kOk);
}

TEST(WireMessages, FragmentWriterAndView) {
  const Bytes piece = bytes_of("hello fragment");
  const Bytes b = fragment_msg(8, 0x01020304, 2, 5, 4000, piece);
  ASSERT_EQ(validate_message(b.data(), static_cast<uint16_t>(b.size())), MessageCheck::kOk);
  const FragmentView v(view(b));
  EXPECT_EQ(v.instrument(), 8u);
  EXPECT_EQ(v.message_id(), 0x01020304u);
  EXPECT_EQ(v.index(), 2);
  EXPECT_EQ(v.count(), 5);
  EXPECT_EQ(v.total_length(), 4000u);
  ASSERT_EQ(v.payload().size(), piece.size());
  EXPECT_EQ(0, std::memcmp(v.payload().data(), piece.data(), piece.size()));
}

// ---------------------------------------------------------------- validation --

MessageCheck check(const Bytes& b) { return validate_message(b.data(), static_cast<uint16_t>(b.size())); }

// Re-frames b at a new length (padding with zeros or cutting).
Bytes with_length(Bytes b, size_t len) {
  b.resize(len);
  store_le<uint16_t>(b.data() + msg::kLength, static_cast<uint16_t>(len));
  return b;
}

TEST(WireValidate, FixedSizeTypesNeedTheirExactSize) {
  const Message samples[] = {Message::make_definition(1, "S", 1, 0), Message::make_add(1, 2, 3, 4, Side::kBuy),
                             Message::make_modify(1, 2, 3, 4), Message::make_delete(1, 2),
                             Message::make_execute(1, 2, 3, 4, 5), Message::make_status(1, TradingStatus::kTrading)};
  for (const Message& m : samples) {
    SCOPED_TRACE(std::string(to_string(m.type)));
    const Bytes b = encode_msg(m);
    EXPECT_EQ(check(b), MessageCheck::kOk);
    EXPECT_EQ(check(with_length(b, b.size() - 1)), MessageCheck::kTooShort);
    EXPECT_EQ(check(with_length(b, msg::kHeaderSize)), MessageCheck::kTooShort);
    EXPECT_EQ(check(with_length(b, b.size() + 1)), MessageCheck::kBadLength);
    EXPECT_EQ(check(with_length(b, b.size() + 64)), MessageCheck::kBadLength);
  }
}

TEST(WireValidate, ShorterThanAMessageHeader) {
  const Bytes b = encode_msg(Message::make_delete(1, 2));
  for (uint16_t len = 0; len < msg::kHeaderSize; ++len)
    EXPECT_EQ(validate_message(b.data(), len), MessageCheck::kTooShort) << len;
}

TEST(WireValidate, VariableTypesHaveAFixedPrefix) {
  EXPECT_EQ(check(with_length(encode_msg(Message::make_opaque(1, {})), opaque::kPayload - 1)),
            MessageCheck::kTooShort);
  const Bytes hb = heartbeat_msg(1, 2, 3, {});
  EXPECT_EQ(check(with_length(hb, heartbeat::kEntries - 1)), MessageCheck::kTooShort);
  const Bytes sc = snapshot_chunk_msg(1, 1, 1, 0, 1, TradingStatus::kTrading, {});
  EXPECT_EQ(check(with_length(sc, snapshot_chunk::kOrders - 1)), MessageCheck::kTooShort);
  const Bytes fr = fragment_msg(1, 1, 0, 2, 100, bytes_of("x"));
  EXPECT_EQ(check(with_length(fr, fragment::kPayload - 1)), MessageCheck::kTooShort);
}

TEST(WireValidate, UnknownTypesAreReportedNotRejected) {
  for (uint8_t t : {0, 11, 99, 255}) {
    Bytes b(10);
    store_le<uint16_t>(b.data(), 10);
    store_le<uint8_t>(b.data() + msg::kType, t);
    EXPECT_EQ(check(b), MessageCheck::kUnknownType) << int{t};
    // Even a header-only unknown message is a valid skip.
    EXPECT_EQ(check(with_length(b, msg::kHeaderSize)), MessageCheck::kUnknownType) << int{t};
  }
}

TEST(WireValidate, SideAndStatusEnums) {
  Bytes add = encode_msg(Message::make_add(1, 2, 3, 4, Side::kSell));
  store_le<uint8_t>(add.data() + add_order::kSide, 2);
  EXPECT_EQ(check(add), MessageCheck::kBadField);
  store_le<uint8_t>(add.data() + add_order::kSide, 255);
  EXPECT_EQ(check(add), MessageCheck::kBadField);

  Bytes st = encode_msg(Message::make_status(1, TradingStatus::kClosed));
  EXPECT_EQ(check(st), MessageCheck::kOk);
  store_le<uint8_t>(st.data() + trading_status::kStatus, 4);
  EXPECT_EQ(check(st), MessageCheck::kBadField);
}

TEST(WireValidate, SnapshotChunkRules) {
  const std::vector<SnapshotChunkView::Entry> two = {{1, 1, 1, Side::kBuy}, {2, 2, 2, Side::kSell}};
  const Bytes ok = snapshot_chunk_msg(1, 5, 9, 0, 1, TradingStatus::kTrading, two);
  ASSERT_EQ(check(ok), MessageCheck::kOk);

  // Length must equal prefix + order_count entries, in both directions.
  EXPECT_EQ(check(with_length(ok, ok.size() - snapshot_chunk::kEntrySize)), MessageCheck::kBadLength);
  EXPECT_EQ(check(with_length(ok, ok.size() + snapshot_chunk::kEntrySize)), MessageCheck::kBadLength);
  EXPECT_EQ(check(with_length(ok, ok.size() - 1)), MessageCheck::kBadLength);
  Bytes huge_count = ok;
  store_le<uint16_t>(huge_count.data() + snapshot_chunk::kOrderCount, 0xffff);
  EXPECT_EQ(check(huge_count), MessageCheck::kBadLength);

  Bytes b = ok;
  store_le<uint16_t>(b.data() + snapshot_chunk::kChunkCount, 0);
  store_le<uint16_t>(b.data() + snapshot_chunk::kChunkIndex, 0);
  EXPECT_EQ(check(b), MessageCheck::kBadField) << "chunk count 0";
  b = ok;
  store_le<uint16_t>(b.data() + snapshot_chunk::kChunkIndex, 1);
  EXPECT_EQ(check(b), MessageCheck::kBadField) << "index == count";
  b = ok;
  store_le<uint8_t>(b.data() + snapshot_chunk::kStatus, 4);
  EXPECT_EQ(check(b), MessageCheck::kBadField) << "status";
  b = ok;
  store_le<uint8_t>(b.data() + snapshot_chunk::kOrders + snapshot_chunk::kEntrySize + snapshot_chunk::kEntrySide, 2);
  EXPECT_EQ(check(b), MessageCheck::kBadField) << "side of the last entry";
  // An empty chunk (a book with no orders) is valid.
  EXPECT_EQ(check(snapshot_chunk_msg(1, 5, 9, 0, 1, TradingStatus::kTrading, {})), MessageCheck::kOk);
}

TEST(WireValidate, HeartbeatLengthFollowsEntryCount) {
  const Bytes ok = heartbeat_msg(1, 2, 3, {{1, 1, 1}, {2, 2, 2}});
  ASSERT_EQ(check(ok), MessageCheck::kOk);
  EXPECT_EQ(check(with_length(ok, ok.size() - heartbeat::kEntrySize)), MessageCheck::kBadLength);
  EXPECT_EQ(check(with_length(ok, ok.size() + heartbeat::kEntrySize)), MessageCheck::kBadLength);
  EXPECT_EQ(check(with_length(ok, ok.size() + 1)), MessageCheck::kBadLength);
  Bytes b = ok;
  store_le<uint16_t>(b.data() + heartbeat::kEntryCount, 3);
  EXPECT_EQ(check(b), MessageCheck::kBadLength);
}

TEST(WireValidate, FragmentIndexCountAndTotal) {
  const Bytes piece = bytes_of("abcdef");
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, 100, piece)), MessageCheck::kOk);
  EXPECT_EQ(check(fragment_msg(1, 1, 1, 2, 100, piece)), MessageCheck::kOk);
  EXPECT_EQ(check(fragment_msg(1, 1, 2, 2, 100, piece)), MessageCheck::kBadField) << "index == count";
  EXPECT_EQ(check(fragment_msg(1, 1, 0xffff, 3, 100, piece)), MessageCheck::kBadField) << "index > count";
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 1, 100, piece)), MessageCheck::kBadField) << "a single fragment";
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 0, 100, piece)), MessageCheck::kBadField) << "count 0";
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, kMaxMessage, piece)), MessageCheck::kOk);
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, kMaxMessage + 1, piece)), MessageCheck::kBadField) << "total too big";
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, UINT32_MAX, piece)), MessageCheck::kBadField);
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, msg::kHeaderSize - 1, piece)), MessageCheck::kBadField)
      << "total below a message header";
  EXPECT_EQ(check(fragment_msg(1, 1, 0, 2, 100, {})), MessageCheck::kBadField) << "empty piece";
}

TEST(WireValidate, ToStringCoversEveryValue) {
  for (int t = 1; t <= 10; ++t) EXPECT_NE(to_string(static_cast<MsgType>(t)), "unknown") << t;
  EXPECT_EQ(to_string(static_cast<MsgType>(0)), "unknown");
  for (auto c : {MessageCheck::kOk, MessageCheck::kTooShort, MessageCheck::kBadLength, MessageCheck::kBadField,
                 MessageCheck::kUnknownType})
    EXPECT_NE(to_string(c), "?");
}

}  // namespace
}  // namespace mdcast::test
