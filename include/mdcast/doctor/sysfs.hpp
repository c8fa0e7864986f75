// What `mdcast doctor` reads from sysfs and procfs, parsed but not judged:
// each reader takes the root the tree lives under ("/" on a host, a fake
// tree in tests) and returns nullopt / empty for what is not there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mdcast::doctor {

// A text file under root, trailing whitespace removed; nullopt when it cannot be read.
[[nodiscard]] std::optional<std::string> read_text(const std::string& root, const std::string& path);

// The part after "N: " of sysfs state files ("4: ACTIVE" -> "ACTIVE"), and N.
struct NumberedState {
  int number = -1;
  std::string name;
};
[[nodiscard]] NumberedState parse_numbered_state(const std::string& text);

struct RdmaGid {
  int index = 0;
  std::string gid;        // as sysfs writes it: "0000:0000:0000:0000:0000:ffff:0a4d:0001"
  std::string type;       // "RoCE v2", "IB/RoCE v1", "" (IB ports have no types)
  std::string netdev;     // gid_attrs/ndevs/N ("" on InfiniBand)
  std::string ipv4;       // "10.77.0.1" when the GID maps an IPv4 address, else ""
};

struct RdmaPort {
  int number = 0;
  NumberedState state;        // ACTIVE / INIT / ARMED / DOWN
  NumberedState phys_state;   // LinkUp / Polling / Disabled / Sleep ...
  std::string link_layer;     // "InfiniBand" / "Ethernet"
  uint32_t lid = 0;
  uint32_t sm_lid = 0;
  std::string rate;           // "100 Gb/sec (4X EDR)"
  std::vector<RdmaGid> gids;  // non-zero entries only
};

struct RdmaDevice {
  std::string name;           // mlx5_0, rxe0, siw0
  std::string node_type;      // "CA", "RNIC" (iWARP) ...
  std::string fw_ver;
  std::string node_guid;
  std::string sys_image_guid;
  std::string driver;         // the kernel driver ("mlx5_core"; "" for software devices)
  std::string parent;         // Soft-RoCE: the netdev it was added on
  bool soft_roce = false;     // rdma_rxe
  bool iwarp = false;         // node type RNIC (siw, iWARP NICs): no UD multicast
  std::vector<RdmaPort> ports;
};

// /sys/class/infiniband/*: nullopt when the directory is missing (a kernel
// without RDMA), an empty list when it is there and empty.
[[nodiscard]] std::optional<std::vector<RdmaDevice>> read_rdma_devices(const std::string& root);

// "fe80:...:ffff:0a4d:0001" style text -> "10.77.0.1" when IPv4-mapped, else "".
[[nodiscard]] std::string ipv4_of_gid(const std::string& gid);

struct HugePages {
  uint64_t total = 0;
  uint64_t free = 0;
  uint64_t page_bytes = 2u << 20;
};
[[nodiscard]] std::optional<HugePages> read_hugepages(const std::string& root);  // /proc/meminfo

// "0-3,8,10-11" -> 7. nullopt for text that is not a CPU list.
[[nodiscard]] std::optional<uint32_t> count_cpu_list(const std::string& text);

// The scaling governor of every CPU that has cpufreq: (governor, CPUs) pairs.
[[nodiscard]] std::vector<std::pair<std::string, uint32_t>> read_governors(const std::string& root);

struct NetInterface {
  std::string name;
  uint32_t mtu = 0;
  uint32_t flags = 0;         // IFF_* from /sys/class/net/X/flags
  std::string operstate;      // up / down / unknown
  uint32_t type = 0;          // ARPHRD_*: 1 Ethernet, 772 loopback, 32 InfiniBand (IPoIB)
};
[[nodiscard]] std::optional<NetInterface> read_interface(const std::string& root, const std::string& name);
[[nodiscard]] std::vector<std::string> list_interfaces(const std::string& root);

// net.ipv4.conf.<iface>.rp_filter as it applies: the larger of "all" and the interface's.
[[nodiscard]] std::optional<int> read_rp_filter(const std::string& root, const std::string& iface);

}  // namespace mdcast::doctor
