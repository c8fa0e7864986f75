// The UDP medium's settings ([udp]): what Settings holds for it, and its
// keys. The binding (udp.hpp) maps them onto the medium's options.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mdcast::settings {

struct SettingKey;

struct UdpSettings {
  std::string group = "239.77.1.1:7470";
  std::string interface = "lo";      // nothing leaves this host unless an interface is named
  std::string rail_b;                // GROUP:PORT[@IFACE]
  std::vector<std::string> also_to;  // publisher: further destinations ADDR:PORT (unicast legs)
  uint8_t ttl = 1;
  bool loop = true;
  uint32_t mtu = 0;
  bool gso = true;
  bool gro = true;
  uint32_t busy_poll_us = 0;
  double rate = 10'000;              // peak datagrams/s: socket buffers hold ~100 ms of it
  uint16_t control_port = 7471;
  std::string announce_key_file;     // publisher: signs its announcements (a secrets-file line's secret seeds Ed25519)
  std::string announce_public_key;   // subscriber: follows only announcements it signed (64 hex digits)
  uint64_t cut_a_after_ns = 0;       // subscriber fault injection (demo, tests)
  uint64_t cut_a_for_ns = 0;
};

// Its keys ("udp.*"), in setting_keys() with the others (src/settings/media/udp_keys.cpp).
void add_udp_keys(std::map<std::string, SettingKey>& t);

}  // namespace mdcast::settings
