// How `mdcast subscribe` shows what it delivers (--print) and how fast.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::app {

// A latency as a person reads it: 850 ns, 3.1 us, 3.11 ms, 1.20 s (a raw
// "3112959 ns" hides that it is three milliseconds).
inline std::string format_latency(uint64_t ns) {
  if (ns < 1'000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000'000) return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

// 1234567 -> "1,234,567": counts a person compares at a glance.
inline std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// `--print`: one line per message, every kind in the same shape
// ("seq=<datagram> inst=<id>#<instrument seq> <kind> ..."), prices scaled by
// the instrument's definition (price = value x 10^exponent) once one was
// delivered; before that (a late join) the raw integer, marked "raw".
class MessagePrinter {
 public:
  explicit MessagePrinter(uint32_t max_instruments = 0) : exponent_(max_instruments, kUnknown) {}

  void print(const wire::Message& m, const feed::Delivery& d) {
    const char* rec = d.recovered ? " (recovered)" : "";
    switch (m.type) {
      case wire::MsgType::kInstrumentDefinition:
        if (m.instrument < exponent_.size()) exponent_[m.instrument] = m.definition.price_exponent;
        fmt::print("seq={} inst={}#{} define symbol={} lot={} price_exponent={}{}\n", d.sequence, m.instrument,
                   m.instrument_seq, m.definition.symbol_view(), m.definition.lot_size, m.definition.price_exponent, rec);
        break;
      case wire::MsgType::kAddOrder:
        fmt::print("seq={} inst={}#{} add id={} {} {}@{}{}\n", d.sequence, m.instrument, m.instrument_seq, m.add.order_id,
                   m.add.side == wire::Side::kBuy ? "buy" : "sell", m.add.quantity, price(m.instrument, m.add.price).view(), rec);
        break;
      case wire::MsgType::kModifyOrder:
        fmt::print("seq={} inst={}#{} modify id={} {}@{}{}\n", d.sequence, m.instrument, m.instrument_seq,
                   m.modify.order_id, m.modify.quantity, price(m.instrument, m.modify.price).view(), rec);
        break;
      case wire::MsgType::kDeleteOrder:
        fmt::print("seq={} inst={}#{} delete id={}{}\n", d.sequence, m.instrument, m.instrument_seq, m.del.order_id, rec);
        break;
      case wire::MsgType::kExecuteOrder:
        fmt::print("seq={} inst={}#{} execute id={} {}@{} trade={}{}\n", d.sequence, m.instrument, m.instrument_seq,
                   m.execute.order_id, m.execute.quantity, price(m.instrument, m.execute.price).view(), m.execute.trade_id, rec);
        break;
      case wire::MsgType::kTradingStatus:
        fmt::print("seq={} inst={}#{} status {}{}\n", d.sequence, m.instrument, m.instrument_seq,
                   status_name(m.status.status), rec);
        break;
      default:
        fmt::print("seq={} inst={}#{} {}{}\n", d.sequence, m.instrument, m.instrument_seq, wire::to_string(m.type), rec);
    }
  }

  // value x 10^exponent in decimal, exactly (no floating point, no
  // allocation): 1234500, -4 -> "123.4500".
  struct Price {
    char text[48];
    size_t len;
    [[nodiscard]] std::string_view view() const noexcept { return {text, len}; }
  };
  static Price scaled(int64_t v, int exp) noexcept {
    Price p{};
    const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    char digits[24];
    auto n = static_cast<size_t>(fmt::format_to_n(digits, sizeof digits, "{}", mag).size);
    auto put = [&](char c) {
      if (p.len < sizeof p.text) p.text[p.len++] = c;
    };
    if (v < 0) put('-');
    if (exp >= 0) {
      for (size_t i = 0; i < n; ++i) put(digits[i]);
      for (int i = 0; i < exp && i < 18; ++i) put('0');
      return p;
    }
    const auto frac = static_cast<size_t>(std::min(-exp, 18));
    if (n <= frac) {  // 0.00ddd
      put('0');
      put('.');
      for (size_t i = n; i < frac; ++i) put('0');
      for (size_t i = 0; i < n; ++i) put(digits[i]);
      return p;
    }
    for (size_t i = 0; i < n; ++i) {
      if (i == n - frac) put('.');
      put(digits[i]);
    }
    return p;
  }

 private:
  static constexpr int kUnknown = 1000;
  static std::string_view status_name(wire::TradingStatus st) noexcept {
    switch (st) {
      case wire::TradingStatus::kPreOpen: return "pre-open";
      case wire::TradingStatus::kTrading: return "trading";
      case wire::TradingStatus::kHalted: return "halted";
      case wire::TradingStatus::kClosed: return "closed";
    }
    return "unknown";
  }
  Price price(uint32_t inst, int64_t v) const noexcept {
    if (inst < exponent_.size() && exponent_[inst] != kUnknown) return scaled(v, exponent_[inst]);
    Price p{};
    p.len = fmt::format_to_n(p.text, sizeof p.text, "{} raw", v).size;
    p.len = std::min(p.len, sizeof p.text);
    return p;
  }
  std::vector<int> exponent_;  // per instrument, from its definition
};

}  // namespace mdcast::app
