// What the examples share: their command line, the settings it maps onto
// (the medium by name, as `mdcast` takes it), the books' size, and one line of text per message (the
// subscriber prints exactly the lines the publisher printed).
#pragma once

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include <mdcast/book/order_book.hpp>
#include <mdcast/core/error.hpp>
#include <mdcast/settings/settings.hpp>
#include <mdcast/wire/messages.hpp>

namespace example {

struct Args {
  std::string medium = "shm";    // shm | udp | verbs
  std::string name = "example";  // shm: the feed (ring mdcast-<name>.ring, control socket @mdcast/<name>.<random>, in the ring header)
  unsigned subscribers = 1;      // publisher: how many to wait for before the first message
  unsigned rounds = 3;           // publisher: rounds of order activity per instrument
  std::string local_ip;          // verbs: this host's address on the RDMA device
  std::string control_ip;        // verbs subscriber: the publisher's address
  std::string group = "239.77.0.1";  // verbs: the feed's multicast group
  std::string udp_group = "239.77.1.1:7470";  // udp: the feed's group and port
  std::string interface = "lo";  // udp: the interface (name or IPv4 address) it travels on
  std::string out;               // record: the recording's base name (BASE.0000.pcap, ...)
};

inline Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 == argc) mdcast::fail("{} needs a value", flag);
    const std::string value = argv[i + 1];
    auto number = [&] {
      unsigned n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || end != value.data() + value.size()) mdcast::fail("{} {}: not a number", flag, value);
      return n;
    };
    if (flag == "--medium") a.medium = value;
    else if (flag == "--name") a.name = value;
    else if (flag == "--subscribers") a.subscribers = number();
    else if (flag == "--rounds") a.rounds = number();
    else if (flag == "--local-ip") a.local_ip = value;
    else if (flag == "--control-ip") a.control_ip = value;
    else if (flag == "--group") a.group = value;
    else if (flag == "--udp-group") a.udp_group = value;
    else if (flag == "--interface") a.interface = value;
    else if (flag == "--out") a.out = value;
    else mdcast::fail("unknown option {} (see the comment at the top of the example's source)", flag);
  }
  return a;
}

// The flags as settings keys (`mdcast --help-config` lists them all; a TOML
// file with the same sections is settings::load_config), each value checked
// by its key's one parser. settings::with_medium then picks the medium's
// types from feed.medium (an Error names the media this build has).
inline mdcast::settings::Settings settings(const Args& a) {
  mdcast::settings::Settings s;
  const std::pair<const char*, const std::string*> keys[] = {
      {"feed.medium", &a.medium},       {"feed.name", &a.name},          {"udp.group", &a.udp_group},
      {"udp.interface", &a.interface},  {"verbs.local_ip", &a.local_ip}, {"verbs.control_ip", &a.control_ip},
      {"verbs.group", &a.group}};
  for (const auto& [key, value] : keys) mdcast::settings::apply_setting(s, key, *value, key);
  return s;
}
// Instrument ids 0..15. The subscriber's books must hold what the
// publisher's do (a snapshot fills them), so both sides use this.
inline constexpr mdcast::book::BookConfig kBooks{16, 4096, 64};

// One line per message on stdout. It cannot throw: the subscriber calls it
// from its handler, which is noexcept.
inline void print(const mdcast::wire::Message& m) noexcept {
  using mdcast::wire::MsgType;
  std::printf("inst %" PRIu32 " #%" PRIu32 " ", m.instrument, m.instrument_seq);
  switch (m.type) {
    case MsgType::kInstrumentDefinition: {
      const std::string_view s = m.definition.symbol_view();
      std::printf("define %.*s lot %" PRIu32 " exp %d\n", static_cast<int>(s.size()), s.data(), m.definition.lot_size,
                  m.definition.price_exponent);
      break;
    }
    case MsgType::kAddOrder:
      std::printf("add %" PRIu64 " %s %" PRIu32 " @ %" PRId64 "\n", m.add.order_id,
                  m.add.side == mdcast::wire::Side::kBuy ? "buy" : "sell", m.add.quantity, m.add.price);
      break;
    case MsgType::kModifyOrder:
      std::printf("modify %" PRIu64 " %" PRIu32 " @ %" PRId64 "\n", m.modify.order_id, m.modify.quantity,
                  m.modify.price);
      break;
    case MsgType::kDeleteOrder: std::printf("delete %" PRIu64 "\n", m.del.order_id); break;
    case MsgType::kExecuteOrder:
      std::printf("execute %" PRIu64 " %" PRIu32 " @ %" PRId64 " trade %" PRIu64 "\n", m.execute.order_id,
                  m.execute.quantity, m.execute.price, m.execute.trade_id);
      break;
    case MsgType::kTradingStatus: std::printf("status %d\n", static_cast<int>(m.status.status)); break;
    case MsgType::kOpaque:  // this application's opaque payloads are text
      std::printf("opaque '%.*s'\n", static_cast<int>(m.opaque.size), reinterpret_cast<const char*>(m.opaque.data));
      break;
    default: std::printf("%.*s\n", static_cast<int>(to_string(m.type).size()), to_string(m.type).data());
  }
}

}  // namespace example
