// `mdcast doctor`: the host (memory lock, huge pages, CPU frequency, isolated
// cores) and the media that need no RDMA (shm, udp).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <net/if.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "checks.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/doctor/sysfs.hpp"
#include "mdcast/history/term_log.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::doctor::detail {

namespace {

constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

uint64_t memlock_limit(const Options& o) {
  if (o.memlock_bytes) return *o.memlock_bytes;
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? kUnlimited : static_cast<uint64_t>(rl.rlim_cur);
}

// Root holds CAP_IPC_LOCK, which lifts the limit for ibv_reg_mr.
bool may_lock(const Options& o) { return o.may_lock_memory ? *o.may_lock_memory : ::geteuid() == 0; }

std::string path_under(const Options& o, const std::string& p) {
  if (o.root.empty() || o.root == "/") return p;
  return o.root + p;
}

// What a shm publisher's ring file needs: its records, index and control
// block (the lane and header are a few KiB more).
uint64_t shm_ring_bytes(const Options& o) {
  const uint64_t data = uint64_t{o.shm.slots} * history::TermLog::record_size_for(o.shm.max_datagram);
  if (data >= (uint64_t{1} << 56)) return data;  // far more than any host: the check refuses it either way
  return history::TermLog::memory_for(static_cast<size_t>(data));
}

}  // namespace

std::string bytes_text(uint64_t n) {
  if (n == kUnlimited) return "unlimited";
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(n) / (1u << 30));
  if (n >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1u << 20));
  if (n >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(n) / (1u << 10));
  return fmt::format("{} bytes", n);
}

bool host_root(const Options& o) noexcept { return o.root.empty() || o.root == "/"; }

void check_host(const Options& o, Report& r) {
  // Locked memory: only the verbs medium registers (pins) memory.
  const uint64_t lim = memlock_limit(o);
  const std::string lim_text = lim == kUnlimited ? "unlimited" : bytes_text(lim);
  if (o.medium != Medium::kVerbs) {
    r.add("host", "memlock", Level::kOk, "ulimit -l " + lim_text, "only the verbs medium locks memory");
  } else if (lim == kUnlimited || lim >= o.verbs.registered_bytes) {
    r.add("host", "memlock", Level::kOk,
          fmt::format("ulimit -l {} (verbs registers {})", lim_text, bytes_text(o.verbs.registered_bytes)));
  } else if (may_lock(o)) {
    r.add("host", "memlock", Level::kOk,
          fmt::format("ulimit -l {}, below the {} verbs registers, but this user has CAP_IPC_LOCK", lim_text,
                      bytes_text(o.verbs.registered_bytes)));
  } else {
    r.add("host", "memlock", Level::kError,
          fmt::format("ulimit -l {}, below the {} the verbs medium registers", lim_text,
                      bytes_text(o.verbs.registered_bytes)),
          "ibv_reg_mr will fail: raise it (`ulimit -l unlimited`, or memlock in /etc/security/limits.conf, or "
          "LimitMEMLOCK=infinity in the service unit)");
  }

  // Huge pages: rings and registered pools use them where reserved.
  if (const auto hp = read_hugepages(o.root)) {
    const std::string v = fmt::format("{} configured, {} free, {} each", hp->total, hp->free, bytes_text(hp->page_bytes));
    if (hp->total == 0)
      r.add("host", "huge pages", o.medium == Medium::kUdp ? Level::kOk : Level::kWarning, v,
            o.medium == Medium::kUdp
                ? std::string("not used by the udp medium")
                : fmt::format("rings and registered memory fall back to 4 KiB pages (more TLB misses): reserve some "
                              "with `sysctl -w vm.nr_hugepages={}` (docs/operations.md 5)",
                              kAdvisedHugePages));
    else if (hp->free == 0)
      r.add("host", "huge pages", Level::kWarning, v, "all in use: new rings fall back to 4 KiB pages");
    else
      r.add("host", "huge pages", Level::kOk, v);
  } else {
    r.add("host", "huge pages", Level::kWarning, "/proc/meminfo unreadable", "cannot tell whether huge pages are reserved");
  }

  // CPU frequency: a governor that ramps up under load adds latency to the first messages of a burst.
  const auto govs = read_governors(o.root);
  if (govs.empty()) {
    r.add("host", "cpu governor", Level::kOk, "no cpufreq (a VM, or frequency under firmware control)");
  } else {
    std::string v;
    bool slow = false;
    for (const auto& [g, n] : govs) {
      v += fmt::format("{}{} on {} CPU{}", v.empty() ? "" : ", ", g, n, n == 1 ? "" : "s");
      slow = slow || g != "performance";
    }
    if (slow)
      r.add("host", "cpu governor", Level::kWarning, v,
            "frequency scaling adds microseconds when a burst arrives: `cpupower frequency-set -g performance`");
    else
      r.add("host", "cpu governor", Level::kOk, v);
  }

  // Isolated cores: where publisher and subscriber threads run undisturbed.
  const std::string iso = read_text(o.root, "/sys/devices/system/cpu/isolated").value_or("");
  const std::string cmdline = read_text(o.root, "/proc/cmdline").value_or("");
  const auto nohz = cmdline.find("nohz_full=");
  const std::string nohz_text =
      nohz == std::string::npos ? "" : cmdline.substr(nohz + 10, cmdline.find(' ', nohz) - nohz - 10);
  if (iso.empty()) {
    r.add("host", "isolated cores", Level::kOk, "none",
          "for the lowest jitter boot with isolcpus=/nohz_full= and pin the feed's threads to those cores");
  } else {
    const auto n = count_cpu_list(iso);
    r.add("host", "isolated cores", Level::kOk,
          fmt::format("{} ({} CPU{}){}", iso, n.value_or(0), n.value_or(0) == 1 ? "" : "s",
                      nohz_text.empty() ? "" : ", nohz_full=" + nohz_text),
          "pin the publisher and subscribers to these (taskset -c)");
  }
}

void check_shm(const Options& o, Report& r) {
  const uint64_t need = shm_ring_bytes(o);
  const std::string dir = o.shm.dir.empty() ? "/dev/shm" : o.shm.dir;
  struct statvfs sv {};
  if (::statvfs(path_under(o, dir).c_str(), &sv) != 0) {
    r.add("shm", "ring directory", Level::kError, fmt::format("{}: {}", dir, std::strerror(errno)),
          o.shm.dir.empty() ? "mount a tmpfs on /dev/shm" : "create it, or set shm.dir to a tmpfs");
    return;
  }
  const uint64_t free = uint64_t{sv.f_bavail} * sv.f_frsize;
  const std::string v = fmt::format("{} free in {}; a ring of {} slots x {} bytes needs about {}", bytes_text(free),
                                    dir, o.shm.slots, o.shm.max_datagram, bytes_text(need));
  if (free < need)
    r.add("shm", "ring space", Level::kError, v,
          "the publisher cannot create its ring: lower shm.slots (--shm-slots), or enlarge the tmpfs "
          "(mount -o remount,size=... " + dir + ")");
  else if (free < 2 * need)
    r.add("shm", "ring space", Level::kWarning, v, "a second feed or a restart beside a leftover ring will not fit");
  else
    r.add("shm", "ring space", Level::kOk, v);

  if (o.shm.dir.empty() && o.shm.huge_pages) {
    const auto hp = read_hugepages(o.root);
    const uint64_t huge_free = hp ? hp->free * hp->page_bytes : 0;
    if (huge_free >= need)
      r.add("shm", "ring pages", Level::kOk, fmt::format("{} of free huge pages: the ring goes to /dev/hugepages",
                                                         bytes_text(huge_free)));
    else
      r.add("shm", "ring pages", Level::kOk,
            huge_free ? fmt::format("{} of free huge pages, less than the ring's {}: it goes to /dev/shm (4 KiB pages)",
                                    bytes_text(huge_free), bytes_text(need))
                      : "no free huge pages: the ring goes to /dev/shm (4 KiB pages)",
            "for huge pages reserve vm.nr_hugepages and mount hugetlbfs on /dev/hugepages");
  }
}

namespace {

void check_interface(const Options& o, Report& r, const std::string& wanted, const std::string& rail) {
  const std::string p = rail.empty() ? "" : rail + " ";
  std::string name = wanted;
  in_addr a{};
  if (::inet_pton(AF_INET, wanted.c_str(), &a) == 1) {
    if (!host_root(o)) {
      r.add("udp", p + "interface", Level::kError, wanted + ": an address, not resolvable in a fake tree");
      return;
    }
    if (!o.media.interface_with_address) {
      r.add("udp", p + "interface", Level::kError,
            wanted + ": an address, and the udp medium was not given to resolve it");
      return;
    }
    try {
      name = o.media.interface_with_address(wanted);
    } catch (const Error& e) {
      r.add("udp", p + "interface", Level::kError, e.what(), "name an interface that has this address");
      return;
    }
  }
  const auto nif = read_interface(o.root, name);
  if (!nif) {
    std::string all;
    for (const auto& n : list_interfaces(o.root)) all += (all.empty() ? "" : ", ") + n;
    r.add("udp", p + "interface", Level::kError, fmt::format("no interface '{}' (there are: {})", name, all),
          "set udp.interface (--interface) to one of them");
    return;
  }
  const bool loopback = (nif->flags & IFF_LOOPBACK) != 0 || nif->type == 772;
  const bool up = (nif->flags & IFF_UP) != 0 && nif->operstate != "down";
  r.add("udp", p + "interface", up ? Level::kOk : Level::kError,
        fmt::format("{}: {} (flags 0x{:x}, operstate {})", name, up ? "UP" : "DOWN", nif->flags, nif->operstate),
        up ? "" : fmt::format("bring it up: ip link set dev {} up (and check the cable or switch port)", name));
  if (nif->type == 32)
    r.add("udp", p + "link", Level::kWarning, name + " is IPoIB (InfiniBand)",
          "UDP over IPoIB works, but the verbs medium (--medium verbs) is what this fabric is for");
  const bool mc = (nif->flags & IFF_MULTICAST) != 0;
  if (mc || loopback)
    r.add("udp", p + "multicast", Level::kOk, mc ? "MULTICAST set" : "loopback: carries multicast without the flag");
  else
    r.add("udp", p + "multicast", Level::kError, name + " has no MULTICAST flag",
          fmt::format("the group cannot be joined on it: ip link set dev {} multicast on", name));

  if (!o.media.datagram_bytes || !o.media.receive_buffer_bytes) {
    r.add("udp", p + "mtu", Level::kError, "the udp medium was not given: its datagram size is unknown",
          "take the options from settings::doctor_options (or settings::doctor_media())");
    return;
  }
  const size_t payload = o.media.datagram_bytes(nif->mtu, loopback, o.udp.mtu);
  const std::string mtu_v =
      fmt::format("{} MTU {}{}: datagrams of up to {} bytes", name, nif->mtu,
                  o.udp.mtu ? fmt::format(", udp.mtu {}", o.udp.mtu) : "", std::min(payload, wire::kMaxDatagram));
  if (o.udp.mtu && !loopback && o.udp.mtu > nif->mtu)
    r.add("udp", p + "mtu", Level::kError, mtu_v,
          fmt::format("udp.mtu is above the interface's: datagrams would be fragmented or dropped; set udp.mtu to at "
                      "most {} (or raise it: ip link set dev {} mtu {})",
                      nif->mtu, name, o.udp.mtu));
  else if (payload < wire::kMinDatagram)
    r.add("udp", p + "mtu", Level::kError, mtu_v,
          fmt::format("below the {} bytes a datagram needs", wire::kMinDatagram));
  else
    r.add("udp", p + "mtu", Level::kOk, mtu_v);

  if (const auto rp = read_rp_filter(o.root, name)) {
    const std::string v = fmt::format("{} on {} ({})", *rp, name, *rp == 1 ? "strict" : *rp == 2 ? "loose" : "off");
    if (*rp == 1 && !loopback)
      r.add("udp", p + "rp_filter", Level::kWarning, v,
            fmt::format("multicast from a source not routed back through {} is dropped silently (A/B rails, "
                        "asymmetric routes): sysctl -w net.ipv4.conf.{}.rp_filter=2 (and conf.all)",
                        name, name));
    else
      r.add("udp", p + "rp_filter", Level::kOk, v);
  }

  const uint64_t want = o.media.receive_buffer_bytes(o.udp.rate, payload);
  if (const auto rmem = read_text(o.root, "/proc/sys/net/core/rmem_max")) {
    const uint64_t max = std::strtoull(rmem->c_str(), nullptr, 10);
    // The kernel doubles what it is given: a buffer of `want` needs rmem_max >= want / 2.
    const std::string v = fmt::format("net.core.rmem_max {} ({}); udp.rate {:.0f}/s needs {} of receive buffer", max,
                                      bytes_text(max), o.udp.rate, bytes_text(want));
    if (max < want / 2)
      r.add("udp", p + "rmem_max", Level::kWarning, v,
            fmt::format("a burst beyond {} ms is dropped by the kernel (then recovered by retransmission): "
                        "sysctl -w net.core.rmem_max={}",
                        max * 2 * 100 / std::max<uint64_t>(want, 1), want / 2));
    else
      r.add("udp", p + "rmem_max", Level::kOk, v);
  }
}

}  // namespace

void check_udp(const Options& o, Report& r) {
  check_interface(o, r, o.udp.interface, o.udp.rail_b_interface.empty() ? "" : "rail A");
  if (!o.udp.rail_b_interface.empty() && o.udp.rail_b_interface != o.udp.interface)
    check_interface(o, r, o.udp.rail_b_interface, "rail B");
}

}  // namespace mdcast::doctor::detail
