#include "mdcast/media/channel_group.hpp"

#include <arpa/inet.h>

#include "mdcast/core/error.hpp"

namespace mdcast::media {

std::string channel_group(const std::string& group, uint32_t index) {
  const size_t end = group.find_first_of(":@");
  const std::string addr = group.substr(0, end), rest = end == std::string::npos ? "" : group.substr(end);
  in_addr a{};
  if (inet_pton(AF_INET, addr.c_str(), &a) != 1) fail("'{}': '{}' is not an IPv4 address", group, addr);
  const uint32_t first = ntohl(a.s_addr), mine = first + index;
  if ((mine >> 28) != 0xe || (mine >> 24) != (first >> 24))
    fail("'{}' plus channel index {} leaves its multicast range: choose a lower first group", group, index);
  a.s_addr = htonl(mine);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a, text, sizeof text);
  return std::string(text) + rest;
}

}  // namespace mdcast::media
