// The [verbs] settings keys (settings/media/verbs_settings.hpp): every build
// has them, so that a configuration file reads the same where rdma-core is
// missing.
#include <fmt/format.h>

#include <exception>
#include <string>
#include <utility>

#include "mdcast/settings/values.hpp"

namespace mdcast::settings {

void add_verbs_keys(KeyTable& table) {
  auto add = [&table](auto&&... a) { add_key(table, std::forward<decltype(a)>(a)...); };
  add("verbs.device", "DEVICE", "RDMA device (default: the one owning local_ip)", [](Settings& s, const std::string& v) { s.verbs.device = v; },
      [](const Settings& s) { return s.verbs.device; });
  add("verbs.port", "N", "device port", [](Settings& s, const std::string& v) { s.verbs.port = parse_uint<uint8_t>(v, 1, 255); },
      [](const Settings& s) { return std::to_string(s.verbs.port); });
  add("verbs.gid_index", "N", "GID index (RoCE v2 + IPv4: 1 on rxe and mlx5)", [](Settings& s, const std::string& v) {
    s.verbs.gid_index = parse_uint<int>(v, 0, 255);
  },
      [](const Settings& s) { return std::to_string(s.verbs.gid_index); });
  add("verbs.local_ip", "IPV4", "local IPv4 address of the RDMA netdev", [](Settings& s, const std::string& v) { s.verbs.local_ip = v; },
      [](const Settings& s) { return s.verbs.local_ip; });
  add("verbs.group", "IPV4", "multicast group IPv4 address", [](Settings& s, const std::string& v) { s.verbs.group = v; },
      [](const Settings& s) { return s.verbs.group; });
  add("verbs.qkey", "QKEY", "QKey shared by the group, below 0x80000000 (rdma_cm's by default: rdma-core tools such as mckey hear the feed; docs/protocol.md 1.4)", [](Settings& s, const std::string& v) {
    uint64_t q = 0;
    size_t used = 0;
    try {
      q = std::stoull(v, &used, 0);  // decimal, 0x hex or 0 octal
    } catch (const std::exception&) {
      used = 0;
    }
    if (v.empty() || used != v.size() || v[0] == '-' || q >= 0x80000000ull)
      fail("'{}' is not a usable QKey: a number below 0x80000000 (e.g. 0x01234567, the default)", v);
    s.verbs.qkey = static_cast<uint32_t>(q);
  },
      [](const Settings& s) { return fmt::format("{:#010x}", s.verbs.qkey); });
  add("verbs.control_ip", "IPV4", "publisher: listen address; subscriber: the publisher's", [](Settings& s, const std::string& v) {
    s.verbs.control_ip = v;
  },
      [](const Settings& s) { return s.verbs.control_ip; });
  add("verbs.control_port", "N", "RC control port", [](Settings& s, const std::string& v) {
    s.verbs.control_port = parse_uint<uint16_t>(v, 1, 65535);
  },
      [](const Settings& s) { return std::to_string(s.verbs.control_port); });
  add("verbs.rdma_read", "BOOL", "retransmit by RDMA READ of the publisher's ring", [](Settings& s, const std::string& v) {
    s.verbs.rdma_read = parse_bool(v);
  },
      [](const Settings& s) { return std::string(s.verbs.rdma_read ? "true" : "false"); });
  add("verbs.rate", "RATE", "peak datagrams/s the receive ring is sized for (100 ms)", [](Settings& s, const std::string& v) {
    s.verbs.rate = parse_rate(v);
  },
      [](const Settings& s) { return format_rate(s.verbs.rate); });
}

}  // namespace mdcast::settings
