// `mdcast doctor`: RDMA devices and ports as ibstat / ibv_devinfo -v show
// them, interpreted for mdcast, and the device, port and GID the verbs
// medium would bind with the given settings (the same choice as
// media::verbs::resolve_options, made from sysfs so a fake tree tests it).
#include <arpa/inet.h>
#include <fmt/format.h>

#include <sstream>

#include "checks.hpp"
#include "mdcast/doctor/sysfs.hpp"

namespace mdcast::doctor::detail {

namespace {

struct Choice {
  const RdmaDevice* dev = nullptr;
  const RdmaPort* port = nullptr;
  const RdmaGid* gid = nullptr;  // null on InfiniBand with local_ip (rdma_cm goes through IPoIB)
  std::string why;               // how it was chosen, or why nothing was
};

const RdmaPort* port_of(const RdmaDevice& d, int n) {
  for (const auto& p : d.ports)
    if (p.number == n) return &p;
  return nullptr;
}

Choice choose(const Options& o, const std::vector<RdmaDevice>& devs) {
  Choice c;
  const auto& v = o.verbs;
  if (!v.local_ip.empty()) {
    for (const auto& d : devs)
      for (const auto& p : d.ports)
        for (const auto& g : p.gids)
          if (g.ipv4 == v.local_ip && (!c.gid || (g.type == "RoCE v2" && c.gid->type != "RoCE v2"))) c = {&d, &p, &g, {}};
    if (c.dev && !v.device.empty() && c.dev->name != v.device) {
      c.why = fmt::format("local_ip {} belongs to {}, not to the configured device {}", v.local_ip, c.dev->name, v.device);
      c.dev = nullptr;
      return c;
    }
    if (c.dev) {
      c.why = fmt::format("local_ip {} is GID {} of {} port {}", v.local_ip, c.gid->index, c.dev->name, c.port->number);
      return c;
    }
    // InfiniBand: the address is the IPoIB netdev's, not in the GID table.
    for (const auto& d : devs)
      if (v.device.empty() || d.name == v.device)
        for (const auto& p : d.ports)
          if (p.link_layer == "InfiniBand" && (v.device.empty() || p.number == v.port)) {
            c = {&d, &p, nullptr, fmt::format("local_ip {} is no RoCE GID: on InfiniBand rdma_cm maps it through "
                                              "IPoIB to a port ({} port {} assumed)", v.local_ip, d.name, p.number)};
            return c;
          }
    c.why = fmt::format("local_ip {} is in no RDMA device's GID table (is the address on the RDMA netdev?)", v.local_ip);
    return c;
  }
  if (!v.device.empty()) {
    for (const auto& d : devs) {
      if (d.name != v.device) continue;
      const RdmaPort* p = port_of(d, v.port);
      if (!p) {
        c.why = fmt::format("device {} has no port {}", v.device, v.port);
        return c;
      }
      for (const auto& g : p->gids)
        if (g.index == v.gid_index && !g.ipv4.empty()) {
          c = {&d, p, &g, fmt::format("device {} port {} GID {} maps {}", d.name, p->number, g.index, g.ipv4)};
          return c;
        }
      c.why = fmt::format("device {} port {} GID index {} maps no IPv4 address ({}): set local_ip", v.device, v.port,
                          v.gid_index,
                          p->link_layer == "InfiniBand" ? "InfiniBand: give the IPoIB address"
                                                        : "no IPv4 address on its netdev?");
      return c;
    }
    std::string all;
    for (const auto& d : devs) all += (all.empty() ? "" : ", ") + d.name;
    c.why = fmt::format("no RDMA device '{}' (there are: {})", v.device, all);
    return c;
  }
  for (const auto& d : devs)
    for (const auto& p : d.ports)
      for (const auto& g : p.gids)
        if (p.number == v.port && g.index == v.gid_index && g.type == "RoCE v2" && !g.ipv4.empty()) {
          c = {&d, &p, &g, fmt::format("the first RoCE v2 IPv4 GID at index {}: {} port {} ({})", g.index, d.name,
                                       p.number, g.ipv4)};
          return c;
        }
  c.why = fmt::format("no port {} has a RoCE v2 IPv4 GID at index {}: set local_ip (InfiniBand: the IPoIB address), "
                      "or device and gid_index",
                      v.port, v.gid_index);
  return c;
}

// What each state means for mdcast, for the port it uses (level `bad`) and the others.
void port_state(Report& r, const std::string& where, const RdmaPort& p, Level bad) {
  const std::string& s = p.state.name;
  if (s == "ACTIVE")
    r.add("rdma", where + " state", Level::kOk, "ACTIVE: configured and passing traffic");
  else if (s == "INIT")
    r.add("rdma", where + " state", bad, "INIT: link up, not configured",
          p.link_layer == "InfiniBand" ? "no subnet manager has configured it: run opensm on one host (or enable the "
                                         "switch's SM)"
                                       : "the netdev is not ready: check `ip link` and `rdma link`");
  else if (s == "ARMED")
    r.add("rdma", where + " state", bad, "ARMED: configured by the SM, not yet activated",
          "the SM has not activated it: wait a few seconds, then check the SM's log");
  else
    r.add("rdma", where + " state", bad, (s.empty() ? "unknown" : s) + ": no usable link",
          "see the physical state below");
  const std::string& ph = p.phys_state.name;
  if (ph == "LinkUp")
    r.add("rdma", where + " physical state", Level::kOk, "LinkUp");
  else if (ph == "Polling")
    r.add("rdma", where + " physical state", bad, "Polling: no link partner",
          "check the cable, the transceiver and that the switch port is enabled");
  else if (ph == "Disabled")
    r.add("rdma", where + " physical state", bad, "Disabled: the port is switched off",
          p.link_layer == "Ethernet" ? "bring the netdev up: ip link set dev <netdev> up" : "enable it: ibportstate <lid> <port> enable");
  else
    r.add("rdma", where + " physical state", bad, ph.empty() ? "unknown" : ph,
          "the link is not up: check cable and switch (LinkErrorRecovery/Sleep mean a bad or idle link)");
}

struct Route {
  std::string iface;
  uint32_t dest = 0, mask = 0;  // host order
};

// The interface /proc/net/route sends 224.0.0.0/4 through (longest prefix), "" if none.
std::string multicast_route(const std::string& root) {
  const auto text = read_text(root, "/proc/net/route");
  if (!text) return "?";
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);  // header
  std::string best;
  int best_len = -1;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string iface, dst, gw, flags, ref, use, metric, mask;
    if (!(l >> iface >> dst >> gw >> flags >> ref >> use >> metric >> mask)) continue;
    const uint32_t d = ntohl(static_cast<uint32_t>(std::strtoul(dst.c_str(), nullptr, 16)));
    const uint32_t m = ntohl(static_cast<uint32_t>(std::strtoul(mask.c_str(), nullptr, 16)));
    constexpr uint32_t kGroup = 0xE0000001;  // 224.0.0.1: any group
    if ((kGroup & m) != d) continue;
    const int len = __builtin_popcount(m);
    if (len > best_len) best = iface, best_len = len;
  }
  return best;
}

void no_device(const Options& o, Report& r, bool kernel_has_rdma) {
  const bool need = o.medium == Medium::kVerbs;
  r.add("rdma", "devices", need ? Level::kError : Level::kOk,
        kernel_has_rdma ? "no RDMA device (/sys/class/infiniband is empty)"
                        : "no RDMA device: this kernel has no RDMA support (no /sys/class/infiniband)",
        need ? "the verbs medium needs an InfiniBand or RoCE device, or Soft-RoCE (see the note above)"
             : fmt::format("not needed by the {} medium", to_string(o.medium)));
  r.notes.push_back(
      "No RDMA device here. The verbs medium needs InfiniBand or RoCE; without an HCA, Soft-RoCE (the kernel's "
      "rdma_rxe) turns any Ethernet netdev into a RoCE v2 device: `modprobe rdma_rxe && rdma link add rxe0 type rxe "
      "netdev eth0` (then `mdcast doctor --medium verbs` again). Where the kernel has no RDMA support at all, the "
      "project's VM harness tools/softroce-vm/run.sh boots a small qemu VM with Soft-RoCE and runs mdcast in it: "
      "`make test-verbs` (the verbs tests), `make demo-rdma` (the demo over RDMA); see tools/softroce-vm/README.md. "
      "Shared memory (--medium shm) and UDP multicast (--medium udp) need no RDMA.");
}

// The settings every member of the group must share.
void check_group_settings(const Options& o, Report& r) {
  const bool rdma_cm = o.verbs.qkey == kRdmaCmQKey;
  r.add("verbs", "qkey", (o.verbs.qkey & 0x80000000u) ? Level::kError : Level::kOk,
        fmt::format("0x{:08x}{}", o.verbs.qkey, rdma_cm ? " (rdma_cm's RDMA_UDP_QKEY, the default)" : ""),
        (o.verbs.qkey & 0x80000000u)
            ? "the high bit makes it a controlled QKey, which needs privilege: pick one below 0x80000000"
            : rdma_cm ? "every member of the group must use the same QKey; rdma-core tools (mckey) hear this feed"
                      : "every member of the group must use this QKey; rdma-core tools such as mckey use 0x01234567 "
                        "and hear nothing of this feed");
  in_addr g{};
  const bool mc = ::inet_pton(AF_INET, o.verbs.group.c_str(), &g) == 1 && (ntohl(g.s_addr) >> 28) == 0xE;
  r.add("verbs", "group", mc ? Level::kOk : Level::kError, o.verbs.group,
        mc ? "" : "not an IPv4 multicast address (224.0.0.0/4): set verbs.group (--group)");
}

}  // namespace

void check_rdma(const Options& o, Report& r) {
  const bool need = o.medium == Medium::kVerbs;
  if (!o.media.verbs_ports)
    r.add("rdma", "libibverbs", need ? Level::kError : Level::kOk, "built without rdma-core",
          "this mdcast has no verbs medium and cannot query MTU or multicast limits: install libibverbs-dev and "
          "librdmacm-dev (scripts/install-deps.sh) and rebuild");

  const auto devs = read_rdma_devices(o.root);
  if (!devs || devs->empty()) {
    no_device(o, r, devs.has_value());
    if (need) check_group_settings(o, r);
    return;
  }
  const Choice c = need ? choose(o, *devs) : Choice{};
  const bool ask_verbs = o.media.verbs_ports && o.query_verbs && host_root(o);
  const std::vector<VerbsPort> vp = ask_verbs ? o.media.verbs_ports() : std::vector<VerbsPort>{};

  for (const auto& d : *devs) {
    std::string v = fmt::format("{}{}, fw {}, node GUID {}, system image GUID {}{}",
                                d.soft_roce ? "Soft-RoCE (rdma_rxe)" : d.iwarp ? "iWARP" : "HCA",
                                d.node_type.empty() ? "" : " " + d.node_type, d.fw_ver.empty() ? "-" : d.fw_ver,
                                d.node_guid.empty() ? "-" : d.node_guid, d.sys_image_guid.empty() ? "-" : d.sys_image_guid,
                                d.driver.empty() ? "" : ", driver " + d.driver);
    const bool chosen = c.dev == &d;
    if (d.iwarp)
      r.add("rdma", d.name, chosen ? Level::kError : Level::kWarning, v,
            "iWARP has no UD multicast: the verbs medium needs InfiniBand or RoCE");
    else
      r.add("rdma", d.name, Level::kOk, v,
            d.soft_roce ? fmt::format("Soft-RoCE{}: right for tests, software speed (use an HCA for production)",
                                      d.parent.empty() ? "" : " on " + d.parent)
                        : "");
    for (const auto& p : d.ports) {
      const std::string where = fmt::format("{} port {}", d.name, p.number);
      const bool sel = chosen && c.port == &p;
      const Level bad = sel ? Level::kError : Level::kWarning;
      port_state(r, where, p, bad);
      const bool ib = p.link_layer == "InfiniBand";
      r.add("rdma", where + " link layer", Level::kOk, ib ? "InfiniBand" : p.link_layer == "Ethernet" ? "Ethernet (RoCE)" : p.link_layer,
            ib ? "IB: multicast joins go to the subnet manager (SA); local_ip is the IPoIB address"
               : "RoCE: multicast joins are IGMP on the netdev; local_ip is the netdev's IPv4 address (a RoCE v2 GID)");
      if (ib) {
        r.add("rdma", where + " lid", p.lid ? Level::kOk : bad, fmt::format("base LID 0x{:x}, SM LID 0x{:x}", p.lid, p.sm_lid),
              p.sm_lid ? "" : "no subnet manager: multicast joins fail on InfiniBand: run opensm on one host of the fabric");
        if (p.sm_lid == 0 && p.lid != 0) r.findings.back().level = bad;
      }
      if (!p.rate.empty()) r.add("rdma", where + " rate", Level::kOk, p.rate);
      for (const auto& g : p.gids) {
        const bool used = sel && c.gid == &g;
        std::string gv = g.gid;
        if (!g.type.empty()) gv += " " + g.type;
        if (!g.ipv4.empty()) gv += ", IPv4 " + g.ipv4;
        if (!g.netdev.empty()) gv += " on " + g.netdev;
        r.add("rdma", fmt::format("{} gid {}", where, g.index), Level::kOk, gv, used ? "mdcast uses this GID" : "");
      }
      for (const auto& q : vp) {
        if (q.device != d.name || q.port != p.number) continue;
        if (!q.error.empty()) {
          r.add("rdma", where + " verbs", bad, q.error);
          continue;
        }
        const std::string mv = fmt::format("active {} of max {}: datagrams of up to {} bytes", q.active_mtu, q.max_mtu,
                                           std::min<size_t>(q.active_mtu, 4096));
        if (q.active_mtu < q.max_mtu)
          r.add("rdma", where + " mtu", Level::kWarning, mv,
                ib ? "the subnet manager's partition MTU limits it (opensm: partitions.conf mtu=5 for 4096)"
                   : "the netdev's MTU limits it: RoCE 4096 needs a netdev MTU of 4200 or more (ip link set dev X "
                     "mtu 9000); every member must agree");
        else
          r.add("rdma", where + " mtu", Level::kOk, mv);
        r.add("rdma", where + " multicast limits", q.max_mcast_qp_attach > 0 ? Level::kOk : bad,
              fmt::format("max_mcast_grp {}, max_mcast_qp_attach {}, max_total_mcast_qp_attach {}", q.max_mcast_grp,
                          q.max_mcast_qp_attach, q.max_total_mcast_qp_attach),
              "at most max_mcast_qp_attach subscriber processes per host and group; a channel is one group");
      }
      if (vp.empty() && sel && ask_verbs)
        r.add("rdma", where + " verbs", Level::kError, "libibverbs lists no device although sysfs does",
              "is ibverbs-providers (the device's user-space driver, e.g. librxe, libmlx5) installed?");
    }
  }
  if (!need) return;
  check_group_settings(o, r);
  if (!c.dev) {
    r.add("verbs", "port", Level::kError, c.why, "mdcast publish/subscribe --medium verbs would fail to start");
    return;
  }
  r.add("verbs", "port", Level::kOk,
        fmt::format("{} port {}{}", c.dev->name, c.port->number,
                    c.gid ? fmt::format(" GID {} ({}{})", c.gid->index, c.gid->type.empty() ? "?" : c.gid->type,
                                        c.gid->ipv4.empty() ? "" : ", " + c.gid->ipv4)
                          : ""),
        c.why);
  if (c.gid && c.gid->type != "RoCE v2" && c.port->link_layer == "Ethernet")
    r.add("verbs", "gid type", Level::kWarning, c.gid->type.empty() ? "unknown" : c.gid->type,
          "RoCE v1 is not routable and not what mdcast is tested on: use the RoCE v2 GID of the address");
  if (c.port->link_layer == "Ethernet" && c.gid) {
    const std::string via = multicast_route(o.root);
    const std::string& nd = c.gid->netdev;
    if (via == "?") {
    } else if (via.empty()) {
      r.add("verbs", "multicast route", Level::kError, "no route to 224.0.0.0/4",
            fmt::format("rdma_resolve_addr of the group fails: ip route add 224.0.0.0/4 dev {}", nd.empty() ? "<netdev>" : nd));
    } else if (!nd.empty() && via != nd) {
      r.add("verbs", "multicast route", Level::kWarning, fmt::format("224.0.0.0/4 routes through {}, not {}", via, nd),
            fmt::format("the group resolves from local_ip, but IGMP and other tools follow the route: ip route add "
                        "224.0.0.0/4 dev {}",
                        nd));
    } else {
      r.add("verbs", "multicast route", Level::kOk, "224.0.0.0/4 through " + via);
    }
  }
}

}  // namespace mdcast::doctor::detail
