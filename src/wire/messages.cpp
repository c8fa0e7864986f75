#include "mdcast/wire/messages.hpp"

namespace mdcast::wire {
namespace {

void put_md_header(std::byte* out, uint16_t len, MsgType t, uint32_t inst, uint32_t iseq) noexcept {
  store_le<uint16_t>(out + msg::kLength, len);
  store_le<uint8_t>(out + msg::kType, static_cast<uint8_t>(t));
  store_le<uint8_t>(out + msg::kFlags, 0);
  store_le<uint32_t>(out + msg::kInstrument, inst);
  store_le<uint32_t>(out + msg::kInstrumentSeq, iseq);
}

constexpr size_t fixed_size(MsgType t) noexcept {
  switch (t) {
    case MsgType::kInstrumentDefinition: return instrument_def::kSize;
    case MsgType::kAddOrder: return add_order::kSize;
    case MsgType::kModifyOrder: return modify_order::kSize;
    case MsgType::kDeleteOrder: return delete_order::kSize;
    case MsgType::kExecuteOrder: return execute_order::kSize;
    case MsgType::kTradingStatus: return trading_status::kSize;
    case MsgType::kSnapshotChunk: return snapshot_chunk::kOrders;
    case MsgType::kHeartbeat: return heartbeat::kEntries;
    case MsgType::kFragment: return fragment::kPayload;
    case MsgType::kOpaque: return opaque::kPayload;
  }
  return 0;
}

bool valid_side(uint8_t s) noexcept { return s <= static_cast<uint8_t>(Side::kSell); }
bool valid_status(uint8_t s) noexcept { return s <= static_cast<uint8_t>(TradingStatus::kClosed); }

}  // namespace

size_t encoded_size(const Message& m) noexcept {
  if (m.type == MsgType::kOpaque) {
    const size_t n = opaque::kPayload + m.opaque.size;
    return n <= kMaxMessage ? n : 0;
  }
  return fixed_size(m.type);
}

void encode(const Message& m, std::byte* out) noexcept {
  const auto len = static_cast<uint16_t>(encoded_size(m));
  put_md_header(out, len, m.type, m.instrument, m.instrument_seq);
  switch (m.type) {
    case MsgType::kInstrumentDefinition:
      std::memcpy(out + instrument_def::kSymbol, m.definition.symbol, instrument_def::kSymbolLen);
      store_le<uint32_t>(out + instrument_def::kLotSize, m.definition.lot_size);
      store_le<int8_t>(out + instrument_def::kPriceExponent, m.definition.price_exponent);
      std::memset(out + instrument_def::kPriceExponent + 1, 0, 3);
      break;
    case MsgType::kAddOrder:
      store_le<uint64_t>(out + add_order::kOrderId, m.add.order_id);
      store_le<int64_t>(out + add_order::kPrice, m.add.price);
      store_le<uint32_t>(out + add_order::kQuantity, m.add.quantity);
      store_le<uint8_t>(out + add_order::kSide, static_cast<uint8_t>(m.add.side));
      std::memset(out + add_order::kSide + 1, 0, 3);
      break;
    case MsgType::kModifyOrder:
      store_le<uint64_t>(out + modify_order::kOrderId, m.modify.order_id);
      store_le<int64_t>(out + modify_order::kPrice, m.modify.price);
      store_le<uint32_t>(out + modify_order::kQuantity, m.modify.quantity);
      break;
    case MsgType::kDeleteOrder:
      store_le<uint64_t>(out + delete_order::kOrderId, m.del.order_id);
      break;
    case MsgType::kExecuteOrder:
      store_le<uint64_t>(out + execute_order::kOrderId, m.execute.order_id);
      store_le<int64_t>(out + execute_order::kPrice, m.execute.price);
      store_le<uint32_t>(out + execute_order::kQuantity, m.execute.quantity);
      store_le<uint64_t>(out + execute_order::kTradeId, m.execute.trade_id);
      break;
    case MsgType::kTradingStatus:
      store_le<uint8_t>(out + trading_status::kStatus, static_cast<uint8_t>(m.status.status));
      std::memset(out + trading_status::kStatus + 1, 0, 3);
      break;
    case MsgType::kOpaque:
      if (m.opaque.size) std::memcpy(out + opaque::kPayload, m.opaque.data, m.opaque.size);
      break;
    case MsgType::kSnapshotChunk:
    case MsgType::kHeartbeat:
    case MsgType::kFragment:
      break;  // written by their own writers
  }
}

Message decode(MessageView v) noexcept {
  Message m;
  m.type = v.type();
  m.instrument = v.instrument();
  m.instrument_seq = v.instrument_seq();
  switch (m.type) {
    case MsgType::kInstrumentDefinition:
      m.definition = InstrumentDefinition{};
      std::memcpy(m.definition.symbol, v.data() + instrument_def::kSymbol, instrument_def::kSymbolLen);
      m.definition.lot_size = v.get<uint32_t>(instrument_def::kLotSize);
      m.definition.price_exponent = v.get<int8_t>(instrument_def::kPriceExponent);
      break;
    case MsgType::kAddOrder:
      m.add = {v.get<uint64_t>(add_order::kOrderId), v.get<int64_t>(add_order::kPrice),
               v.get<uint32_t>(add_order::kQuantity), static_cast<Side>(v.get<uint8_t>(add_order::kSide))};
      break;
    case MsgType::kModifyOrder:
      m.modify = {v.get<uint64_t>(modify_order::kOrderId), v.get<int64_t>(modify_order::kPrice),
                  v.get<uint32_t>(modify_order::kQuantity)};
      break;
    case MsgType::kDeleteOrder:
      m.del = {v.get<uint64_t>(delete_order::kOrderId)};
      break;
    case MsgType::kExecuteOrder:
      m.execute = {v.get<uint64_t>(execute_order::kOrderId), v.get<int64_t>(execute_order::kPrice),
                   v.get<uint32_t>(execute_order::kQuantity), v.get<uint64_t>(execute_order::kTradeId)};
      break;
    case MsgType::kTradingStatus:
      m.status = {static_cast<TradingStatus>(v.get<uint8_t>(trading_status::kStatus))};
      break;
    case MsgType::kOpaque:
      m.opaque = {v.data() + opaque::kPayload, static_cast<uint16_t>(v.size() - opaque::kPayload)};
      break;
    case MsgType::kSnapshotChunk:
    case MsgType::kHeartbeat:
    case MsgType::kFragment:
      break;
  }
  return m;
}

MessageCheck validate_message(const std::byte* p, uint16_t len) noexcept {
  if (len < msg::kHeaderSize) return MessageCheck::kTooShort;
  const auto raw = load_le<uint8_t>(p + msg::kType);
  if (raw < static_cast<uint8_t>(MsgType::kInstrumentDefinition) || raw > static_cast<uint8_t>(MsgType::kOpaque))
    return MessageCheck::kUnknownType;
  const auto t = static_cast<MsgType>(raw);
  const size_t fixed = fixed_size(t);
  if (len < fixed) return MessageCheck::kTooShort;
  switch (t) {
    case MsgType::kInstrumentDefinition:
    case MsgType::kModifyOrder:
    case MsgType::kDeleteOrder:
    case MsgType::kExecuteOrder:
      return len == fixed ? MessageCheck::kOk : MessageCheck::kBadLength;
    case MsgType::kAddOrder:
      if (len != fixed) return MessageCheck::kBadLength;
      return valid_side(load_le<uint8_t>(p + add_order::kSide)) ? MessageCheck::kOk : MessageCheck::kBadField;
    case MsgType::kTradingStatus:
      if (len != fixed) return MessageCheck::kBadLength;
      return valid_status(load_le<uint8_t>(p + trading_status::kStatus)) ? MessageCheck::kOk
                                                                          : MessageCheck::kBadField;
    case MsgType::kSnapshotChunk: {
      const auto n = load_le<uint16_t>(p + snapshot_chunk::kOrderCount);
      if (len != fixed + size_t{n} * snapshot_chunk::kEntrySize) return MessageCheck::kBadLength;
      const auto idx = load_le<uint16_t>(p + snapshot_chunk::kChunkIndex);
      const auto cnt = load_le<uint16_t>(p + snapshot_chunk::kChunkCount);
      if (cnt == 0 || idx >= cnt || !valid_status(load_le<uint8_t>(p + snapshot_chunk::kStatus)))
        return MessageCheck::kBadField;
      for (size_t i = 0; i < n; ++i) {
        const size_t o = snapshot_chunk::kOrders + i * snapshot_chunk::kEntrySize + snapshot_chunk::kEntrySide;
        if (!valid_side(load_le<uint8_t>(p + o))) return MessageCheck::kBadField;
      }
      return MessageCheck::kOk;
    }
    case MsgType::kHeartbeat: {
      const auto n = load_le<uint16_t>(p + heartbeat::kEntryCount);
      return len == fixed + size_t{n} * heartbeat::kEntrySize ? MessageCheck::kOk : MessageCheck::kBadLength;
    }
    case MsgType::kFragment: {
      const auto idx = load_le<uint16_t>(p + fragment::kIndex);
      const auto cnt = load_le<uint16_t>(p + fragment::kCount);
      const auto total = load_le<uint32_t>(p + fragment::kTotalLength);
      if (cnt < 2 || idx >= cnt || total > kMaxMessage || total < msg::kHeaderSize || len == fixed)
        return MessageCheck::kBadField;
      return MessageCheck::kOk;
    }
    case MsgType::kOpaque:
      return MessageCheck::kOk;
  }
  return MessageCheck::kUnknownType;
}

size_t write_snapshot_chunk_header(std::byte* out, uint32_t instrument, uint32_t instrument_seq,
                                   uint64_t snapshot_seq, uint16_t chunk_index, uint16_t chunk_count,
                                   uint16_t order_count, TradingStatus status) noexcept {
  const size_t len = snapshot_chunk::kOrders + size_t{order_count} * snapshot_chunk::kEntrySize;
  put_md_header(out, static_cast<uint16_t>(len), MsgType::kSnapshotChunk, instrument, instrument_seq);
  store_le<uint64_t>(out + snapshot_chunk::kSnapshotSeq, snapshot_seq);
  store_le<uint16_t>(out + snapshot_chunk::kChunkIndex, chunk_index);
  store_le<uint16_t>(out + snapshot_chunk::kChunkCount, chunk_count);
  store_le<uint16_t>(out + snapshot_chunk::kOrderCount, order_count);
  store_le<uint8_t>(out + snapshot_chunk::kStatus, static_cast<uint8_t>(status));
  store_le<uint8_t>(out + snapshot_chunk::kStatus + 1, 0);
  return len;
}

void write_snapshot_entry(std::byte* chunk, size_t i, const SnapshotChunkView::Entry& e) noexcept {
  std::byte* o = chunk + snapshot_chunk::kOrders + i * snapshot_chunk::kEntrySize;
  store_le<uint64_t>(o + snapshot_chunk::kEntryOrderId, e.order_id);
  store_le<int64_t>(o + snapshot_chunk::kEntryPrice, e.price);
  store_le<uint32_t>(o + snapshot_chunk::kEntryQuantity, e.quantity);
  store_le<uint8_t>(o + snapshot_chunk::kEntrySide, static_cast<uint8_t>(e.side));
  std::memset(o + snapshot_chunk::kEntrySide + 1, 0, 3);
}

size_t write_heartbeat_header(std::byte* out, uint64_t last_seq, uint64_t global_checksum,
                              uint32_t instrument_count, uint16_t entry_count) noexcept {
  const size_t len = heartbeat::kEntries + size_t{entry_count} * heartbeat::kEntrySize;
  store_le<uint16_t>(out + msg::kLength, static_cast<uint16_t>(len));
  store_le<uint8_t>(out + msg::kType, static_cast<uint8_t>(MsgType::kHeartbeat));
  store_le<uint8_t>(out + msg::kFlags, 0);
  store_le<uint64_t>(out + heartbeat::kLastSeq, last_seq);
  store_le<uint64_t>(out + heartbeat::kGlobalChecksum, global_checksum);
  store_le<uint32_t>(out + heartbeat::kInstrumentCount, instrument_count);
  store_le<uint16_t>(out + heartbeat::kEntryCount, entry_count);
  store_le<uint16_t>(out + heartbeat::kEntryCount + 2, 0);
  return len;
}

void write_heartbeat_entry(std::byte* hb, size_t i, const HeartbeatView::Entry& e) noexcept {
  std::byte* o = hb + heartbeat::kEntries + i * heartbeat::kEntrySize;
  store_le<uint32_t>(o + heartbeat::kEntryInstrument, e.instrument);
  store_le<uint32_t>(o + heartbeat::kEntryInstrumentSeq, e.instrument_seq);
  store_le<uint64_t>(o + heartbeat::kEntryChecksum, e.checksum);
}

size_t write_fragment(std::byte* out, uint32_t instrument, uint32_t message_id, uint16_t index, uint16_t count,
                      uint32_t total_length, std::span<const std::byte> piece) noexcept {
  const size_t len = fragment::kPayload + piece.size();
  store_le<uint16_t>(out + msg::kLength, static_cast<uint16_t>(len));
  store_le<uint8_t>(out + msg::kType, static_cast<uint8_t>(MsgType::kFragment));
  store_le<uint8_t>(out + msg::kFlags, 0);
  store_le<uint32_t>(out + fragment::kInstrument, instrument);
  store_le<uint32_t>(out + fragment::kMessageId, message_id);
  store_le<uint16_t>(out + fragment::kIndex, index);
  store_le<uint16_t>(out + fragment::kCount, count);
  store_le<uint32_t>(out + fragment::kTotalLength, total_length);
  // memcpy from an empty span's null data() is undefined even for 0 bytes.
  if (!piece.empty()) std::memcpy(out + fragment::kPayload, piece.data(), piece.size());
  return len;
}

std::string_view to_string(MsgType t) noexcept {
  switch (t) {
    case MsgType::kInstrumentDefinition: return "instrument-definition";
    case MsgType::kAddOrder: return "add-order";
    case MsgType::kModifyOrder: return "modify-order";
    case MsgType::kDeleteOrder: return "delete-order";
    case MsgType::kExecuteOrder: return "execute-order";
    case MsgType::kTradingStatus: return "trading-status";
    case MsgType::kSnapshotChunk: return "snapshot-chunk";
    case MsgType::kHeartbeat: return "heartbeat";
    case MsgType::kFragment: return "fragment";
    case MsgType::kOpaque: return "opaque";
  }
  return "unknown";
}

std::string_view to_string(MessageCheck c) noexcept {
  switch (c) {
    case MessageCheck::kOk: return "ok";
    case MessageCheck::kTooShort: return "message shorter than its type's fixed part";
    case MessageCheck::kBadLength: return "message length disagrees with its contents";
    case MessageCheck::kBadField: return "message field out of range";
    case MessageCheck::kUnknownType: return "unknown message type";
  }
  return "?";
}

}  // namespace mdcast::wire
