// Helpers shared by the unit tests (and the fuzz seed generator): hex
// conversion, and a datagram builder that writes headers by hand so tests can
// produce both well-formed and deliberately broken datagrams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::test {

using Bytes = std::vector<std::byte>;

inline std::string to_hex(std::span<const std::byte> b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 2);
  for (std::byte x : b) {
    s += kDigits[static_cast<uint8_t>(x) >> 4];
    s += kDigits[static_cast<uint8_t>(x) & 15];
  }
  return s;
}

// Spaces are ignored so golden strings can be grouped by field.
inline Bytes from_hex(std::string_view h) {
  Bytes out;
  int hi = -1;
  for (char c : h) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(std::byte(static_cast<uint8_t>(hi * 16 + v)));
      hi = -1;
    }
  }
  return out;
}

inline Bytes encode_msg(const wire::Message& m) {
  Bytes b(wire::encoded_size(m));
  wire::encode(m, b.data());
  return b;
}

inline Bytes bytes_of(std::string_view s) {
  Bytes b(s.size());
  for (size_t i = 0; i < s.size(); ++i) b[i] = std::byte(static_cast<uint8_t>(s[i]));
  return b;
}

// A heartbeat message (no datagram header).
inline Bytes heartbeat_msg(uint64_t last_seq, uint64_t global, uint32_t inst_count,
                           const std::vector<wire::HeartbeatView::Entry>& entries) {
  Bytes b(wire::heartbeat::kEntries + entries.size() * wire::heartbeat::kEntrySize);
  wire::write_heartbeat_header(b.data(), last_seq, global, inst_count, static_cast<uint16_t>(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) wire::write_heartbeat_entry(b.data(), i, entries[i]);
  return b;
}

inline Bytes fragment_msg(uint32_t inst, uint32_t id, uint16_t index, uint16_t count, uint32_t total,
                          std::span<const std::byte> piece) {
  Bytes b(wire::fragment::kPayload + piece.size());
  wire::write_fragment(b.data(), inst, id, index, count, total, piece);
  return b;
}

inline Bytes snapshot_chunk_msg(uint32_t inst, uint32_t iseq, uint64_t snap_seq, uint16_t index, uint16_t count,
                                wire::TradingStatus st, const std::vector<wire::SnapshotChunkView::Entry>& orders) {
  Bytes b(wire::snapshot_chunk::kOrders + orders.size() * wire::snapshot_chunk::kEntrySize);
  wire::write_snapshot_chunk_header(b.data(), inst, iseq, snap_seq, index, count,
                                    static_cast<uint16_t>(orders.size()), st);
  for (size_t i = 0; i < orders.size(); ++i) wire::write_snapshot_entry(b.data(), i, orders[i]);
  return b;
}

// Builds one datagram. message_count and length are derived unless forced,
// so tests can break exactly one field at a time.
class DatagramBuilder {
 public:
  explicit DatagramBuilder(uint64_t seq, uint64_t session = 7, uint16_t channel = 1, uint16_t sender = 99) {
    h_.sequence = seq;
    h_.session = session;
    h_.channel = channel;
    h_.sender = sender;
    h_.send_time_ns = 1000 + seq;
  }
  DatagramBuilder& flags(uint8_t f) {
    h_.flags = f;
    return *this;
  }
  DatagramBuilder& send_time(uint64_t t) {
    h_.send_time_ns = t;
    return *this;
  }
  DatagramBuilder& add(const wire::Message& m) { return raw(encode_msg(m)); }
  DatagramBuilder& raw(std::span<const std::byte> msg) {
    body_.insert(body_.end(), msg.begin(), msg.end());
    ++count_;
    return *this;
  }
  DatagramBuilder& force_count(uint16_t n) {
    forced_count_ = n;
    return *this;
  }
  // kFlagTag, sealed with this key.
  DatagramBuilder& tag(const wire::DataKey& k) {
    h_.flags |= wire::kFlagTag;
    key_ = k;
    return *this;
  }
  [[nodiscard]] Bytes build() const {
    const bool tagged = (h_.flags & wire::kFlagTag) != 0;
    Bytes d(wire::dgram::kHeaderSize + body_.size() + (tagged ? wire::dgram::kTagSize : 0));
    wire::DatagramHeader h = h_;
    h.message_count = forced_count_ >= 0 ? static_cast<uint16_t>(forced_count_) : count_;
    h.length = static_cast<uint16_t>(d.size());
    wire::write_header(d.data(), h);
    std::copy(body_.begin(), body_.end(), d.begin() + wire::dgram::kHeaderSize);
    if (h.flags & wire::kFlagCrc) wire::seal_crc(d);
    if (tagged) wire::seal_tag(d, key_);
    return d;
  }

 private:
  wire::DatagramHeader h_;
  Bytes body_;
  uint16_t count_ = 0;
  int forced_count_ = -1;
  wire::DataKey key_{};
};

}  // namespace mdcast::test
