// The [udp] settings keys (settings/media/udp_settings.hpp).
#include <string>
#include <utility>

#include "mdcast/settings/media/udp.hpp"
#include "mdcast/settings/values.hpp"
#include "mdcast/wire/signature.hpp"

namespace mdcast::settings {

void add_udp_keys(KeyTable& table) {
  auto add = [&table](auto&&... a) { add_key(table, std::forward<decltype(a)>(a)...); };
  add("udp.group", "GROUP:PORT", "rail A's multicast group and port, GROUP:PORT (a unicast ADDR:PORT: a unicast leg, received at that address)", [](Settings& s, const std::string& v) {
    UdpEntry::check_group(v);
    s.udp.group = v;
  },
      [](const Settings& s) { return s.udp.group; });
  add("udp.interface", "IFACE", "interface (name or IPv4 address) every send and join uses", [](Settings& s, const std::string& v) {
    s.udp.interface = v;
  },
      [](const Settings& s) { return s.udp.interface; });
  add("udp.rail_b", "GROUP:PORT[@IF]", "a second rail, GROUP:PORT[@IFACE] (A/B feed); \"\" = none", [](Settings& s, const std::string& v) {
    if (!v.empty()) UdpEntry::check_rail(v);
    s.udp.rail_b = v;
  },
      [](const Settings& s) { return s.udp.rail_b; });
  add("udp.also_to", "ADDR:PORT,...", "publisher: also send every datagram to these (unicast legs to hosts multicast does not reach, each host's relay binds its ADDR:PORT as udp.group); \"\" = none", [](Settings& s, const std::string& v) {
    std::vector<std::string> to;
    for (size_t i = 0; i <= v.size();) {
      const size_t comma = std::min(v.find(',', i), v.size());
      if (comma > i) {
        to.push_back(v.substr(i, comma - i));
        UdpEntry::check_group(to.back());
      }
      i = comma + 1;
    }
    s.udp.also_to = std::move(to);
  },
      [](const Settings& s) {
        std::string out;
        for (const auto& t : s.udp.also_to) out += (out.empty() ? "" : ",") + t;
        return out;
      });
  add("udp.ttl", "N", "multicast TTL (1: this subnet)", [](Settings& s, const std::string& v) { s.udp.ttl = parse_uint<uint8_t>(v, 1, 255); },
      [](const Settings& s) { return std::to_string(s.udp.ttl); });
  add("udp.loop", "BOOL", "multicast loop (subscribers on the sender's host)", [](Settings& s, const std::string& v) { s.udp.loop = parse_bool(v); },
      [](const Settings& s) { return std::string(s.udp.loop ? "true" : "false"); });
  add("udp.mtu", "N", "MTU the datagram size derives from (0: the interface's; loopback 1500)", [](Settings& s, const std::string& v) {
    s.udp.mtu = parse_uint<uint32_t>(v, 0, 65535);
  },
      [](const Settings& s) { return std::to_string(s.udp.mtu); });
  add("udp.gso", "BOOL", "UDP GSO (UDP_SEGMENT) where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gso = parse_bool(v); },
      [](const Settings& s) { return std::string(s.udp.gso ? "true" : "false"); });
  add("udp.gro", "BOOL", "UDP GRO where the kernel has it", [](Settings& s, const std::string& v) { s.udp.gro = parse_bool(v); },
      [](const Settings& s) { return std::string(s.udp.gro ? "true" : "false"); });
  add("udp.busy_poll", "DURATION", "SO_BUSY_POLL time (e.g. 50us; 0: off)", [](Settings& s, const std::string& v) {
    s.udp.busy_poll_us = static_cast<uint32_t>(parse_duration(v) / kNsPerUs);
  },
      [](const Settings& s) { return format_duration(uint64_t{s.udp.busy_poll_us} * kNsPerUs); });
  add("udp.rate", "RATE", "peak datagrams/s the socket buffers hold 100 ms of", [](Settings& s, const std::string& v) { s.udp.rate = parse_rate(v); },
      [](const Settings& s) { return format_rate(s.udp.rate); });
  add("udp.control_port", "N", "publisher: TCP control port on the interface's address (0: a free one, announced)",
      [](Settings& s, const std::string& v) { s.udp.control_port = parse_uint<uint16_t>(v, 0, 65535); },
      [](const Settings& s) { return std::to_string(s.udp.control_port); });
  add("udp.announce_key_file", "FILE",
      "publisher: sign the control-address announcements with the key this secrets-file line seeds "
      "(mdcast secret new; a pair's members share it)",
      [](Settings& s, const std::string& v) { s.udp.announce_key_file = v; },
      [](const Settings& s) { return s.udp.announce_key_file; });
  add("udp.announce_public_key", "HEX",
      "subscriber: follow only announcements this key signed (mdcast secret public FILE); \"\" = any",
      [](Settings& s, const std::string& v) {
        if (!v.empty() && !wire::parse_public_key(v))
          fail_usage("'{}' is not a public key (64 hex digits, from `mdcast secret public "
                     "FILE`)", v);
        s.udp.announce_public_key = v;
      },
      [](const Settings& s) { return s.udp.announce_public_key; });
  add("udp.cut_a_after", "DURATION", "subscriber fault injection: drop rail A from this long after start", [](Settings& s, const std::string& v) {
    s.udp.cut_a_after_ns = parse_duration(v);
  },
      [](const Settings& s) { return format_duration(s.udp.cut_a_after_ns); });
  add("udp.cut_a_for", "DURATION", "subscriber fault injection: for this long (0: never)", [](Settings& s, const std::string& v) {
    s.udp.cut_a_for_ns = parse_duration(v);
  },
      [](const Settings& s) { return format_duration(s.udp.cut_a_for_ns); });
}

}  // namespace mdcast::settings
