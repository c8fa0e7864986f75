// A host's fan-out (`mdcast doctor --processes N`): what N subscriber
// processes reading one publisher or relay on this host need of it - their
// memory together, the publisher's descriptors, reader slots and control
// clients. What a relay host is checked for (docs/operations.md, "Laying
// out a fabric"), besides the host and medium checks every process gets.
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdint>
#include <string>

#include "checks.hpp"
#include "mdcast/core/resources.hpp"

namespace mdcast::doctor::detail {

namespace {

uint64_t descriptor_limit(const Options& o) {
  if (o.fanout.descriptor_limit) return *o.fanout.descriptor_limit;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace

void check_fanout(const Options& o, Report& r) {
  const Options::Fanout& f = o.fanout;
  const uint64_t n = f.processes;
  if (n == 0) return;
  const std::string area = fmt::format("fan-out to {} processes", n);

  const uint64_t need = n * f.process_bytes;
  const std::string meminfo = (o.root.empty() || o.root == "/" ? std::string() : o.root) + "/proc/meminfo";
  const auto avail = memory_available_bytes(meminfo);
  const std::string each = fmt::format("{} x {} (each one's books and window, at most)", n, format_bytes(f.process_bytes));
  if (!avail) {
    r.add(area, "memory", Level::kWarning, each + ": MemAvailable unreadable", "cannot tell whether they fit");
  } else if (need > *avail) {
    r.add(area, "memory", Level::kError,
          fmt::format("{} = {}, above the {} available", each, format_bytes(need), format_bytes(*avail)),
          "they will not all start: lower feed.max_orders (most of a subscriber's memory), feed.max_instruments or "
          "subscriber.window_bytes, or run fewer processes here");
  } else if (need > *avail / 10 * 8) {
    r.add(area, "memory", Level::kWarning,
          fmt::format("{} = {}, most of the {} available", each, format_bytes(need), format_bytes(*avail)),
          "little is left for the publisher, the page cache and a restart: lower feed.max_orders to the feed's size");
  } else {
    r.add(area, "memory", Level::kOk, fmt::format("{} = {} of {} available", each, format_bytes(need), format_bytes(*avail)));
  }

  // The publisher (or relay) holds a control connection per subscriber.
  const uint64_t fds = descriptor_limit(o);
  const uint64_t want_fds = n + 64;
  if (fds >= want_fds)
    r.add(area, "descriptors", Level::kOk, fmt::format("ulimit -n {} for {} control connections", fds == UINT64_MAX ? std::string("unlimited") : std::to_string(fds), n));
  else
    r.add(area, "descriptors", Level::kError,
          fmt::format("ulimit -n {}, below the {} a publisher serving {} processes needs", fds, want_fds, n),
          "raise it where the publisher or relay starts (`ulimit -n`, LimitNOFILE= in its unit)");

  if (f.max_clients < n)
    r.add(area, "control.max_clients", Level::kError, fmt::format("{}, below {}", f.max_clients, n),
          fmt::format("the rest are refused: --set control.max_clients={}", n));
  else
    r.add(area, "control.max_clients", Level::kOk, std::to_string(f.max_clients));
  if (f.max_clients_per_peer != 0 && f.max_clients_per_peer < n)
    r.add(area, "control.max_clients_per_peer", Level::kWarning, fmt::format("{}, below {}", f.max_clients_per_peer, n),
          fmt::format("processes of one user (one peer on shm) beyond it are refused, unless they run as the "
                      "publisher's own user: --set control.max_clients_per_peer={}", n));
  if (f.max_unadmitted < n)
    r.add(area, "control.max_unadmitted", Level::kWarning, fmt::format("{}, below {}", f.max_unadmitted, n),
          fmt::format("when all start at once the oldest unadmitted connections make room and reconnect: "
                      "--set control.max_unadmitted={}", n));
  if (o.medium == Medium::kShm) {
    if (f.readers < n)
      r.add(area, "shm.readers", Level::kWarning, fmt::format("{}, below {}", f.readers, n),
            fmt::format("subscribers without a reader slot cannot sleep on the ring and poll it instead: "
                        "--set shm.readers={}", n));
    else
      r.add(area, "shm.readers", Level::kOk, std::to_string(f.readers));
  }
}

}  // namespace mdcast::doctor::detail
