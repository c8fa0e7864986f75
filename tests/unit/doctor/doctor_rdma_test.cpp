// mdcast doctor on fake /sys/class/infiniband trees: devices, port states,
// link layers, GID types, the port and GID mdcast would bind, the QKey.
#include <gtest/gtest.h>

#include "fake_tree.hpp"
#include "mdcast/doctor/doctor.hpp"
#include "mdcast/doctor/sysfs.hpp"

namespace mdcast::doctor::test {
namespace {

TEST(DoctorRdma, NoDeviceSaysSoAndExplainsSoftRoce) {
  FakeTree t;  // no /sys/class/infiniband at all: a kernel without RDMA
  auto r = diagnose(t.options(Medium::kShm));
  EXPECT_EQ(need(r, "rdma", "devices").level, Level::kOk);
  EXPECT_NE(need(r, "rdma", "devices").value.find("no RDMA support"), std::string::npos);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("rdma_rxe"), std::string::npos);
  EXPECT_NE(r.notes[0].find("tools/softroce-vm"), std::string::npos);
  EXPECT_FALSE(r.has_errors());

  t.mkdir("/sys/class/infiniband");  // RDMA core loaded, no device
  r = diagnose(t.options(Medium::kVerbs));
  EXPECT_EQ(need(r, "rdma", "devices").level, Level::kError);
  EXPECT_NE(need(r, "rdma", "devices").value.find("is empty"), std::string::npos);
  EXPECT_TRUE(r.has_errors());
  EXPECT_EQ(need(r, "verbs", "qkey").level, Level::kOk);  // the settings are still shown
}

TEST(DoctorRdma, SysfsReaderParsesGidTypesAndStates) {
  FakeTree t;
  t.rxe();
  const auto devs = read_rdma_devices(t.root());
  ASSERT_TRUE(devs);
  ASSERT_EQ(devs->size(), 1u);
  const auto& d = (*devs)[0];
  EXPECT_EQ(d.name, "rxe0");
  EXPECT_TRUE(d.soft_roce);
  EXPECT_FALSE(d.iwarp);
  EXPECT_EQ(d.parent, "dummy0");
  ASSERT_EQ(d.ports.size(), 1u);
  const auto& p = d.ports[0];
  EXPECT_EQ(p.state.name, "ACTIVE");
  EXPECT_EQ(p.phys_state.name, "LinkUp");
  EXPECT_EQ(p.link_layer, "Ethernet");
  ASSERT_EQ(p.gids.size(), 2u);  // the all-zero entry 2 is skipped
  EXPECT_EQ(p.gids[0].type, "IB/RoCE v1");
  EXPECT_EQ(p.gids[0].ipv4, "");
  EXPECT_EQ(p.gids[1].type, "RoCE v2");
  EXPECT_EQ(p.gids[1].ipv4, "10.77.0.1");
  EXPECT_EQ(p.gids[1].netdev, "dummy0");
}

TEST(DoctorRdma, SoftRoceActiveIsReadyForVerbs) {
  FakeTree t;
  t.rxe();
  const auto r = diagnose(t.options(Medium::kVerbs));
  for (const auto& f : r.findings) EXPECT_NE(f.level, Level::kError) << f.area << "/" << f.check << ": " << f.value;
  EXPECT_EQ(need(r, "rdma", "rxe0 port 1 state").level, Level::kOk);
  EXPECT_EQ(need(r, "rdma", "rxe0 port 1 physical state").value, "LinkUp");
  EXPECT_EQ(need(r, "rdma", "rxe0 port 1 link layer").value, "Ethernet (RoCE)");
  EXPECT_NE(need(r, "rdma", "rxe0").value.find("Soft-RoCE"), std::string::npos);
  EXPECT_EQ(need(r, "rdma", "rxe0 port 1 gid 1").advice, "mdcast uses this GID");
  EXPECT_EQ(need(r, "rdma", "rxe0 port 1 gid 0").advice, "");
  EXPECT_EQ(need(r, "verbs", "port").value, "rxe0 port 1 GID 1 (RoCE v2, 10.77.0.1)");
  EXPECT_EQ(need(r, "verbs", "multicast route").level, Level::kOk);
  EXPECT_NE(need(r, "verbs", "qkey").value.find("0x01234567"), std::string::npos);
  EXPECT_FALSE(r.has_errors());
}

TEST(DoctorRdma, SettingsPickThePort) {
  FakeTree t;
  t.rxe();
  auto o = t.options(Medium::kVerbs);
  o.verbs.local_ip = "10.77.0.1";
  EXPECT_EQ(need(diagnose(o), "verbs", "port").level, Level::kOk);
  o.verbs.local_ip = "10.99.0.1";  // on no RDMA netdev
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "verbs", "port").level, Level::kError);
  EXPECT_NE(need(r, "verbs", "port").value.find("10.99.0.1"), std::string::npos);
  o.verbs.local_ip = "10.77.0.1";
  o.verbs.device = "mlx5_0";  // the address is rxe0's
  EXPECT_NE(need(diagnose(o), "verbs", "port").value.find("belongs to rxe0"), std::string::npos);
  o.verbs.local_ip.clear();
  o.verbs.device = "rxe0";
  o.verbs.gid_index = 0;  // the link-local RoCE v1 GID maps no IPv4 address
  r = diagnose(o);
  EXPECT_EQ(need(r, "verbs", "port").level, Level::kError);
  EXPECT_NE(need(r, "verbs", "port").value.find("maps no IPv4 address"), std::string::npos);
  o.verbs.device = "nope0";
  EXPECT_NE(need(diagnose(o), "verbs", "port").value.find("there are: rxe0"), std::string::npos);
}

TEST(DoctorRdma, PortStatesOfThePortInUseAreErrors) {
  for (const auto& [state, phys, bad] : {std::tuple{"2: INIT", "5: LinkUp", "state"},
                                         std::tuple{"1: DOWN", "2: Polling", "physical state"},
                                         std::tuple{"1: DOWN", "3: Disabled", "physical state"},
                                         std::tuple{"3: ARMED", "5: LinkUp", "state"}}) {
    FakeTree t;
    t.rxe(state, phys);
    auto r = diagnose(t.options(Medium::kVerbs));
    EXPECT_EQ(need(r, "rdma", std::string("rxe0 port 1 ") + bad).level, Level::kError) << state << " " << phys;
    EXPECT_FALSE(need(r, "rdma", std::string("rxe0 port 1 ") + bad).advice.empty());
    // The same port is only a warning when the medium does not use it.
    r = diagnose(t.options(Medium::kShm));
    EXPECT_EQ(need(r, "rdma", std::string("rxe0 port 1 ") + bad).level, Level::kWarning) << state << " " << phys;
    EXPECT_FALSE(r.has_errors());
  }
}

TEST(DoctorRdma, InfiniBandWithoutSubnetManager) {
  FakeTree t;
  const std::string p = "/sys/class/infiniband/mlx5_0/ports/1";
  t.write("/sys/class/infiniband/mlx5_0/node_type", "1: CA");
  t.write("/sys/class/infiniband/mlx5_0/fw_ver", "20.31.1014");
  t.symlink("../../../../bus/pci/drivers/mlx5_core", "/sys/class/infiniband/mlx5_0/device/driver");
  t.write(p + "/state", "2: INIT");
  t.write(p + "/phys_state", "5: LinkUp");
  t.write(p + "/link_layer", "InfiniBand");
  t.write(p + "/lid", "0x0");
  t.write(p + "/sm_lid", "0x0");
  t.write(p + "/gids/0", "fe80:0000:0000:0000:0c42:a103:0012:3456");
  auto o = t.options(Medium::kVerbs);
  o.verbs.local_ip = "192.168.10.1";  // IPoIB: not in the GID table
  const auto r = diagnose(o);
  EXPECT_EQ(need(r, "verbs", "port").level, Level::kOk) << need(r, "verbs", "port").value;
  EXPECT_NE(need(r, "verbs", "port").advice.find("IPoIB"), std::string::npos);
  EXPECT_EQ(need(r, "rdma", "mlx5_0 port 1 state").level, Level::kError);
  EXPECT_NE(need(r, "rdma", "mlx5_0 port 1 state").advice.find("opensm"), std::string::npos);
  EXPECT_EQ(need(r, "rdma", "mlx5_0 port 1 lid").level, Level::kError);
  EXPECT_NE(need(r, "rdma", "mlx5_0 port 1 lid").advice.find("no subnet manager"), std::string::npos);
  EXPECT_EQ(need(r, "rdma", "mlx5_0 port 1 link layer").value, "InfiniBand");
  EXPECT_NE(need(r, "rdma", "mlx5_0").value.find("driver mlx5_core"), std::string::npos);
  // Default settings (GID index 1, RoCE v2 IPv4) find nothing on IB: an error that says what to set.
  const auto d = diagnose(t.options(Medium::kVerbs));
  EXPECT_EQ(need(d, "verbs", "port").level, Level::kError);
  EXPECT_NE(need(d, "verbs", "port").value.find("IPoIB"), std::string::npos);
}

TEST(DoctorRdma, QKeyAndGroupSettings) {
  FakeTree t;
  t.rxe();
  auto o = t.options(Medium::kVerbs);
  o.verbs.qkey = 0x4d44434d;
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "verbs", "qkey").level, Level::kOk);
  EXPECT_NE(need(r, "verbs", "qkey").advice.find("mckey"), std::string::npos);
  o.verbs.qkey = 0x80000001;
  EXPECT_EQ(need(diagnose(o), "verbs", "qkey").level, Level::kError);
  o.verbs.qkey = kRdmaCmQKey;
  o.verbs.group = "10.1.1.1";
  EXPECT_EQ(need(diagnose(o), "verbs", "group").level, Level::kError);
}

TEST(DoctorRdma, MulticastRouteToTheRdmaNetdev) {
  FakeTree t;
  t.rxe();
  t.write("/proc/net/route",
          "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "dummy0\t00004D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
  auto r = diagnose(t.options(Medium::kVerbs));
  EXPECT_EQ(need(r, "verbs", "multicast route").level, Level::kError);
  EXPECT_NE(need(r, "verbs", "multicast route").advice.find("ip route add 224.0.0.0/4 dev dummy0"), std::string::npos);
  t.write("/proc/net/route",
          "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
  r = diagnose(t.options(Medium::kVerbs));
  EXPECT_EQ(need(r, "verbs", "multicast route").level, Level::kWarning);
  EXPECT_EQ(need(r, "verbs", "multicast route").value, "224.0.0.0/4 routes through eth0, not dummy0");
}

TEST(DoctorRdma, IwarpHasNoUdMulticast) {
  FakeTree t;
  t.write("/sys/class/infiniband/siw0/node_type", "4: RNIC");
  t.write("/sys/class/infiniband/siw0/ports/1/state", "4: ACTIVE");
  t.write("/sys/class/infiniband/siw0/ports/1/phys_state", "5: LinkUp");
  t.write("/sys/class/infiniband/siw0/ports/1/link_layer", "Ethernet");
  const auto r = diagnose(t.options(Medium::kShm));
  EXPECT_EQ(need(r, "rdma", "siw0").level, Level::kWarning);
  EXPECT_NE(need(r, "rdma", "siw0").advice.find("no UD multicast"), std::string::npos);
}

}  // namespace
}  // namespace mdcast::doctor::test
