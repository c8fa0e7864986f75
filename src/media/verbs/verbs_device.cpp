// What the host's RDMA devices are and allow: the one enumeration of devices
// and ports (libibverbs), shared by the medium's setup (query_device, the
// local address of a GID), `mdcast doctor` and `mdcast-verbs-probe info`.
// Control code: it may allocate and throw.
#include <endian.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "mdcast/core/error.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::verbs {

namespace {

// Owns a device list and one open context at a time.
struct DeviceList {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  DeviceList() = default;
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  ~DeviceList() {
    if (list) ibv_free_device_list(list);
  }
};

struct Context {
  ibv_context* ctx;
  explicit Context(ibv_device* d) : ctx(ibv_open_device(d)) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() {
    if (ctx) ibv_close_device(ctx);
  }
};

// fn(name, ctx, device_attr, port, port_attr) for every port that answers;
// bad(name, port, why) for a device or port that does not (port 0: the device).
template <class Fn, class Bad>
void for_each_port(Fn&& fn, Bad&& bad) {
  DeviceList dl;
  for (int i = 0; dl.list && i < dl.n; ++i) {
    const std::string name = ibv_get_device_name(dl.list[i]);
    Context c(dl.list[i]);
    if (!c.ctx) {
      bad(name, 0, fmt::format("ibv_open_device: {} (is /dev/infiniband/uverbs* readable by this user?)",
                               std::strerror(errno)));
      continue;
    }
    ibv_device_attr da{};
    if (const int rc = ibv_query_device(c.ctx, &da)) {
      bad(name, 0, fmt::format("ibv_query_device: {}", std::strerror(rc)));
      continue;
    }
    for (uint8_t p = 1; p <= da.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      if (const int rc = ibv_query_port(c.ctx, p, &pa)) {
        bad(name, p, fmt::format("ibv_query_port: {}", std::strerror(rc)));
        continue;
      }
      fn(name, c.ctx, da, p, pa);
    }
  }
}

void fill(DeviceInfo& d, const std::string& name, uint8_t port, const ibv_device_attr& da, const ibv_port_attr& pa) {
  d.name = name;
  d.port = port;
  d.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  d.state = pa.state;
  d.active_mtu = pa.active_mtu;
  d.mtu_bytes = mtu_bytes(pa.active_mtu);
  d.max_datagram = std::min(d.mtu_bytes, wire::kMaxDatagram);
  d.max_qp_wr = da.max_qp_wr;
  d.max_cqe = da.max_cqe;
  d.max_qp_rd_atom = da.max_qp_rd_atom;
  d.max_qp_init_rd_atom = da.max_qp_init_rd_atom;
  d.max_mcast_grp = da.max_mcast_grp;
  d.max_mcast_qp_attach = da.max_mcast_qp_attach;
  d.max_total_mcast_qp_attach = da.max_total_mcast_qp_attach;
}

}  // namespace

std::string DeviceInfo::describe() const {
  return fmt::format("{} port {} ({}, {}, active_mtu {}, max_mcast_grp {}, max_mcast_qp_attach {})", name, port,
                     ethernet ? "RoCE" : "InfiniBand", ibv_port_state_str(state), mtu_bytes, max_mcast_grp,
                     max_mcast_qp_attach);
}

DeviceInfo query_device(ibv_context* ctx, uint8_t port) {
  DeviceInfo d;
  const std::string name = ibv_get_device_name(ctx->device);
  ibv_device_attr da{};
  if (const int rc = ibv_query_device(ctx, &da))
    fail("ibv_query_device({}): {} (errno {})", name, std::strerror(rc), rc);
  ibv_port_attr pa{};
  if (const int rc = ibv_query_port(ctx, port, &pa))
    fail("ibv_query_port({} port {}): {} (errno {})", name, port, std::strerror(rc), rc);
  fill(d, name, port, da, pa);
  if (pa.state != IBV_PORT_ACTIVE)
    fail("{} port {} is {}, not ACTIVE (link down, or no subnet manager on InfiniBand; `mdcast doctor` says which)",
         d.name, port, ibv_port_state_str(pa.state));
  if (d.max_datagram < wire::kMinDatagram)
    fail("{} port {}: active MTU {} is below the {} bytes a datagram needs", d.name, port, d.mtu_bytes,
         wire::kMinDatagram);
  return d;
}

std::vector<PortReport> query_ports() {
  std::vector<PortReport> out;
  for_each_port(
      [&](const std::string& name, ibv_context*, const ibv_device_attr& da, uint8_t p, const ibv_port_attr& pa) {
        PortReport r;
        fill(r.info, name, p, da, pa);
        r.max_mtu = pa.max_mtu;
        r.max_mtu_bytes = mtu_bytes(pa.max_mtu);
        r.phys_state = pa.phys_state;
        r.lid = pa.lid;
        r.sm_lid = pa.sm_lid;
        r.gid_tbl_len = pa.gid_tbl_len;
        r.fw_ver = da.fw_ver;
        r.node_guid = be64toh(da.node_guid);
        r.sys_image_guid = be64toh(da.sys_image_guid);
        out.push_back(std::move(r));
      },
      [&](const std::string& name, uint8_t p, std::string why) {
        PortReport r;
        r.info.name = name;
        r.info.port = p;
        r.error = std::move(why);
        out.push_back(std::move(r));
      });
  return out;
}

bool rdma_device_present() noexcept {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    (void)e;
    return true;
  }
  return false;
}

std::vector<LocalAddress> local_addresses() {
  std::vector<LocalAddress> out;
  for_each_port(
      [&](const std::string& name, ibv_context* ctx, const ibv_device_attr&, uint8_t p, const ibv_port_attr& pa) {
        for (int g = 0; g < pa.gid_tbl_len; ++g) {
          ibv_gid_entry e{};
          if (ibv_query_gid_ex(ctx, p, static_cast<uint32_t>(g), &e, 0)) continue;
          const uint8_t* raw = e.gid.raw;
          static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
          if (e.gid_type != IBV_GID_TYPE_ROCE_V2 || std::memcmp(raw, kMapped, 12) != 0) continue;
          out.push_back({name, p, g, fmt::format("{}.{}.{}.{}", raw[12], raw[13], raw[14], raw[15])});
        }
      },
      [](const std::string&, uint8_t, const std::string&) {});
  return out;
}

std::optional<std::string> address_of(const std::string& device, uint8_t port, int gid_index) {
  for (const auto& a : local_addresses())
    if (a.device == device && a.port == port && a.gid_index == gid_index) return a.ip;
  return std::nullopt;
}

}  // namespace mdcast::media::verbs
