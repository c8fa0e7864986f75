// What a device and port allow, read once at setup: the active MTU (which
// bounds every datagram), inline size, queue limits and the multicast limits
// HCAs impose (max_mcast_grp: groups per device; max_mcast_qp_attach: QPs per
// group, i.e. subscriber processes per host and group).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdcast::media::verbs {

struct DeviceInfo {
  std::string name;              // e.g. mlx5_0, rxe0
  uint8_t port = 0;
  bool ethernet = false;         // RoCE (true) or InfiniBand link layer
  ibv_port_state state = IBV_PORT_NOP;
  ibv_mtu active_mtu = IBV_MTU_256;
  size_t mtu_bytes = 0;          // active_mtu in bytes: the UD payload limit
  size_t max_datagram = 0;       // min(mtu_bytes, wire::kMaxDatagram): use as PublisherConfig::max_datagram
  int max_qp_wr = 0;
  int max_cqe = 0;
  int max_qp_rd_atom = 0;        // RDMA READs a responder serves at once
  int max_qp_init_rd_atom = 0;   // RDMA READs an initiator keeps in flight
  int max_mcast_grp = 0;
  int max_mcast_qp_attach = 0;
  int max_total_mcast_qp_attach = 0;

  // One line for logs: "rxe0 port 1 (RoCE, ACTIVE, mtu 1024, mcast groups 8192, QPs/group 56)".
  [[nodiscard]] std::string describe() const;
};

// Queries device and port; throws Error naming the device and port.
[[nodiscard]] DeviceInfo query_device(ibv_context* ctx, uint8_t port);

[[nodiscard]] constexpr size_t mtu_bytes(ibv_mtu m) noexcept {
  return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? size_t{128} << static_cast<int>(m) : 0;
}

// Every RDMA device on this host with its ports, for diagnostics and for
// choosing a local address: (device, port, gid index, IPv4 address) of every
// RoCE GID that maps an IPv4 address. Empty when the host has no RDMA device.
struct LocalAddress {
  std::string device;
  uint8_t port;
  int gid_index;
  std::string ip;
};
[[nodiscard]] std::vector<LocalAddress> local_addresses();

// The IPv4 address behind (device, port, gid_index), or nullopt: how a local
// address is derived when only a device is configured.
[[nodiscard]] std::optional<std::string> address_of(const std::string& device, uint8_t port, int gid_index);

// What libibverbs says of one port of one device, without judging it (a port
// that is down is described, not refused): `mdcast doctor` and
// `mdcast-verbs-probe info` read the same list. query_device() is the one
// that refuses a port mdcast cannot use.
struct PortReport {
  DeviceInfo info;                   // name, port, link layer, state, active MTU, limits
  ibv_mtu max_mtu = IBV_MTU_256;
  size_t max_mtu_bytes = 0;
  uint8_t phys_state = 0;            // 5 LinkUp, 2 Polling, 3 Disabled ... (IB spec numbering)
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  int gid_tbl_len = 0;
  std::string fw_ver;
  uint64_t node_guid = 0;            // host byte order
  uint64_t sys_image_guid = 0;
  std::string error;                 // non-empty: the device or port could not be queried (why)
};
// Every port of every device libibverbs lists; empty when there is none.
[[nodiscard]] std::vector<PortReport> query_ports();

// True when /sys/class/infiniband lists a device (the tests' skip condition).
[[nodiscard]] bool rdma_device_present() noexcept;

}  // namespace mdcast::media::verbs
