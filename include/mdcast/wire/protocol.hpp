// The mdcast wire protocol, version 2. docs/protocol.md is the byte-exact
// specification; this header is its single source of truth in code (every
// offset below is checked against the document by tests/unit/wire_layout_test).
//
// All integers are little-endian. Nothing is aligned on the wire: codecs read
// and write through memcpy (mdcast/core/bytes.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mdcast::wire {

constexpr uint16_t kMagic = 0x434d;  // bytes 'M','C'
// 2: 64-bit session ids (the sender id moved to the former reserved field),
// and the control frames that carry sessions widened with them.
constexpr uint8_t kVersion = 2;

// ---------------------------------------------------------------- datagram --
// A datagram is one medium frame: a 40-byte header then `message_count`
// length-prefixed messages, `length` bytes in all.
namespace dgram {
constexpr size_t kMagic = 0;          // u16
constexpr size_t kVersion = 2;        // u8
constexpr size_t kFlags = 3;          // u8, DatagramFlag
constexpr size_t kChannel = 4;        // u16
constexpr size_t kMessageCount = 6;   // u16
constexpr size_t kSession = 8;        // u64, random per run of a publisher: never reused, never ordered
constexpr size_t kSequence = 16;      // u64, datagram sequence (first is 1)
constexpr size_t kSendTime = 24;      // u64, publisher clock when its first message was published, ns
constexpr size_t kLength = 32;        // u16, total bytes including this header
constexpr size_t kSender = 34;        // u16, drops own looped-back frames
constexpr size_t kCrc = 36;           // u32, CRC-32C when FlagCrc is set
constexpr size_t kHeaderSize = 40;
constexpr size_t kTagSize = 16;       // trailer with kFlagTag: SipHash-2-4-128 of the bytes before it
}  // namespace dgram

enum DatagramFlag : uint8_t {
  // Not sequenced: `sequence` repeats the last sequenced datagram's number and
  // the datagram is never stored for retransmission (heartbeats).
  kFlagUnsequenced = 0x01,
  kFlagCrc = 0x02,           // kCrc holds CRC-32C of the datagram with kCrc zeroed
  kFlagEndOfSession = 0x04,  // the publisher stopped cleanly after `sequence`
  kFlagFiltered = 0x08,      // a retransmitted copy with unentitled messages removed
  // The last dgram::kTagSize bytes are a tag over everything before them,
  // keyed with the session's data key (datagram.hpp, docs/security.md).
  // Never with kFlagCrc: the tag is the stronger check of the same bytes.
  kFlagTag = 0x10,
};
constexpr uint8_t kKnownDatagramFlags = 0x1f;

// Largest datagram any medium carries (an IB UD payload at 4096 MTU).
constexpr size_t kMaxDatagram = 4096;
// Datagrams shorter than this cannot hold a message: the smallest allowed MTU.
constexpr size_t kMinDatagram = 256;

// ---------------------------------------------------------------- messages --
// Every message: u16 length (total, header included), u8 type, u8 flags (0).
namespace msg {
constexpr size_t kLength = 0;
constexpr size_t kType = 2;
constexpr size_t kFlags = 3;
constexpr size_t kHeaderSize = 4;
// Market-data messages continue with:
constexpr size_t kInstrument = 4;     // u32
constexpr size_t kInstrumentSeq = 8;  // u32, per-instrument sequence (first is 1)
constexpr size_t kMdHeaderSize = 12;
}  // namespace msg

enum class MsgType : uint8_t {
  kInstrumentDefinition = 1,
  kAddOrder = 2,
  kModifyOrder = 3,
  kDeleteOrder = 4,
  kExecuteOrder = 5,
  kTradingStatus = 6,
  kSnapshotChunk = 7,
  kHeartbeat = 8,
  kFragment = 9,
  kOpaque = 10,
};

enum class Side : uint8_t { kBuy = 0, kSell = 1 };

enum class TradingStatus : uint8_t { kPreOpen = 0, kTrading = 1, kHalted = 2, kClosed = 3 };

// Field offsets per message type (from the start of the message).
namespace instrument_def {
constexpr size_t kSymbol = 12;        // char[16], NUL-padded
constexpr size_t kSymbolLen = 16;
constexpr size_t kLotSize = 28;       // u32
constexpr size_t kPriceExponent = 32; // i8: price = value * 10^exp
constexpr size_t kSize = 36;          // 3 reserved bytes
}  // namespace instrument_def

namespace add_order {
constexpr size_t kOrderId = 12;   // u64
constexpr size_t kPrice = 20;     // i64
constexpr size_t kQuantity = 28;  // u32
constexpr size_t kSide = 32;      // u8
constexpr size_t kSize = 36;      // 3 reserved bytes
}  // namespace add_order

namespace modify_order {
constexpr size_t kOrderId = 12;   // u64
constexpr size_t kPrice = 20;     // i64
constexpr size_t kQuantity = 28;  // u32
constexpr size_t kSize = 32;
}  // namespace modify_order

namespace delete_order {
constexpr size_t kOrderId = 12;  // u64
constexpr size_t kSize = 20;
}  // namespace delete_order

namespace execute_order {
constexpr size_t kOrderId = 12;   // u64
constexpr size_t kPrice = 20;     // i64, trade price
constexpr size_t kQuantity = 28;  // u32, executed quantity
constexpr size_t kTradeId = 32;   // u64
constexpr size_t kSize = 40;
}  // namespace execute_order

namespace trading_status {
constexpr size_t kStatus = 12;  // u8
constexpr size_t kSize = 16;    // 3 reserved bytes
}  // namespace trading_status

namespace snapshot_chunk {
constexpr size_t kSnapshotSeq = 12;  // u64: book state after datagram kSnapshotSeq
constexpr size_t kChunkIndex = 20;   // u16
constexpr size_t kChunkCount = 22;   // u16
constexpr size_t kOrderCount = 24;   // u16
constexpr size_t kStatus = 26;       // u8 TradingStatus
constexpr size_t kOrders = 28;       // kOrderCount entries of 24 bytes
constexpr size_t kEntryOrderId = 0;  // u64
constexpr size_t kEntryPrice = 8;    // i64
constexpr size_t kEntryQuantity = 16;// u32
constexpr size_t kEntrySide = 20;    // u8 (3 reserved)
constexpr size_t kEntrySize = 24;
}  // namespace snapshot_chunk

namespace heartbeat {
constexpr size_t kLastSeq = 4;          // u64
constexpr size_t kGlobalChecksum = 12;  // u64: sum of all instrument checksums
constexpr size_t kInstrumentCount = 20; // u32: instruments in the publisher's book
constexpr size_t kEntryCount = 24;      // u16
constexpr size_t kEntries = 28;         // kEntryCount entries of 16 bytes (2 reserved before)
constexpr size_t kEntryInstrument = 0;  // u32
constexpr size_t kEntryInstrumentSeq = 4;  // u32
constexpr size_t kEntryChecksum = 8;    // u64
constexpr size_t kEntrySize = 16;
}  // namespace heartbeat

namespace fragment {
constexpr size_t kInstrument = 4;    // u32 (of the fragmented message, for early filtering)
constexpr size_t kMessageId = 8;     // u32, per session
constexpr size_t kIndex = 12;        // u16
constexpr size_t kCount = 14;        // u16
constexpr size_t kTotalLength = 16;  // u32, length of the reassembled message
constexpr size_t kPayload = 20;
}  // namespace fragment

namespace opaque {
constexpr size_t kPayload = 12;  // application bytes up to the message length
}  // namespace opaque

// Messages larger than this are fragmented; the reassembled form may be up to
// a configured maximum (PublisherConfig::max_message) and never above 65535.
constexpr size_t kMaxMessage = 65535;

}  // namespace mdcast::wire
