// Typed market-data messages and their codecs.
//
// Contract: decoding accessors here assume a message that has passed
// validate_datagram() (datagram.hpp) or validate_message(); that single
// bounds-checked pass is what the fuzzers exercise. Encoders assume the caller
// reserved encoded_size() bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "mdcast/core/bytes.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::wire {

struct InstrumentDefinition {
  char symbol[instrument_def::kSymbolLen]{};
  uint32_t lot_size = 1;
  int8_t price_exponent = -4;

  [[nodiscard]] std::string_view symbol_view() const noexcept {
    return {symbol, strnlen(symbol, sizeof symbol)};
  }
};
struct AddOrder {
  uint64_t order_id;
  int64_t price;
  uint32_t quantity;
  Side side;
};
struct ModifyOrder {
  uint64_t order_id;
  int64_t price;
  uint32_t quantity;
};
struct DeleteOrder {
  uint64_t order_id;
};
struct ExecuteOrder {
  uint64_t order_id;
  int64_t price;
  uint32_t quantity;
  uint64_t trade_id;
};
struct TradingStatusUpdate {
  TradingStatus status;
};
struct Opaque {
  const std::byte* data;
  uint16_t size;
};

// One market-data message: what a publisher publishes and a subscriber is
// delivered. A tagged union of plain values (no allocation, trivially copyable).
struct Message {
  MsgType type;
  uint32_t instrument = 0;
  uint32_t instrument_seq = 0;  // assigned by the publisher
  union {
    InstrumentDefinition definition;
    AddOrder add;
    ModifyOrder modify;
    DeleteOrder del;
    ExecuteOrder execute;
    TradingStatusUpdate status;
    Opaque opaque;
  };

  Message() noexcept : type(MsgType::kDeleteOrder), del{0} {}
  static Message make_definition(uint32_t inst, std::string_view sym, uint32_t lot, int8_t exp) noexcept {
    Message m;
    m.type = MsgType::kInstrumentDefinition;
    m.instrument = inst;
    m.definition = InstrumentDefinition{};
    std::memcpy(m.definition.symbol, sym.data(), std::min(sym.size(), sizeof m.definition.symbol));
    m.definition.lot_size = lot;
    m.definition.price_exponent = exp;
    return m;
  }
  static Message make_add(uint32_t inst, uint64_t id, int64_t px, uint32_t qty, Side s) noexcept {
    Message m;
    m.type = MsgType::kAddOrder;
    m.instrument = inst;
    m.add = {id, px, qty, s};
    return m;
  }
  static Message make_modify(uint32_t inst, uint64_t id, int64_t px, uint32_t qty) noexcept {
    Message m;
    m.type = MsgType::kModifyOrder;
    m.instrument = inst;
    m.modify = {id, px, qty};
    return m;
  }
  static Message make_delete(uint32_t inst, uint64_t id) noexcept {
    Message m;
    m.type = MsgType::kDeleteOrder;
    m.instrument = inst;
    m.del = {id};
    return m;
  }
  static Message make_execute(uint32_t inst, uint64_t id, int64_t px, uint32_t qty, uint64_t trade) noexcept {
    Message m;
    m.type = MsgType::kExecuteOrder;
    m.instrument = inst;
    m.execute = {id, px, qty, trade};
    return m;
  }
  static Message make_status(uint32_t inst, TradingStatus st) noexcept {
    Message m;
    m.type = MsgType::kTradingStatus;
    m.instrument = inst;
    m.status = {st};
    return m;
  }
  static Message make_opaque(uint32_t inst, std::span<const std::byte> payload) noexcept {
    Message m;
    m.type = MsgType::kOpaque;
    m.instrument = inst;
    m.opaque = {payload.data(), static_cast<uint16_t>(payload.size())};
    return m;
  }
};

// True for the types that carry instrument id + instrument sequence.
[[nodiscard]] constexpr bool is_market_data(MsgType t) noexcept {
  switch (t) {
    case MsgType::kInstrumentDefinition:
    case MsgType::kAddOrder:
    case MsgType::kModifyOrder:
    case MsgType::kDeleteOrder:
    case MsgType::kExecuteOrder:
    case MsgType::kTradingStatus:
    case MsgType::kSnapshotChunk:
    case MsgType::kOpaque:
      return true;
    case MsgType::kHeartbeat:
    case MsgType::kFragment:
      return false;
  }
  return false;
}

// Encoded size of a message, header included; 0 for an Opaque payload too
// large to be described by a u16 length (callers reject it).
[[nodiscard]] size_t encoded_size(const Message& m) noexcept;

// Writes m (encoded_size(m) bytes) at out.
void encode(const Message& m, std::byte* out) noexcept;

// A validated message inside a buffer: a pointer, never a copy.
class MessageView {
 public:
  MessageView() = default;
  MessageView(const std::byte* p, uint16_t len) noexcept : p_(p), len_(len) {}

  [[nodiscard]] const std::byte* data() const noexcept { return p_; }
  [[nodiscard]] uint16_t size() const noexcept { return len_; }
  [[nodiscard]] MsgType type() const noexcept { return static_cast<MsgType>(p_[msg::kType]); }
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {p_, len_}; }
  // Market-data messages only:
  [[nodiscard]] uint32_t instrument() const noexcept { return load_le<uint32_t>(p_ + msg::kInstrument); }
  [[nodiscard]] uint32_t instrument_seq() const noexcept { return load_le<uint32_t>(p_ + msg::kInstrumentSeq); }
  template <class T>
  [[nodiscard]] T get(size_t off) const noexcept {
    return load_le<T>(p_ + off);
  }

 private:
  const std::byte* p_ = nullptr;
  uint16_t len_ = 0;
};

// Decodes a validated message of a type Message can hold (everything but
// snapshot chunks, heartbeats and fragments, which have views below).
[[nodiscard]] Message decode(MessageView v) noexcept;

class SnapshotChunkView {
 public:
  explicit SnapshotChunkView(MessageView v) noexcept : v_(v) {}
  struct Entry {
    uint64_t order_id;
    int64_t price;
    uint32_t quantity;
    Side side;
  };
  [[nodiscard]] uint32_t instrument() const noexcept { return v_.instrument(); }
  [[nodiscard]] uint32_t instrument_seq() const noexcept { return v_.instrument_seq(); }
  [[nodiscard]] uint64_t snapshot_seq() const noexcept { return v_.get<uint64_t>(snapshot_chunk::kSnapshotSeq); }
  [[nodiscard]] uint16_t chunk_index() const noexcept { return v_.get<uint16_t>(snapshot_chunk::kChunkIndex); }
  [[nodiscard]] uint16_t chunk_count() const noexcept { return v_.get<uint16_t>(snapshot_chunk::kChunkCount); }
  [[nodiscard]] uint16_t order_count() const noexcept { return v_.get<uint16_t>(snapshot_chunk::kOrderCount); }
  [[nodiscard]] TradingStatus status() const noexcept {
    return static_cast<TradingStatus>(v_.get<uint8_t>(snapshot_chunk::kStatus));
  }
  [[nodiscard]] Entry order(size_t i) const noexcept {
    const size_t o = snapshot_chunk::kOrders + i * snapshot_chunk::kEntrySize;
    return {v_.get<uint64_t>(o + snapshot_chunk::kEntryOrderId), v_.get<int64_t>(o + snapshot_chunk::kEntryPrice),
            v_.get<uint32_t>(o + snapshot_chunk::kEntryQuantity),
            static_cast<Side>(v_.get<uint8_t>(o + snapshot_chunk::kEntrySide))};
  }

 private:
  MessageView v_;
};

class HeartbeatView {
 public:
  explicit HeartbeatView(MessageView v) noexcept : v_(v) {}
  struct Entry {
    uint32_t instrument;
    uint32_t instrument_seq;
    uint64_t checksum;
  };
  [[nodiscard]] uint64_t last_seq() const noexcept { return v_.get<uint64_t>(heartbeat::kLastSeq); }
  [[nodiscard]] uint64_t global_checksum() const noexcept { return v_.get<uint64_t>(heartbeat::kGlobalChecksum); }
  [[nodiscard]] uint32_t instrument_count() const noexcept { return v_.get<uint32_t>(heartbeat::kInstrumentCount); }
  [[nodiscard]] uint16_t entry_count() const noexcept { return v_.get<uint16_t>(heartbeat::kEntryCount); }
  [[nodiscard]] Entry entry(size_t i) const noexcept {
    const size_t o = heartbeat::kEntries + i * heartbeat::kEntrySize;
    return {v_.get<uint32_t>(o + heartbeat::kEntryInstrument), v_.get<uint32_t>(o + heartbeat::kEntryInstrumentSeq),
            v_.get<uint64_t>(o + heartbeat::kEntryChecksum)};
  }

 private:
  MessageView v_;
};

class FragmentView {
 public:
  explicit FragmentView(MessageView v) noexcept : v_(v) {}
  [[nodiscard]] uint32_t instrument() const noexcept { return v_.get<uint32_t>(fragment::kInstrument); }
  [[nodiscard]] uint32_t message_id() const noexcept { return v_.get<uint32_t>(fragment::kMessageId); }
  [[nodiscard]] uint16_t index() const noexcept { return v_.get<uint16_t>(fragment::kIndex); }
  [[nodiscard]] uint16_t count() const noexcept { return v_.get<uint16_t>(fragment::kCount); }
  [[nodiscard]] uint32_t total_length() const noexcept { return v_.get<uint32_t>(fragment::kTotalLength); }
  [[nodiscard]] std::span<const std::byte> payload() const noexcept {
    return {v_.data() + fragment::kPayload, v_.size() - fragment::kPayload};
  }

 private:
  MessageView v_;
};

// Writers for the variable-length messages. Each returns the bytes written.
size_t write_snapshot_chunk_header(std::byte* out, uint32_t instrument, uint32_t instrument_seq,
                                   uint64_t snapshot_seq, uint16_t chunk_index, uint16_t chunk_count,
                                   uint16_t order_count, TradingStatus status) noexcept;
void write_snapshot_entry(std::byte* chunk, size_t i, const SnapshotChunkView::Entry& e) noexcept;

size_t write_heartbeat_header(std::byte* out, uint64_t last_seq, uint64_t global_checksum,
                              uint32_t instrument_count, uint16_t entry_count) noexcept;
void write_heartbeat_entry(std::byte* hb, size_t i, const HeartbeatView::Entry& e) noexcept;

size_t write_fragment(std::byte* out, uint32_t instrument, uint32_t message_id, uint16_t index, uint16_t count,
                      uint32_t total_length, std::span<const std::byte> piece) noexcept;

enum class MessageCheck : uint8_t {
  kOk,
  kTooShort,      // shorter than its type's fixed part
  kBadLength,     // declared length disagrees with its variable part
  kBadField,      // an enum field out of range, a fragment index >= count, ...
  kUnknownType,   // forward compatibility: skipped and counted, not an error
};

// Bounds-checks one message whose declared length `len` (>= 4) fits the buffer.
[[nodiscard]] MessageCheck validate_message(const std::byte* p, uint16_t len) noexcept;

[[nodiscard]] std::string_view to_string(MsgType t) noexcept;
[[nodiscard]] std::string_view to_string(MessageCheck c) noexcept;

}  // namespace mdcast::wire
