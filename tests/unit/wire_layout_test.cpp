// The layout constants of protocol.hpp tile each structure exactly: every
// field starts where the previous one ends (reserved bytes listed as such)
// and the last ends at the structure's size. Field widths here come from the
// field types in the protocol comments, independently of the constants, so a
// mistyped offset shows up as a gap or an overlap. (The golden-bytes test in
// wire_datagram_test pins the resulting bytes.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mdcast/wire/control.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

struct Field {
  size_t offset;
  size_t width;
  const char* name;
};

void expect_tiles(const char* what, size_t start, const std::vector<Field>& fields, size_t size) {
  SCOPED_TRACE(what);
  size_t at = start;
  for (const auto& f : fields) {
    EXPECT_EQ(f.offset, at) << f.name << (f.offset < at ? " overlaps the previous field" : " leaves a gap");
    at = f.offset + f.width;
  }
  EXPECT_EQ(at, size) << "fields end at " << at << ", structure size " << size;
}

TEST(WireLayout, DatagramHeader) {
  expect_tiles("datagram header", 0,
               {{dgram::kMagic, 2, "magic"},
                {dgram::kVersion, 1, "version"},
                {dgram::kFlags, 1, "flags"},
                {dgram::kChannel, 2, "channel"},
                {dgram::kMessageCount, 2, "message_count"},
                {dgram::kSession, 8, "session"},
                {dgram::kSequence, 8, "sequence"},
                {dgram::kSendTime, 8, "send_time"},
                {dgram::kLength, 2, "length"},
                {dgram::kSender, 2, "sender"},
                {dgram::kCrc, 4, "crc"}},
               dgram::kHeaderSize);
  EXPECT_EQ(dgram::kHeaderSize % 8, 0u) << "messages start 8-byte aligned in an aligned buffer";
}

TEST(WireLayout, MessageHeaders) {
  expect_tiles("message header", 0, {{msg::kLength, 2, "length"}, {msg::kType, 1, "type"}, {msg::kFlags, 1, "flags"}},
               msg::kHeaderSize);
  expect_tiles("market-data header", msg::kHeaderSize,
               {{msg::kInstrument, 4, "instrument"}, {msg::kInstrumentSeq, 4, "instrument_seq"}}, msg::kMdHeaderSize);
}

TEST(WireLayout, FixedSizeMessages) {
  expect_tiles("instrument definition", msg::kMdHeaderSize,
               {{instrument_def::kSymbol, instrument_def::kSymbolLen, "symbol"},
                {instrument_def::kLotSize, 4, "lot_size"},
                {instrument_def::kPriceExponent, 1, "price_exponent"},
                {instrument_def::kPriceExponent + 1, 3, "reserved"}},
               instrument_def::kSize);
  expect_tiles("add order", msg::kMdHeaderSize,
               {{add_order::kOrderId, 8, "order_id"},
                {add_order::kPrice, 8, "price"},
                {add_order::kQuantity, 4, "quantity"},
                {add_order::kSide, 1, "side"},
                {add_order::kSide + 1, 3, "reserved"}},
               add_order::kSize);
  expect_tiles("modify order", msg::kMdHeaderSize,
               {{modify_order::kOrderId, 8, "order_id"},
                {modify_order::kPrice, 8, "price"},
                {modify_order::kQuantity, 4, "quantity"}},
               modify_order::kSize);
  expect_tiles("delete order", msg::kMdHeaderSize, {{delete_order::kOrderId, 8, "order_id"}}, delete_order::kSize);
  expect_tiles("execute order", msg::kMdHeaderSize,
               {{execute_order::kOrderId, 8, "order_id"},
                {execute_order::kPrice, 8, "price"},
                {execute_order::kQuantity, 4, "quantity"},
                {execute_order::kTradeId, 8, "trade_id"}},
               execute_order::kSize);
  expect_tiles("trading status", msg::kMdHeaderSize,
               {{trading_status::kStatus, 1, "status"}, {trading_status::kStatus + 1, 3, "reserved"}},
               trading_status::kSize);
}

TEST(WireLayout, VariableMessages) {
  expect_tiles("snapshot chunk", msg::kMdHeaderSize,
               {{snapshot_chunk::kSnapshotSeq, 8, "snapshot_seq"},
                {snapshot_chunk::kChunkIndex, 2, "chunk_index"},
                {snapshot_chunk::kChunkCount, 2, "chunk_count"},
                {snapshot_chunk::kOrderCount, 2, "order_count"},
                {snapshot_chunk::kStatus, 1, "status"},
                {snapshot_chunk::kStatus + 1, 1, "reserved"}},
               snapshot_chunk::kOrders);
  expect_tiles("snapshot entry", 0,
               {{snapshot_chunk::kEntryOrderId, 8, "order_id"},
                {snapshot_chunk::kEntryPrice, 8, "price"},
                {snapshot_chunk::kEntryQuantity, 4, "quantity"},
                {snapshot_chunk::kEntrySide, 1, "side"},
                {snapshot_chunk::kEntrySide + 1, 3, "reserved"}},
               snapshot_chunk::kEntrySize);
  expect_tiles("heartbeat", msg::kHeaderSize,
               {{heartbeat::kLastSeq, 8, "last_seq"},
                {heartbeat::kGlobalChecksum, 8, "global_checksum"},
                {heartbeat::kInstrumentCount, 4, "instrument_count"},
                {heartbeat::kEntryCount, 2, "entry_count"},
                {heartbeat::kEntryCount + 2, 2, "reserved"}},
               heartbeat::kEntries);
  expect_tiles("heartbeat entry", 0,
               {{heartbeat::kEntryInstrument, 4, "instrument"},
                {heartbeat::kEntryInstrumentSeq, 4, "instrument_seq"},
                {heartbeat::kEntryChecksum, 8, "checksum"}},
               heartbeat::kEntrySize);
  expect_tiles("fragment", msg::kHeaderSize,
               {{fragment::kInstrument, 4, "instrument"},
                {fragment::kMessageId, 4, "message_id"},
                {fragment::kIndex, 2, "index"},
                {fragment::kCount, 2, "count"},
                {fragment::kTotalLength, 4, "total_length"}},
               fragment::kPayload);
  EXPECT_EQ(opaque::kPayload, msg::kMdHeaderSize);
  // A full snapshot chunk of the service's 2000 orders still fits a u16 length.
  EXPECT_LE(snapshot_chunk::kOrders + 2000 * snapshot_chunk::kEntrySize, kMaxMessage);
}

TEST(WireLayout, ControlHeader) {
  expect_tiles("control header", 0,
               {{ctl::kLength, 4, "length"},
                {ctl::kType, 1, "type"},
                {ctl::kVersion, 1, "version"},
                {ctl::kVersion + 1, 2, "reserved"},
                {ctl::kRequestId, 4, "request_id"}},
               ctl::kHeaderSize);
}

}  // namespace
}  // namespace mdcast::test
