// mdcast doctor: what the host, its RDMA devices and its network interfaces
// say, judged against the settings a feed would run with. Each finding is
// ok, a warning (works, but slower or fragile) or an error (the feed would
// fail to start, or start and hear nothing), with one line of advice.
//
//   doctor::Options o;                 // medium, interface, device ... as publish takes them
//   o.medium = doctor::Medium::kUdp;
//   o.udp.interface = "eth1";
//   o.media = settings::doctor_media();  // what the media tell (settings/doctor.hpp)
//   const doctor::Report r = doctor::diagnose(o);
//   fmt::print("{}", doctor::format_text(r));
//   return r.has_errors() ? 3 : 0;
//
// Everything read from sysfs and procfs is read under Options::root, so a test
// points it at a fake tree. What only a system call tells (the locked-memory
// limit, privilege, a device's MTU and multicast limits from libibverbs) is
// asked of the host only when root is "/", or given in Options by the caller.
// Control code: allocates, never throws for what it finds (a missing file is
// a finding, not an exception).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::doctor {

enum class Level : uint8_t { kOk, kWarning, kError };
[[nodiscard]] std::string_view to_string(Level l) noexcept;  // "ok", "warning", "error"

struct Finding {
  std::string area;    // host, shm, udp, rdma, verbs
  std::string check;   // what was looked at: "memlock", "rxe0 port 1 state", ...
  Level level = Level::kOk;
  std::string value;   // what was found, with numbers
  std::string advice;  // one line: what it means for mdcast and what to do ("" when nothing)
};

struct Report {
  std::string medium;                 // what the findings were judged against
  std::vector<Finding> findings;
  std::vector<std::string> notes;     // paragraphs for the reader (no RDMA device: what to do instead)

  void add(std::string area, std::string check, Level level, std::string value, std::string advice = {});
  [[nodiscard]] size_t count(Level l) const noexcept;
  [[nodiscard]] bool has_errors() const noexcept { return count(Level::kError) > 0; }
  // The first finding with this area and check, or nullptr (tests).
  [[nodiscard]] const Finding* find(std::string_view area, std::string_view check) const noexcept;
};

enum class Medium : uint8_t { kShm, kUdp, kVerbs };
[[nodiscard]] std::string_view to_string(Medium m) noexcept;

// rdma_cm's QKey for UDP port-space ids (RDMA_UDP_QKEY in rdma/rdma_cma.h):
// what mckey and other rdma-core tools use, and mdcast's default.
inline constexpr uint32_t kRdmaCmQKey = 0x01234567;

// The huge pages (2 MiB) the doctor advises reserving, and docs/operations.md
// section 5 with it (tests/system/doctor.sh holds the two together): a
// default shm ring takes 38 (72 MiB of records and index, the header page and
// the reader slots), a verbs retransmit ring 32 more, so 256 (512 MiB) hold a
// few feeds of either with room to spare.
inline constexpr uint32_t kAdvisedHugePages = 256;

// What libibverbs says of a port.
struct VerbsPort {
  std::string device;
  int port = 0;
  size_t active_mtu = 0;
  size_t max_mtu = 0;
  int max_mcast_grp = 0;
  int max_mcast_qp_attach = 0;
  int max_total_mcast_qp_attach = 0;
  std::string error;
};

// What only a medium's own code can tell the checks: given by whoever binds
// the media by name (settings::doctor_options, from the list in
// settings/media.hpp), so that the doctor names no medium and judges by the
// same rules the medium runs by. A check whose fact is missing says so.
struct MediumFacts {
  // udp: the name of the interface that has this IPv4 address (the host's
  // own, never a fake tree's); throws Error naming those there are.
  std::function<std::string(const std::string& address)> interface_with_address;
  // udp: payload bytes of one datagram over an interface of this MTU
  // (loopback's is taken as Ethernet's), or of udp.mtu where that is set.
  std::function<size_t(uint32_t interface_mtu, bool loopback, uint32_t mtu_setting)> datagram_bytes;
  // udp: the receive buffer ~100 ms of `rate` datagrams of `bytes` need.
  std::function<uint64_t(double rate, size_t bytes)> receive_buffer_bytes;
  // verbs: libibverbs' view of each port (MTU, multicast limits), from the
  // medium's own enumeration; empty where the build has no verbs medium.
  std::function<std::vector<VerbsPort>()> verbs_ports;
};

struct Options {
  std::string root = "/";              // where /sys and /proc are read (tests: a fake tree)
  Medium medium = Medium::kShm;

  struct Shm {
    std::string dir;                   // "" = /dev/shm (or /dev/hugepages when it has room)
    size_t slots = 16384;
    size_t max_datagram = 4032;
    bool huge_pages = true;
  } shm;

  struct Udp {
    std::string interface = "lo";      // name, or one of its IPv4 addresses
    std::string rail_b_interface;      // "" = no rail B (or rail B on the same interface)
    uint32_t mtu = 0;                  // udp.mtu: 0 = the interface's
    double rate = 10'000;              // peak datagrams/s: the receive buffer holds ~100 ms of it
  } udp;

  struct Verbs {
    std::string device;                // "" = the one owning local_ip / the first with an IPv4 GID
    uint8_t port = 1;
    int gid_index = 1;
    std::string local_ip;
    std::string group = "239.77.0.1";
    uint32_t qkey = kRdmaCmQKey;
    size_t registered_bytes = 64u << 20;  // what a process registers (the publisher's retransmit ring)
  } verbs;

  // A host's fan-out (`mdcast doctor --processes N`): N subscriber processes
  // reading one publisher or relay on this host.
  struct Fanout {
    uint32_t processes = 0;              // 0: not checked
    uint64_t process_bytes = 0;          // each one's books and window
    size_t readers = 0;                  // shm.readers
    size_t max_clients = 0;              // control.max_clients
    size_t max_clients_per_peer = 0;     // control.max_clients_per_peer (0: no share)
    size_t max_unadmitted = 0;           // control.max_unadmitted
    std::optional<uint64_t> descriptor_limit;  // RLIMIT_NOFILE (tests); nullopt = this process's
  } fanout;

  // Facts a caller (a test) gives instead of the host: nullopt = ask the host.
  std::optional<uint64_t> memlock_bytes;  // RLIMIT_MEMLOCK; UINT64_MAX = unlimited
  std::optional<bool> may_lock_memory;    // CAP_IPC_LOCK (root): the limit does not apply
  // libibverbs queries (active/max MTU, multicast limits): only where root is
  // "/" and the build has rdma-core; tests on fake trees leave them off.
  bool query_verbs = true;
  MediumFacts media;
};

// Every check for the medium in `o`: host (memory lock, huge pages, CPU
// governor, isolated cores, RDMA devices), then the medium's own.
[[nodiscard]] Report diagnose(const Options& o);

// The report for a terminal: one line per finding, advice under it, notes
// first; and as one JSON object {medium, errors, warnings, notes[],
// findings[{area, check, level, value, advice}]}.
[[nodiscard]] std::string format_text(const Report& r);
[[nodiscard]] std::string format_json(const Report& r);

}  // namespace mdcast::doctor
