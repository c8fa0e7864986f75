#include "mdcast/feed/message_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace mdcast::feed {
namespace {

std::string_view status_name(wire::TradingStatus st) noexcept {
  switch (st) {
    case wire::TradingStatus::kPreOpen: return "pre-open";
    case wire::TradingStatus::kTrading: return "trading";
    case wire::TradingStatus::kHalted: return "halted";
    case wire::TradingStatus::kClosed: return "closed";
  }
  return "unknown";
}

}  // namespace

void MessageText::append(std::string& text, const wire::Message& m, uint64_t seq, bool recovered) {
  const auto out = std::back_inserter(text);
  const char* rec = recovered ? " (recovered)" : "";
  switch (m.type) {
    case wire::MsgType::kInstrumentDefinition:
      if (m.instrument < exponent_.size()) exponent_[m.instrument] = m.definition.price_exponent;
      fmt::format_to(out, "seq={} inst={}#{} define symbol={} lot={} price_exponent={}{}\n", seq, m.instrument,
                     m.instrument_seq, m.definition.symbol_view(), m.definition.lot_size, m.definition.price_exponent, rec);
      break;
    case wire::MsgType::kAddOrder:
      fmt::format_to(out, "seq={} inst={}#{} add id={} {} {}@{}{}\n", seq, m.instrument, m.instrument_seq, m.add.order_id,
                     m.add.side == wire::Side::kBuy ? "buy" : "sell", m.add.quantity,
                     price(m.instrument, m.add.price).view(), rec);
      break;
    case wire::MsgType::kModifyOrder:
      fmt::format_to(out, "seq={} inst={}#{} modify id={} {}@{}{}\n", seq, m.instrument, m.instrument_seq,
                     m.modify.order_id, m.modify.quantity, price(m.instrument, m.modify.price).view(), rec);
      break;
    case wire::MsgType::kDeleteOrder:
      fmt::format_to(out, "seq={} inst={}#{} delete id={}{}\n", seq, m.instrument, m.instrument_seq, m.del.order_id, rec);
      break;
    case wire::MsgType::kExecuteOrder:
      fmt::format_to(out, "seq={} inst={}#{} execute id={} {}@{} trade={}{}\n", seq, m.instrument, m.instrument_seq,
                     m.execute.order_id, m.execute.quantity, price(m.instrument, m.execute.price).view(),
                     m.execute.trade_id, rec);
      break;
    case wire::MsgType::kTradingStatus:
      fmt::format_to(out, "seq={} inst={}#{} status {}{}\n", seq, m.instrument, m.instrument_seq,
                     status_name(m.status.status), rec);
      break;
    default:
      fmt::format_to(out, "seq={} inst={}#{} {}{}\n", seq, m.instrument, m.instrument_seq, wire::to_string(m.type), rec);
  }
}

MessageText::Price MessageText::scaled(int64_t v, int exp) noexcept {
  Price p{};
  const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  char digits[24];
  const auto n = static_cast<size_t>(fmt::format_to_n(digits, sizeof digits, "{}", mag).size);
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

MessageText::Price MessageText::price(uint32_t inst, int64_t v) const noexcept {
  if (inst < exponent_.size() && exponent_[inst] != kUnknown) return scaled(v, exponent_[inst]);
  Price p{};
  p.len = std::min(fmt::format_to_n(p.text, sizeof p.text, "{} raw", v).size, sizeof p.text);
  return p;
}

}  // namespace mdcast::feed
