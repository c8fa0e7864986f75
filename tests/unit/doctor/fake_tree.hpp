// A fake root for mdcast doctor's readers: a temporary directory with the
// sysfs/procfs files a test writes, removed at the end.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "mdcast/doctor/doctor.hpp"
#include "mdcast/settings/doctor.hpp"

namespace mdcast::doctor::test {

class FakeTree {
 public:
  FakeTree() {
    std::string t = (std::filesystem::temp_directory_path() / "mdcast-doctor-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
    root_ = t;
    mkdir("/dev/shm");  // the shm medium's ring directory, on the file system of the tree
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;
  ~FakeTree() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  void write(const std::string& path, const std::string& text) const {
    const auto p = std::filesystem::path(root_ + path);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void mkdir(const std::string& path) const { std::filesystem::create_directories(root_ + path); }
  void symlink(const std::string& target, const std::string& path) const {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::filesystem::create_symlink(target, root_ + path);
  }
  [[nodiscard]] const std::string& root() const { return root_; }

  // Options reading only this tree: no libibverbs, fixed host facts; the
  // media's own rules (datagram size, buffers) as mdcast doctor has them.
  [[nodiscard]] Options options(Medium m) const {
    Options o;
    o.media = settings::doctor_media();
    o.root = root_;
    o.medium = m;
    o.query_verbs = false;
    o.memlock_bytes = UINT64_MAX;
    o.may_lock_memory = false;
    return o;
  }

  // A loopback and an Ethernet interface, as /sys/class/net shows them.
  void interfaces() const {
    write("/sys/class/net/lo/mtu", "65536");
    write("/sys/class/net/lo/flags", "0x9");
    write("/sys/class/net/lo/operstate", "unknown");
    write("/sys/class/net/lo/type", "772");
    write("/sys/class/net/eth1/mtu", "1500");
    write("/sys/class/net/eth1/flags", "0x1003");
    write("/sys/class/net/eth1/operstate", "up");
    write("/sys/class/net/eth1/type", "1");
    write("/proc/sys/net/core/rmem_max", "212992");
    write("/proc/sys/net/ipv4/conf/all/rp_filter", "0");
    write("/proc/sys/net/ipv4/conf/eth1/rp_filter", "0");
    write("/proc/sys/net/ipv4/conf/lo/rp_filter", "0");
  }

  // One Soft-RoCE device on dummy0 (10.77.0.1), as the project's VM has it.
  void rxe(const std::string& state = "4: ACTIVE", const std::string& phys = "5: LinkUp") const {
    const std::string d = "/sys/class/infiniband/rxe0";
    write(d + "/node_type", "1: CA");
    write(d + "/fw_ver", "0.0.0");
    write(d + "/node_guid", "5054:00ff:fe12:3456");
    write(d + "/sys_image_guid", "5054:00ff:fe12:3456");
    write(d + "/parent", "dummy0");
    const std::string p = d + "/ports/1";
    write(p + "/state", state);
    write(p + "/phys_state", phys);
    write(p + "/link_layer", "Ethernet");
    write(p + "/lid", "0x0");
    write(p + "/sm_lid", "0x0");
    write(p + "/rate", "10 Gb/sec (1X QDR)");
    write(p + "/gids/0", "fe80:0000:0000:0000:5054:00ff:fe12:3456");
    write(p + "/gid_attrs/types/0", "IB/RoCE v1");
    write(p + "/gid_attrs/ndevs/0", "dummy0");
    write(p + "/gids/1", "0000:0000:0000:0000:0000:ffff:0a4d:0001");
    write(p + "/gid_attrs/types/1", "RoCE v2");
    write(p + "/gid_attrs/ndevs/1", "dummy0");
    write(p + "/gids/2", "0000:0000:0000:0000:0000:0000:0000:0000");
    write("/proc/net/route",
          "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
          "dummy0\t00004D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
          "dummy0\t000000E0\t00000000\t0001\t0\t0\t0\t000000F0\t0\t0\t0\n");
  }

 private:
  std::string root_;
};

// The finding or a test failure naming what there was.
inline const Finding& need(const Report& r, std::string_view area, std::string_view check) {
  if (const Finding* f = r.find(area, check)) return *f;
  std::string all;
  for (const auto& f : r.findings) all += "  " + f.area + "/" + f.check + "\n";
  ADD_FAILURE() << "no finding " << area << "/" << check << "; there are:\n" << all;
  static const Finding none{};
  return none;
}

}  // namespace mdcast::doctor::test
