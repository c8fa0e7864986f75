// The verbs medium's settings ([verbs]): what Settings holds for it, and its
// keys, in every build (a configuration reads the same where rdma-core is
// missing). The binding (verbs.hpp, with rdma-core) maps them onto the
// medium's options.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace mdcast::media::verbs {
class RequestInbox;  // verbs_front_door.hpp, where the verbs medium is built
}  // namespace mdcast::media::verbs

namespace mdcast::settings {

struct SettingKey;

struct VerbsSettings {
  std::string device;                // "" = the device that owns local_ip
  uint8_t port = 1;
  int gid_index = 1;                 // RoCE v2 / IPv4
  std::string local_ip;              // "" = the IPv4 address of (device, port, gid_index)
  std::string group = "239.77.0.1";
  uint32_t qkey = 0x01234567;         // rdma_cm's RDMA_UDP_QKEY (docs/protocol.md 1.4)
  std::string control_ip;            // publisher: listen address; subscriber: the publisher's
  uint16_t control_port = 7471;
  bool rdma_read = true;             // retransmissions by RDMA READ of the publisher's ring
  double rate = 100'000;             // peak datagrams/s: the receive ring holds ~100 ms of it
  bool log_setup = true;             // not a config key: the bench's children keep setup lines quiet
  // Not a key: a publisher of several channels hands each channel's server
  // the inbox of its shared RC endpoint (at control_ip:control_port).
  std::shared_ptr<media::verbs::RequestInbox> control_inbox;
};

// Its keys ("verbs.*"), in setting_keys() with the others (src/settings/media/verbs_keys.cpp).
void add_verbs_keys(std::map<std::string, SettingKey>& t);

}  // namespace mdcast::settings
