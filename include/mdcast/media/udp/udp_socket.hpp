// Setting up the UDP medium's sockets: the interface, the multicast options,
// the buffers. Setup code: throws Error naming the interface, group and errno.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "mdcast/core/fd.hpp"
#include "mdcast/media/udp/udp_options.hpp"

namespace mdcast::media::udp {

struct Interface {
  std::string name;
  int index = 0;
  uint32_t address_be = 0;  // its first IPv4 address
  uint32_t mtu = 0;         // the kernel's
  bool loopback = false;
  bool multicast = false;   // IFF_MULTICAST (loopback carries multicast without it)
  [[nodiscard]] std::string address_text() const;
  // Payload bytes of one datagram at `mtu_override` (0: as Options::mtu says).
  [[nodiscard]] size_t payload(uint32_t mtu_override) const noexcept;
};

// By name ("eth0") or by one of its IPv4 addresses ("10.0.0.1"). Throws Error
// listing the interfaces there are when none matches.
[[nodiscard]] Interface find_interface(const std::string& name_or_address);

// Whether this kernel has UDP_SEGMENT / UDP_GRO (probed once on a scratch socket).
[[nodiscard]] bool kernel_has_gso() noexcept;
[[nodiscard]] bool kernel_has_gro() noexcept;

// A non-blocking socket sending to `group` out of `iface`, connected to it.
[[nodiscard]] UniqueFd open_sender(const Interface& iface, const GroupAddress& group, const Options& o,
                                   size_t datagram_bytes);

// A non-blocking socket bound to `group`'s address and port, joined on
// `iface`, hearing only that group (IP_MULTICAST_ALL off), with SO_RXQ_OVFL
// and, where asked and available, UDP_GRO and SO_BUSY_POLL. Sets *gro to
// whether GRO is on.
[[nodiscard]] UniqueFd open_receiver(const Interface& iface, const GroupAddress& group, const Options& o,
                                     size_t datagram_bytes, bool* gro);

// A rail set up again after its interface came back (udp_link.hpp): returns
// 0 or the errno of the failure, for the caller to retry. The receiver drops
// its membership on `old_index` (an error there means it was gone already)
// and joins on iface's index, which sends a fresh IGMP report; the sender
// names its interface again (IP_MULTICAST_IF holds an index).
[[nodiscard]] int rejoin_group(int fd, int old_index, const Interface& iface, const GroupAddress& group) noexcept;
[[nodiscard]] int reset_sender(int fd, const Interface& iface) noexcept;

// The buffer that holds ~100 ms at `rate` datagrams/s of datagram_bytes, as
// the kernel charges it (payload, headers, bookkeeping), at least 256 KiB:
// what size_buffer asks for, and what `mdcast doctor` compares rmem_max with.
[[nodiscard]] uint64_t buffer_bytes_for(double rate, size_t datagram_bytes) noexcept;

// Socket buffer sized for ~100 ms at o.rate datagrams of datagram_bytes;
// reports through o.log when the kernel holds it below that (naming the sysctl).
void size_buffer(int fd, bool receive, const Options& o, size_t datagram_bytes, const std::string& what);

void warn(const Options& o, const std::string& text);

}  // namespace mdcast::media::udp
