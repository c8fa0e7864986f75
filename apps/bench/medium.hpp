// What `mdcast bench` asks of a medium. One implementation per medium
// (raw_shm.cpp, raw_verbs.cpp; UDP will plug in the same way): a raw
// baseline of the medium itself, and runs of the mdcast engines over it with
// one publisher and N subscribers in separate pinned processes. The engine
// side of a run is medium-independent (feed_children.hpp, templates over the
// same drivers `mdcast publish/subscribe` use); a medium adds its drivers and
// its raw baseline.
//
// Setup code: virtual calls and allocation are fine here; the loops that are
// measured are templates inside the children.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control_figures.hpp"
#include "measure/usage.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/idle.hpp"
#include "progress.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

// Which CPU each process of a run gets: the publisher (or raw writer) the
// first, subscriber i the (i+1)-th, wrapping around when there are fewer.
struct Placement {
  std::vector<int> cpus;
  [[nodiscard]] int cpu_for(size_t process) const noexcept {
    return cpus.empty() ? -1 : cpus[process % cpus.size()];
  }
};

struct Window {
  uint64_t warmup_ns = 0;
  uint64_t duration_ns = 0;
};

// ------------------------------------------------------------------ raw --

struct RawRun {
  double rate = 0;     // offered msg/s; 0: as fast as flow control allows
  Window window;
};

struct RawResult {
  bool ok = false;
  std::string error;
  Histogram latency;        // one-way ns, messages sent inside the window
  uint64_t messages = 0;    // received inside the window
  double rate = 0;          // received msg/s inside the window
  double seconds = 0;
  long preempted = 0;       // involuntary context switches of writer + reader
  uint64_t received = 0;    // whole run
  uint64_t lost = 0;        // whole run: sent but never received (a medium without flow control)
};

// --------------------------------------------------------------- mdcast --

struct RunSpec {
  std::string label;
  uint32_t subscribers = 1;
  double rate = 0;                  // offered msg/s; 0: as fast as the publisher can
  size_t message_bytes = 64;        // encoded size of each opaque message
  bool orders = false;              // synthetic order flow instead of opaque messages
  bool books = false;               // subscribers maintain (and verify) books
  uint64_t flush_interval_ns = 0;   // 0: every message its own datagram
  IdleMode pub_idle = IdleMode::kSpin;  // not spin: sleeps until the next message (burst) is due
  uint64_t burst_ns = 0;            // with a sleeping publisher: publish in bursts this far apart
  IdleMode sub_idle = IdleMode::kSpin;
  bool sample_per_datagram = false; // one latency sample per datagram instead of per message
  Window window;
  // Before the timeline starts, the publisher writes this many one-message
  // datagrams (at least one lap of the medium's ring and of its retransmit
  // ring), never more than a quarter ring ahead of the slowest subscriber:
  // the window then sees memory that has been touched, as in a feed that has
  // run for a while. Set by the medium.
  uint64_t prime_datagrams = 0;
  // Also one lap of the retransmit ring (its pages are touched by the first
  // lap: shm). A medium that registers the ring (verbs) has it pinned and
  // resident from the start, so a lap would only cost time.
  bool prime_retransmit_ring = true;
  // Least time between two polls of the control plane (a system call per
  // client on the publisher, one on a subscriber). 0: every idle round, as
  // runners.cpp does.
  uint64_t control_poll_ns = 0;
  // This many control clients (control_load.hpp) connected to the
  // publisher and active throughout the window; 0: none.
  uint32_t control_clients = 0;
  // Report the publisher's control figures (RunResult::control) even
  // without clients: the control section's run to compare with.
  bool control_figures = false;
  // The last subscriber reads the feed through a relay (runtime/relay.hpp)
  // on the same medium, in a process of its own: the others read the
  // publisher. RunResult::relay has the relay's figures.
  bool relay = false;
};

// What a relay between the publisher and the last subscriber did.
struct RelayFigures {
  bool ok = false;
  std::string outcome;
  uint64_t forwarded = 0;         // messages, whole run
  uint64_t window_messages = 0;   // forwarded inside the window
  uint64_t window_cpu_ns = 0;     // the relay process's CPU time inside the window
  uint64_t renumbered = 0;        // relay.sequence_mismatches + instrument_mismatches (0: the origin's numbers)
  uint64_t gaps = 0, recovered = 0;  // upstream
  double cpu_s = 0;               // whole life of the process
};

struct SubscriberResult {
  bool ok = false;
  std::string outcome;           // "ok", "timed out", error text
  uint64_t delivered = 0;        // messages, whole run
  uint64_t rx_window = 0;        // messages delivered while the window was open (receive time)
  double rate = 0;               // rx_window / window
  Histogram latency;             // one-way ns of messages sent inside the window
  uint64_t lapped = 0;           // datagrams the writer overwrote before this reader read them
  uint64_t kernel_drops = 0;     // datagrams the kernel dropped, its socket buffer full (UDP; recovered as gaps)
  uint64_t gaps = 0, recovered = 0, retransmit_requests = 0, snapshots = 0, malformed = 0, duplicates = 0;
  long preempted = 0;
  double cpu_s = 0;              // whole life of the process, setup included
  Usage usage;                   // the measured window (to a control round)
  std::string perf_why;          // why dTLB misses were not counted
};

struct PublisherResult {
  bool ok = false;
  std::string outcome;
  uint64_t published = 0;        // whole run
  uint64_t window_messages = 0;  // inside the window
  uint64_t window_datagrams = 0;
  uint64_t window_bytes = 0;     // datagram bytes handed to the medium inside the window
  uint64_t window_medium_bytes = 0;  // what the medium itself wrote for them (slot headers ...)
  uint64_t window_cpu_ns = 0;    // publisher process CPU time inside the window
  uint64_t window_control_ns = 0;  // of which polling the control plane (wall time in those calls)
  double window_s = 0;
  double rate = 0;               // achieved msg/s inside the window
  long preempted = 0;
  Usage usage;                   // the window: CPU, faults, dTLB misses
  std::string perf_why;          // why dTLB misses were not counted
  Histogram lateness;            // control section: how late each message of the window was published (ns)
  // The engine ring's pages the window's datagrams were written to (board.hpp).
  uint64_t ring_slot_bytes = 0, ring_swept = 0, ring_pages_4k = 0, ring_page_bytes = 0, ring_pages_kernel = 0;
};

struct RunResult {
  bool completed = false;        // every process ran to its end
  std::string error;
  PublisherResult pub;
  std::vector<SubscriberResult> subs;
  uint32_t busy_processes = 0;   // processes that spin (for the crowding warning)
  std::optional<ControlRunFigures> control;  // RunSpec::control_clients > 0
  std::optional<RelayFigures> relay;         // RunSpec::relay

  // Every subscriber got every message, none was ever lapped, no snapshot.
  [[nodiscard]] bool lossless() const noexcept {
    if (!completed || !pub.ok || (relay && (!relay->ok || relay->renumbered))) return false;
    for (const auto& s : subs)
      if (!s.ok || s.lapped || s.snapshots || s.gaps || s.delivered != pub.published) return false;
    return true;
  }
};

// What a medium runs when the command line does not say: rates an emulated
// device can carry are not those of a cache line.
struct PlanDefaults {
  std::string rates = "100k,1M";
  std::string fanout = "1,2,4,8";
  std::string quick_fanout = "1,2";
  double fanout_rate = 1e6;
  double quick_fanout_rate = 200e3;
};

class MediumBench {
 public:
  virtual ~MediumBench() = default;
  [[nodiscard]] virtual PlanDefaults defaults() const { return {}; }
  // A software emulation of the medium (Soft-RoCE): its figures are
  // functional, not comparable with the design targets.
  [[nodiscard]] virtual bool emulated() const { return false; }
  // How the raw throughput baseline copes with a slow reader.
  [[nodiscard]] virtual std::string raw_throughput_note() const { return "(flow-controlled)"; }
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string describe() const = 0;
  // Bytes the medium itself adds per datagram (e.g. the shm slot header).
  [[nodiscard]] virtual size_t medium_overhead_per_datagram() const = 0;
  [[nodiscard]] virtual std::string raw_name() const = 0;
  virtual RawResult raw(const RawRun& r, Progress& p) = 0;
  virtual RunResult run(const RunSpec& spec, Progress& p) = 0;
};

// Throws Error "medium 'X' is not available in this build" for media this
// binary cannot bench. Each medium's bench (its raw baseline) is an overload
// on its settings entry (mdcast/settings/media.hpp): raw_shm.cpp,
// raw_udp.cpp, raw_verbs.cpp.
std::unique_ptr<MediumBench> make_medium_bench(MediumKind m, const Settings& s, const Placement& where);
std::unique_ptr<MediumBench> medium_bench(ShmEntry, const Settings& s, const Placement& where);
std::unique_ptr<MediumBench> medium_bench(UdpEntry, const Settings& s, const Placement& where);
#ifdef MDCAST_HAVE_VERBS
std::unique_ptr<MediumBench> medium_bench(VerbsEntry, const Settings& s, const Placement& where);
#endif

}  // namespace mdcast::app::bench
