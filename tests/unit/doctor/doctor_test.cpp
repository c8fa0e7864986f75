// mdcast doctor on fake trees: the host checks (memory lock, huge pages,
// governor, isolated cores), shm and udp, the parsers, and the report formats.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fake_tree.hpp"
#include "mdcast/doctor/doctor.hpp"
#include "mdcast/doctor/sysfs.hpp"

namespace mdcast::doctor::test {
namespace {

TEST(DoctorParse, NumberedStatesCpuListsAndGids) {
  EXPECT_EQ(parse_numbered_state("4: ACTIVE").name, "ACTIVE");
  EXPECT_EQ(parse_numbered_state("4: ACTIVE").number, 4);
  EXPECT_EQ(parse_numbered_state("2: Polling").name, "Polling");
  EXPECT_EQ(count_cpu_list("0-3,8,10-11"), 7u);
  EXPECT_EQ(count_cpu_list("5"), 1u);
  EXPECT_EQ(count_cpu_list(""), 0u);
  EXPECT_FALSE(count_cpu_list("3-1"));
  EXPECT_FALSE(count_cpu_list("x"));
  EXPECT_EQ(ipv4_of_gid("0000:0000:0000:0000:0000:ffff:0a4d:0001"), "10.77.0.1");
  EXPECT_EQ(ipv4_of_gid("fe80:0000:0000:0000:5054:00ff:fe12:3456"), "");
  EXPECT_EQ(ipv4_of_gid("garbage"), "");
}

TEST(DoctorHost, MemlockJudgedOnlyForVerbs) {
  FakeTree t;
  auto o = t.options(Medium::kVerbs);
  o.memlock_bytes = 64u << 10;
  o.verbs.registered_bytes = 64u << 20;
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "host", "memlock").level, Level::kError);
  EXPECT_NE(need(r, "host", "memlock").advice.find("ulimit -l unlimited"), std::string::npos);
  o.may_lock_memory = true;  // CAP_IPC_LOCK lifts the limit
  EXPECT_EQ(need(diagnose(o), "host", "memlock").level, Level::kOk);
  o.may_lock_memory = false;
  o.memlock_bytes = UINT64_MAX;
  r = diagnose(o);
  EXPECT_EQ(need(r, "host", "memlock").level, Level::kOk);
  EXPECT_NE(need(r, "host", "memlock").value.find("unlimited"), std::string::npos);
  auto s = t.options(Medium::kShm);
  s.memlock_bytes = 64u << 10;
  EXPECT_EQ(need(diagnose(s), "host", "memlock").level, Level::kOk);
}

TEST(DoctorHost, HugePagesFromMeminfo) {
  FakeTree t;
  t.mkdir("/dev/shm");
  t.write("/proc/meminfo", "MemTotal: 1000 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:    2048 kB");
  EXPECT_EQ(need(diagnose(t.options(Medium::kShm)), "host", "huge pages").level, Level::kWarning);
  // The advice is the one number docs/operations.md gives (doctor.sh compares them).
  EXPECT_NE(need(diagnose(t.options(Medium::kShm)), "host", "huge pages")
                .advice.find(fmt::format("vm.nr_hugepages={}", kAdvisedHugePages)),
            std::string::npos);
  EXPECT_EQ(need(diagnose(t.options(Medium::kUdp)), "host", "huge pages").level, Level::kOk);  // unused there
  t.write("/proc/meminfo", "HugePages_Total:     512\nHugePages_Free:      100\nHugepagesize:    2048 kB");
  auto r = diagnose(t.options(Medium::kShm));
  EXPECT_EQ(need(r, "host", "huge pages").level, Level::kOk);
  EXPECT_EQ(need(r, "host", "huge pages").value, "512 configured, 100 free, 2.0 MiB each");
  // 100 free x 2 MiB = 200 MiB: the default ring (64 MiB) goes to huge pages.
  EXPECT_NE(need(r, "shm", "ring pages").value.find("/dev/hugepages"), std::string::npos);
  auto big = t.options(Medium::kShm);
  big.shm.slots = 1u << 20;
  EXPECT_NE(need(diagnose(big), "shm", "ring pages").value.find("/dev/shm (4 KiB pages)"), std::string::npos);
  t.write("/proc/meminfo", "HugePages_Total:     512\nHugePages_Free:        0\nHugepagesize:    2048 kB");
  EXPECT_EQ(need(diagnose(t.options(Medium::kShm)), "host", "huge pages").level, Level::kWarning);
}

TEST(DoctorHost, GovernorAndIsolatedCores) {
  FakeTree t;
  EXPECT_EQ(need(diagnose(t.options(Medium::kUdp)), "host", "cpu governor").level, Level::kOk);  // no cpufreq
  for (int c = 0; c < 4; ++c)
    t.write("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_governor", "performance");
  EXPECT_EQ(need(diagnose(t.options(Medium::kUdp)), "host", "cpu governor").level, Level::kOk);
  t.write("/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor", "powersave");
  auto r = diagnose(t.options(Medium::kUdp));
  EXPECT_EQ(need(r, "host", "cpu governor").level, Level::kWarning);
  EXPECT_EQ(need(r, "host", "cpu governor").value, "performance on 3 CPUs, powersave on 1 CPU");
  EXPECT_NE(need(r, "host", "cpu governor").advice.find("cpupower frequency-set -g performance"), std::string::npos);

  EXPECT_EQ(need(r, "host", "isolated cores").value, "none");
  t.write("/sys/devices/system/cpu/isolated", "2-5");
  t.write("/proc/cmdline", "BOOT_IMAGE=/vmlinuz isolcpus=2-5 nohz_full=2-5 quiet");
  r = diagnose(t.options(Medium::kUdp));
  EXPECT_EQ(need(r, "host", "isolated cores").value, "2-5 (4 CPUs), nohz_full=2-5");
}

TEST(DoctorShm, FreeSpaceAgainstTheRing) {
  FakeTree t;
  t.mkdir("/dev/shm");
  auto o = t.options(Medium::kShm);
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "shm", "ring space").level, Level::kOk) << need(r, "shm", "ring space").value;
  o.shm.slots = size_t{1} << 40;  // more than any disk has
  r = diagnose(o);
  EXPECT_EQ(need(r, "shm", "ring space").level, Level::kError);
  EXPECT_NE(need(r, "shm", "ring space").advice.find("shm.slots"), std::string::npos);
  EXPECT_TRUE(r.has_errors());
  o.shm.dir = "/nowhere";
  r = diagnose(o);
  EXPECT_EQ(need(r, "shm", "ring directory").level, Level::kError);
  EXPECT_NE(need(r, "shm", "ring directory").value.find("/nowhere"), std::string::npos);
}

// A relay host's fan-out: N subscriber processes' memory against
// MemAvailable, the publisher's descriptors and its limits on clients.
TEST(DoctorFanout, ProcessesAgainstMemoryDescriptorsAndLimits) {
  FakeTree t;
  t.mkdir("/dev/shm");
  t.write("/proc/meminfo", "MemTotal: 25165824 kB\nMemAvailable: 8388608 kB\n");  // 8 GiB available
  auto o = t.options(Medium::kShm);
  auto r = diagnose(o);
  for (const auto& f : r.findings) EXPECT_EQ(f.area.find("fan-out"), std::string::npos) << "not asked: not checked";
  o.fanout = {1024, 6u << 20, 1024, 1024, 0, 1024, 4096};  // 6 MiB each: 6 GiB of 8
  r = diagnose(o);
  const std::string area = "fan-out to 1024 processes";
  EXPECT_EQ(need(r, area, "memory").level, Level::kOk) << need(r, area, "memory").value;
  EXPECT_EQ(need(r, area, "descriptors").level, Level::kOk);
  EXPECT_EQ(need(r, area, "control.max_clients").level, Level::kOk);
  EXPECT_EQ(need(r, area, "shm.readers").level, Level::kOk);
  EXPECT_FALSE(r.has_errors());
  o.fanout.process_bytes = 61u << 20;  // the default footprint: 61 GiB
  o.fanout.descriptor_limit = 1024;
  o.fanout.max_clients = 256;
  o.fanout.readers = 256;
  r = diagnose(o);
  EXPECT_EQ(need(r, area, "memory").level, Level::kError);
  EXPECT_NE(need(r, area, "memory").advice.find("feed.max_orders"), std::string::npos);
  EXPECT_EQ(need(r, area, "descriptors").level, Level::kError);
  EXPECT_NE(need(r, area, "descriptors").value.find("1088"), std::string::npos) << "1024 connections and the relay's own";
  EXPECT_EQ(need(r, area, "control.max_clients").level, Level::kError);
  EXPECT_EQ(need(r, area, "shm.readers").level, Level::kWarning);
  EXPECT_TRUE(r.has_errors());
}

TEST(DoctorUdp, InterfaceFlagsMtuAndMulticast) {
  FakeTree t;
  t.interfaces();
  auto o = t.options(Medium::kUdp);
  o.udp.interface = "eth1";
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "interface").level, Level::kOk);
  EXPECT_EQ(need(r, "udp", "multicast").level, Level::kOk);
  EXPECT_EQ(need(r, "udp", "mtu").level, Level::kOk);
  EXPECT_NE(need(r, "udp", "mtu").value.find("up to 1472 bytes"), std::string::npos);
  EXPECT_FALSE(r.has_errors());

  o.udp.mtu = 9000;  // more than eth1 carries
  EXPECT_EQ(need(diagnose(o), "udp", "mtu").level, Level::kError);
  o.udp.mtu = 0;

  t.write("/sys/class/net/eth1/flags", "0x1002");  // MULTICAST, not UP
  t.write("/sys/class/net/eth1/operstate", "down");
  r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "interface").level, Level::kError);
  EXPECT_NE(need(r, "udp", "interface").advice.find("ip link set dev eth1 up"), std::string::npos);
  t.write("/sys/class/net/eth1/flags", "0x3");  // UP, no MULTICAST
  t.write("/sys/class/net/eth1/operstate", "up");
  EXPECT_EQ(need(diagnose(o), "udp", "multicast").level, Level::kError);

  o.udp.interface = "lo";  // loopback carries multicast without the flag
  r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "multicast").level, Level::kOk);
  EXPECT_NE(need(r, "udp", "mtu").value.find("up to 1472 bytes"), std::string::npos);  // lo counts as 1500

  o.udp.interface = "eth9";
  r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "interface").level, Level::kError);
  EXPECT_NE(need(r, "udp", "interface").value.find("there are: eth1, lo"), std::string::npos);
}

TEST(DoctorUdp, RpFilterZeroOneTwo) {
  FakeTree t;
  t.interfaces();
  auto o = t.options(Medium::kUdp);
  o.udp.interface = "eth1";
  EXPECT_EQ(need(diagnose(o), "udp", "rp_filter").value, "0 on eth1 (off)");
  t.write("/proc/sys/net/ipv4/conf/eth1/rp_filter", "2");
  EXPECT_EQ(need(diagnose(o), "udp", "rp_filter").level, Level::kOk);
  EXPECT_EQ(need(diagnose(o), "udp", "rp_filter").value, "2 on eth1 (loose)");
  // The larger of conf.all and the interface's applies.
  t.write("/proc/sys/net/ipv4/conf/eth1/rp_filter", "0");
  t.write("/proc/sys/net/ipv4/conf/all/rp_filter", "1");
  const auto r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "rp_filter").level, Level::kWarning);
  EXPECT_EQ(need(r, "udp", "rp_filter").value, "1 on eth1 (strict)");
  EXPECT_NE(need(r, "udp", "rp_filter").advice.find("rp_filter=2"), std::string::npos);
}

TEST(DoctorUdp, RmemMaxAgainstTheRate) {
  FakeTree t;
  t.interfaces();
  auto o = t.options(Medium::kUdp);
  o.udp.interface = "eth1";
  o.udp.rate = 10'000;  // 100 ms of 1472-byte datagrams: ~2.4 MiB, rmem_max 208 KiB is short
  auto r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "rmem_max").level, Level::kWarning);
  EXPECT_NE(need(r, "udp", "rmem_max").advice.find("sysctl -w net.core.rmem_max="), std::string::npos);
  t.write("/proc/sys/net/core/rmem_max", "67108864");
  EXPECT_EQ(need(diagnose(o), "udp", "rmem_max").level, Level::kOk);
}

TEST(DoctorUdp, RailBOnAnotherInterface) {
  FakeTree t;
  t.interfaces();
  auto o = t.options(Medium::kUdp);
  o.udp.interface = "eth1";
  o.udp.rail_b_interface = "eth2";
  const auto r = diagnose(o);
  EXPECT_EQ(need(r, "udp", "rail A interface").level, Level::kOk);
  EXPECT_EQ(need(r, "udp", "rail B interface").level, Level::kError);
}

TEST(DoctorReport, JsonAndTextCarryEveryFinding) {
  Report r;
  r.medium = "udp";
  r.add("udp", "a \"quoted\" check", Level::kWarning, "line\nbreak\ttab\\", "do \x01 this");
  r.add("host", "memlock", Level::kOk, "unlimited");
  r.notes.push_back("a note");
  const std::string j = format_json(r);
  EXPECT_NE(j.find(R"("check": "a \"quoted\" check")"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("value": "line\nbreak\ttab\\")"), std::string::npos) << j;
  EXPECT_NE(j.find(R"(do \u0001 this)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("errors": 0, "warnings": 1)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("notes": ["a note"])"), std::string::npos) << j;
  const std::string t = format_text(r);
  EXPECT_NE(t.find("WARN  a \"quoted\" check"), std::string::npos) << t;
  EXPECT_NE(t.find("0 errors, 1 warning"), std::string::npos) << t;
}

}  // namespace
}  // namespace mdcast::doctor::test
