// How `mdcast subscribe --print` shows what it delivers.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::app {

inline std::string_view to_string(feed::SubscriberEvent e) noexcept {
  switch (e) {
    case feed::SubscriberEvent::kPublisherSilent: return "publisher silent";
    case feed::SubscriberEvent::kPublisherBack: return "publisher back";
    case feed::SubscriberEvent::kSessionEnded: return "session ended";
    case feed::SubscriberEvent::kSessionChanged: return "new publisher session";
    case feed::SubscriberEvent::kControlError: return "control error";
  }
  return "event";
}

inline void print_message(const wire::Message& m, const feed::Delivery& d) {
  switch (m.type) {
    case wire::MsgType::kAddOrder:
      fmt::print("{} seq={} inst={}#{} add id={} {} {}@{}\n", d.sequence, d.sequence, m.instrument, m.instrument_seq,
                 m.add.order_id, m.add.side == wire::Side::kBuy ? "buy" : "sell", m.add.quantity, m.add.price);
      break;
    case wire::MsgType::kModifyOrder:
      fmt::print("{} inst={}#{} modify id={} {}@{}\n", d.sequence, m.instrument, m.instrument_seq, m.modify.order_id,
                 m.modify.quantity, m.modify.price);
      break;
    case wire::MsgType::kDeleteOrder:
      fmt::print("{} inst={}#{} delete id={}\n", d.sequence, m.instrument, m.instrument_seq, m.del.order_id);
      break;
    case wire::MsgType::kExecuteOrder:
      fmt::print("{} inst={}#{} execute id={} {}@{} trade={}\n", d.sequence, m.instrument, m.instrument_seq,
                 m.execute.order_id, m.execute.quantity, m.execute.price, m.execute.trade_id);
      break;
    default:
      fmt::print("{} inst={}#{} {}\n", d.sequence, m.instrument, m.instrument_seq, wire::to_string(m.type));
  }
}

}  // namespace mdcast::app
