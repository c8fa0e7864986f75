// Datagram framing: the golden bytes that pin the wire format, and every
// reason validate_datagram (the one bounds-checked pass) rejects a datagram.
#include <gtest/gtest.h>

#include "mdcast/wire/datagram.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

// Golden datagram, protocol version 2. Derived by hand from protocol.hpp (and
// the CRC by an independent bitwise CRC-32C), not from the encoder, so a
// change to any offset, width or byte order fails here. Docs may quote it:
//
//   header   4d43 02 02 0700 0200 0807060504030201 2a00000000000000
//            00ca9a3b00000000 6000 0b0a 055ad587
//            magic 'MC', version 2, flags CRC, channel 7, 2 messages,
//            session 0x0102030405060708, sequence 42, send time 1e9 ns,
//            length 96, sender 0x0a0b, CRC-32C 0x87d55a05
//   add      2400 02 00 05000000 01000000 e903000000000000 44d6120000000000
//            2c010000 01 000000
//            36 bytes, AddOrder, instrument 5, iseq 1, order 1001,
//            price 1234500, qty 300, side sell, 3 reserved
//   delete   1400 04 00 05000000 02000000 e903000000000000
//            20 bytes, DeleteOrder, instrument 5, iseq 2, order 1001
constexpr std::string_view kGolden =
    "4d4302020700020008070605040302012a0000000000000000ca9a3b0000000060000b0a055ad587"
    "240002000500000001000000e90300000000000044d61200000000002c01000001000000"
    "140004000500000002000000e903000000000000";

Bytes golden_by_encoder() {
  Message add = Message::make_add(5, 1001, 1234500, 300, Side::kSell);
  add.instrument_seq = 1;
  Message del = Message::make_delete(5, 1001);
  del.instrument_seq = 2;
  return DatagramBuilder(42, 0x0102030405060708, 7, 0x0a0b)
      .flags(kFlagCrc)
      .send_time(1'000'000'000)
      .add(add)
      .add(del)
      .build();
}

TEST(WireDatagram, GoldenBytes) {
  const Bytes d = golden_by_encoder();
  EXPECT_EQ(to_hex(d), kGolden);
}

TEST(WireDatagram, GoldenBytesDecode) {
  const Bytes d = from_hex(kGolden);
  DatagramHeader h;
  uint32_t unknown = 99;
  ASSERT_EQ(validate_datagram(d, h, &unknown), DatagramCheck::kOk);
  EXPECT_EQ(unknown, 0u);
  EXPECT_EQ(h.flags, kFlagCrc);
  EXPECT_EQ(h.channel, 7);
  EXPECT_EQ(h.message_count, 2);
  EXPECT_EQ(h.session, 0x0102030405060708u);
  EXPECT_EQ(h.sender, 0x0a0bu);
  EXPECT_EQ(h.sequence, 42u);
  EXPECT_EQ(h.send_time_ns, 1'000'000'000u);
  EXPECT_EQ(h.length, 96);
  EXPECT_TRUE(h.sequenced());
  MessageCursor c = MessageCursor::payload_of(d);
  MessageView v;
  ASSERT_TRUE(c.next(v));
  const Message a = decode(v);
  EXPECT_EQ(a.type, MsgType::kAddOrder);
  EXPECT_EQ(a.add.order_id, 1001u);
  EXPECT_EQ(a.add.price, 1234500);
  EXPECT_EQ(a.add.side, Side::kSell);
  ASSERT_TRUE(c.next(v));
  EXPECT_EQ(decode(v).type, MsgType::kDeleteOrder);
  EXPECT_EQ(decode(v).instrument_seq, 2u);
  EXPECT_FALSE(c.next(v));
}

TEST(WireDatagram, HeaderRoundTrip) {
  DatagramHeader h;
  h.flags = kFlagUnsequenced | kFlagEndOfSession;
  h.channel = 0xfffe;
  h.message_count = 0x1234;
  h.session = 0xfedcba9876543210;
  h.sender = 1;
  h.sequence = UINT64_MAX;
  h.send_time_ns = 0x0102030405060708ull;
  h.length = 4096;
  Bytes b(dgram::kHeaderSize, std::byte{0xff});
  write_header(b.data(), h);
  EXPECT_EQ(load_le<uint32_t>(b.data() + dgram::kCrc), 0u);
  const DatagramHeader r = read_header(b.data());
  EXPECT_EQ(r.flags, h.flags);
  EXPECT_EQ(r.channel, h.channel);
  EXPECT_EQ(r.message_count, h.message_count);
  EXPECT_EQ(r.session, h.session);
  EXPECT_EQ(r.sender, h.sender);
  EXPECT_EQ(r.sequence, h.sequence);
  EXPECT_EQ(r.send_time_ns, h.send_time_ns);
  EXPECT_EQ(r.length, h.length);
  EXPECT_FALSE(r.sequenced());
}

DatagramCheck check(const Bytes& d, uint32_t* unknown = nullptr) {
  DatagramHeader h;
  return validate_datagram(d, h, unknown);
}

Bytes good(uint8_t flags = kFlagCrc) {
  return DatagramBuilder(5).flags(flags).add(Message::make_add(1, 2, 3, 4, Side::kBuy)).add(
      Message::make_delete(1, 2)).build();
}

TEST(WireValidateDatagram, AcceptsWellFormed) {
  EXPECT_EQ(check(good()), DatagramCheck::kOk);
  EXPECT_EQ(check(good(0)), DatagramCheck::kOk);
  // A header alone is a valid (empty) datagram.
  EXPECT_EQ(check(DatagramBuilder(1).build()), DatagramCheck::kOk);
  // Every known flag together, but the two checks of the same bytes (CRC, tag): one or the other.
  EXPECT_EQ(check(DatagramBuilder(1).flags(kKnownDatagramFlags & ~kFlagTag).build()), DatagramCheck::kOk);
  EXPECT_EQ(check(DatagramBuilder(1).flags(kKnownDatagramFlags & ~kFlagCrc).tag({}).build()), DatagramCheck::kOk);
}

TEST(WireValidateDatagram, TooShort) {
  const Bytes d = good();
  for (size_t n = 0; n < dgram::kHeaderSize; ++n)
    EXPECT_EQ(check(Bytes(d.begin(), d.begin() + static_cast<ptrdiff_t>(n))), DatagramCheck::kTooShort) << n;
}

TEST(WireValidateDatagram, BadMagicAndVersion) {
  Bytes d = good();
  d[0] = std::byte{'m'};
  EXPECT_EQ(check(d), DatagramCheck::kBadMagic);
  d = good();
  d[1] ^= std::byte{1};
  EXPECT_EQ(check(d), DatagramCheck::kBadMagic);
  d = good();
  store_le<uint8_t>(d.data() + dgram::kVersion, 1);  // the 32-bit-session format
  EXPECT_EQ(check(d), DatagramCheck::kBadVersion);
  store_le<uint8_t>(d.data() + dgram::kVersion, 3);
  EXPECT_EQ(check(d), DatagramCheck::kBadVersion);
  store_le<uint8_t>(d.data() + dgram::kVersion, 0);
  EXPECT_EQ(check(d), DatagramCheck::kBadVersion);
}

TEST(WireValidateDatagram, UnknownFlagBits) {
  for (uint8_t bit = 0x20; bit != 0; bit = static_cast<uint8_t>(bit << 1))
    EXPECT_EQ(check(DatagramBuilder(1).flags(bit).build()), DatagramCheck::kBadFlags) << int{bit};
}

TEST(WireValidateDatagram, LengthMismatch) {
  Bytes d = good();
  Bytes longer = d;
  longer.push_back(std::byte{0});
  EXPECT_EQ(check(longer), DatagramCheck::kBadLength) << "bytes beyond the header's length";
  Bytes shorter(d.begin(), d.end() - 1);
  EXPECT_EQ(check(shorter), DatagramCheck::kBadLength) << "truncated datagram";
  store_le<uint16_t>(d.data() + dgram::kLength, 0);
  EXPECT_EQ(check(d), DatagramCheck::kBadLength);
  // Above the largest medium payload even when consistent.
  Bytes big(kMaxDatagram + 4);
  DatagramHeader h;
  h.sequence = 1;
  h.length = static_cast<uint16_t>(big.size());
  write_header(big.data(), h);
  EXPECT_EQ(check(big), DatagramCheck::kBadLength);
}

TEST(WireValidateDatagram, BadCrcOnAnyByte) {
  const Bytes d = good();
  // Flipping any byte other than the flags (which would drop the CRC flag) and
  // the fields checked before the CRC must be caught by the CRC.
  for (size_t i = dgram::kChannel; i < d.size(); ++i) {
    if (i >= dgram::kLength && i < dgram::kLength + 2) continue;  // a length error is found first
    Bytes x = d;
    x[i] ^= std::byte{0x40};
    EXPECT_EQ(check(x), DatagramCheck::kBadCrc) << "byte " << i;
  }
  // Without the flag the CRC field is not looked at.
  Bytes plain = good(0);
  store_le<uint32_t>(plain.data() + dgram::kCrc, 0x12345678);
  EXPECT_EQ(check(plain), DatagramCheck::kOk);
}

TEST(WireValidateDatagram, SealCrcIgnoresTheOldCrcField) {
  Bytes d = good();
  const uint32_t crc = load_le<uint32_t>(d.data() + dgram::kCrc);
  store_le<uint32_t>(d.data() + dgram::kCrc, 0xffffffffu);
  seal_crc(d);
  EXPECT_EQ(load_le<uint32_t>(d.data() + dgram::kCrc), crc);
}

TEST(WireValidateDatagram, MessageOverrunsDatagram) {
  Bytes d = good(0);
  // First message claims more bytes than remain.
  store_le<uint16_t>(d.data() + dgram::kHeaderSize, static_cast<uint16_t>(d.size()));
  EXPECT_EQ(check(d), DatagramCheck::kBadMessage);
  // A message length below the message header would loop forever if accepted.
  for (uint16_t len : {0, 1, 3}) {
    d = good(0);
    store_le<uint16_t>(d.data() + dgram::kHeaderSize, len);
    EXPECT_EQ(check(d), DatagramCheck::kBadMessage) << len;
  }
  // Trailing bytes too few for a message header.
  for (size_t extra = 1; extra < msg::kHeaderSize; ++extra) {
    Bytes t = DatagramBuilder(3).add(Message::make_delete(1, 2)).force_count(1).build();
    t.resize(t.size() + extra);
    store_le<uint16_t>(t.data() + dgram::kLength, static_cast<uint16_t>(t.size()));
    EXPECT_EQ(check(t), DatagramCheck::kBadMessage) << extra;
  }
}

TEST(WireValidateDatagram, InvalidMessageInside) {
  Bytes add = encode_msg(Message::make_add(1, 2, 3, 4, Side::kBuy));
  store_le<uint8_t>(add.data() + add_order::kSide, 7);
  EXPECT_EQ(check(DatagramBuilder(1).add(Message::make_delete(1, 1)).raw(add).build()), DatagramCheck::kBadMessage);
  Bytes del = encode_msg(Message::make_delete(1, 2));
  del.push_back(std::byte{0});
  store_le<uint16_t>(del.data(), static_cast<uint16_t>(del.size()));
  EXPECT_EQ(check(DatagramBuilder(1).raw(del).build()), DatagramCheck::kBadMessage);
}

TEST(WireValidateDatagram, CountMismatch) {
  EXPECT_EQ(check(DatagramBuilder(1).add(Message::make_delete(1, 1)).force_count(2).build()),
            DatagramCheck::kBadCount);
  EXPECT_EQ(check(DatagramBuilder(1).add(Message::make_delete(1, 1)).force_count(0).build()),
            DatagramCheck::kBadCount);
  EXPECT_EQ(check(DatagramBuilder(1).force_count(1).build()), DatagramCheck::kBadCount);
}

TEST(WireValidateDatagram, SequenceZero) {
  EXPECT_EQ(check(DatagramBuilder(0).build()), DatagramCheck::kBadSequence);
  EXPECT_EQ(check(DatagramBuilder(0).flags(kFlagCrc).build()), DatagramCheck::kBadSequence);
  // Unsequenced datagrams (heartbeats before anything was published) may say 0.
  EXPECT_EQ(check(DatagramBuilder(0).flags(kFlagUnsequenced).raw(heartbeat_msg(0, 0, 0, {})).build()),
            DatagramCheck::kOk);
}

TEST(WireValidateDatagram, UnknownMessageTypesAreSkippedAndCounted) {
  Bytes u1(9);
  store_le<uint16_t>(u1.data(), 9);
  store_le<uint8_t>(u1.data() + msg::kType, 42);
  Bytes u2(4);
  store_le<uint16_t>(u2.data(), 4);
  store_le<uint8_t>(u2.data() + msg::kType, 0);
  const Bytes d = DatagramBuilder(8)
                      .flags(kFlagCrc)
                      .raw(u1)
                      .add(Message::make_delete(1, 1))
                      .raw(u2)
                      .add(Message::make_status(1, TradingStatus::kTrading))
                      .build();
  uint32_t unknown = 0;
  ASSERT_EQ(check(d, &unknown), DatagramCheck::kOk);
  EXPECT_EQ(unknown, 2u);
  // The cursor still walks every message, unknown ones included.
  MessageCursor c = MessageCursor::payload_of(d);
  MessageView v;
  std::vector<uint8_t> types;
  while (c.next(v)) types.push_back(static_cast<uint8_t>(v.type()));
  EXPECT_EQ(types, (std::vector<uint8_t>{42, 4, 0, 6}));
  // The count output is reset, not accumulated.
  unknown = 1000;
  ASSERT_EQ(check(good(), &unknown), DatagramCheck::kOk);
  EXPECT_EQ(unknown, 0u);
}

TEST(WireValidateDatagram, ChecksRunInDocumentedOrder) {
  // A datagram broken in several ways reports the earliest check.
  Bytes d = DatagramBuilder(0).flags(0x80).force_count(3).build();
  EXPECT_EQ(check(d), DatagramCheck::kBadFlags);
  d = DatagramBuilder(0).flags(kFlagCrc).force_count(3).build();
  d[dgram::kHeaderSize - 1] ^= std::byte{1};  // CRC wrong too
  EXPECT_EQ(check(d), DatagramCheck::kBadSequence);
  d = DatagramBuilder(1).flags(kFlagCrc).force_count(3).build();
  d[dgram::kCrc] ^= std::byte{1};
  EXPECT_EQ(check(d), DatagramCheck::kBadCrc);
}

TEST(WireValidateDatagram, MessageRun) {
  Bytes run = encode_msg(Message::make_delete(1, 1));
  const Bytes b = encode_msg(Message::make_status(1, TradingStatus::kHalted));
  run.insert(run.end(), b.begin(), b.end());
  EXPECT_EQ(validate_message_run(run.data(), run.size()), 2);
  EXPECT_EQ(validate_message_run(run.data(), 0), 0);
  EXPECT_EQ(validate_message_run(run.data(), run.size() - 1), -1);
  EXPECT_EQ(validate_message_run(run.data(), 3), -1);
  // Unknown types are counted by the validating pass itself.
  Bytes u(6);
  store_le<uint16_t>(u.data(), 6);
  store_le<uint8_t>(u.data() + msg::kType, 77);
  run.insert(run.end(), u.begin(), u.end());
  uint32_t unknown = 99;
  EXPECT_EQ(validate_message_run(run.data(), run.size(), &unknown), 3);
  EXPECT_EQ(unknown, 1u);
  unknown = 99;
  EXPECT_EQ(validate_message_run(run.data(), run.size() - 1, &unknown), -1);
  EXPECT_EQ(unknown, 99u) << "a malformed run leaves the count alone";
}

TEST(WireValidateDatagram, ToStringCoversEveryValue) {
  for (int c = 0; c <= static_cast<int>(DatagramCheck::kBadSequence); ++c)
    EXPECT_NE(to_string(static_cast<DatagramCheck>(c)), "?") << c;
}

// ------------------------------------------------------------------ tags --

DataKey key_of(uint8_t seed) {
  DataKey k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::byte(static_cast<uint8_t>(seed + i * 13));
  return k;
}

Bytes tagged_datagram(const DataKey& k) {
  Message add = Message::make_add(5, 1001, 1234500, 300, Side::kSell);
  add.instrument_seq = 1;
  return DatagramBuilder(42).tag(k).add(add).add(Message::make_delete(5, 1001)).build();
}

TEST(WireDatagramTag, ATaggedDatagramValidatesAndItsMessagesEndBeforeTheTag) {
  const Bytes d = tagged_datagram(key_of(1));
  DatagramHeader h;
  ASSERT_EQ(validate_datagram(d, h), DatagramCheck::kOk);
  EXPECT_EQ(h.flags, kFlagTag);
  EXPECT_EQ(h.length, d.size());
  EXPECT_EQ(payload_size(d), d.size() - dgram::kHeaderSize - dgram::kTagSize);
  MessageCursor c = MessageCursor::payload_of(d);
  MessageView v;
  int n = 0;
  while (c.next(v)) ++n;
  EXPECT_EQ(n, 2) << "the tag is not read as a message";
  EXPECT_TRUE(tag_ok(d, key_of(1)));
}

TEST(WireDatagramTag, EveryAlteredByteAndAnyOtherKeyFail) {
  const Bytes d = tagged_datagram(key_of(1));
  EXPECT_FALSE(tag_ok(d, key_of(2)));
  for (size_t i = 0; i < d.size(); ++i) {
    for (uint8_t bit : {0x01, 0x80}) {
      Bytes x = d;
      x[i] ^= std::byte{bit};
      EXPECT_FALSE(tag_ok(x, key_of(1))) << "byte " << i << " bit " << int{bit};
    }
  }
}

TEST(WireDatagramTag, UntaggedOrTooShortIsNeverAuthentic) {
  Bytes plain = DatagramBuilder(3).add(Message::make_delete(5, 1)).build();
  EXPECT_FALSE(tag_ok(plain, key_of(1))) << "no kFlagTag";
  Bytes shortd(dgram::kHeaderSize + dgram::kTagSize - 1);
  DatagramHeader h;
  h.flags = kFlagTag;
  h.sequence = 1;
  h.length = static_cast<uint16_t>(shortd.size());
  write_header(shortd.data(), h);
  EXPECT_FALSE(tag_ok(shortd, key_of(1)));
  EXPECT_EQ(validate_datagram(shortd, h), DatagramCheck::kBadLength);
}

TEST(WireDatagramTag, TagAndCrcTogetherAreRefused) {
  Bytes d = DatagramBuilder(3).flags(kFlagCrc).tag(key_of(1)).add(Message::make_delete(5, 1)).build();
  DatagramHeader h;
  EXPECT_EQ(validate_datagram(d, h), DatagramCheck::kBadFlags);
}

TEST(WireDatagramTag, ValidationLeavesTheTagToWhoeverHoldsTheKey) {
  Bytes d = tagged_datagram(key_of(1));
  d[d.size() - 1] ^= std::byte{1};
  DatagramHeader h;
  EXPECT_EQ(validate_datagram(d, h), DatagramCheck::kOk);
  EXPECT_FALSE(tag_ok(d, key_of(1)));
}

}  // namespace
}  // namespace mdcast::test
