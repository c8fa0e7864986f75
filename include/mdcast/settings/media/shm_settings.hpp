// The shm medium's settings ([shm]): what Settings holds for it, and its
// keys. The binding (shm.hpp) maps them onto the medium's options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace mdcast::settings {

struct SettingKey;

struct ShmOptions {
  size_t slots = 16384;
  size_t max_datagram = 4032;
  bool huge_pages = true;
  std::string dir;
  std::string group;                      // publisher: readers' group ("" = this user only)
  uint64_t max_bytes = uint64_t{4} << 30; // publisher: largest ring it creates
  size_t readers = 1024;                  // publisher: reader slots (subscribers that can block), media::shm::kDefaultReaderSlots
  std::string publisher_user;             // subscriber: whose ring it trusts ("" = its own user)
  std::string rail_b;                     // subscriber: a pair's other member's feed name, read as rail B ("" = none)
};

// Its keys ("shm.*"), in setting_keys() with the others (src/settings/media/shm_keys.cpp).
void add_shm_keys(std::map<std::string, SettingKey>& t);

}  // namespace mdcast::settings
