// The [shm] settings keys (settings/media/shm_settings.hpp).
#include <string>
#include <utility>

#include "mdcast/settings/values.hpp"

namespace mdcast::settings {

void add_shm_keys(KeyTable& table) {
  auto add = [&table](auto&&... a) { add_key(table, std::forward<decltype(a)>(a)...); };
  add("shm.slots", "N", "datagrams of shm.max_datagram the ring holds (records are packed: more of smaller ones); over shm also the publisher's retransmit history", [](Settings& s, const std::string& v) { s.shm.slots = parse_uint<size_t>(v, 16, 1u << 24); },
      [](const Settings& s) { return std::to_string(s.shm.slots); });
  add("shm.max_datagram", "SIZE", "largest datagram in the ring", [](Settings& s, const std::string& v) {
    s.shm.max_datagram = parse_size(v);
    if (s.shm.max_datagram < 256 || s.shm.max_datagram > 4096) fail("'{}' must be in [256, 4096]", v);
  },
      [](const Settings& s) { return format_size(s.shm.max_datagram); });
  add("shm.huge_pages", "BOOL", "use hugetlbfs when available", [](Settings& s, const std::string& v) { s.shm.huge_pages = parse_bool(v); },
      [](const Settings& s) { return std::string(s.shm.huge_pages ? "true" : "false"); });
  add("shm.dir", "DIR", "ring directory (default /dev/hugepages or /dev/shm)", [](Settings& s, const std::string& v) { s.shm.dir = v; },
      [](const Settings& s) { return s.shm.dir; });
  add("shm.group", "GROUP", "publisher: group whose members may read the ring (mode 0640); empty: this user only (0600)",
      [](Settings& s, const std::string& v) { s.shm.group = v; },
      [](const Settings& s) { return s.shm.group; });
  add("shm.max_bytes", "SIZE", "publisher: largest ring it creates (a larger one is refused before anything is allocated)",
      [](Settings& s, const std::string& v) { s.shm.max_bytes = parse_size(v); },
      [](const Settings& s) { return format_size(s.shm.max_bytes); });
  add("shm.readers", "N", "publisher: reader slots, 16 bytes each: subscribers that can block when idle (the others back off)",
      [](Settings& s, const std::string& v) { s.shm.readers = parse_uint<size_t>(v, 0, 65536); },
      [](const Settings& s) { return std::to_string(s.shm.readers); });
  add("shm.publisher_user", "USER", "subscriber: user (name or uid) whose ring it trusts; empty: its own user",
      [](Settings& s, const std::string& v) { s.shm.publisher_user = v; },
      [](const Settings& s) { return s.shm.publisher_user; });
  add("shm.rail_b", "NAME", "subscriber: the feed name of a publisher pair's other member, whose ring is read as rail B "
      "(docs/operations.md, 'Publisher pairs'); empty: none",
      [](Settings& s, const std::string& v) { s.shm.rail_b = v; },
      [](const Settings& s) { return s.shm.rail_b; });
}

}  // namespace mdcast::settings
