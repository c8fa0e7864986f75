// The parent's side of a benchmark run: wait for forked children with a
// progress line, and make sure none outlives a deadline or an interrupt.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "measure/child_process.hpp"
#include "progress.hpp"

namespace mdcast::app::bench {

// Waits until every child has exited, drawing progress (elapsed since t0 out
// of total_ns, plus detail(); t0 may be published late, 0 meaning "not
// yet"). At `deadline` or on SIGINT/SIGTERM it raises *abort, gives the
// children a second to notice, then kills them. Returns true if every child
// exited by itself in time.
bool supervise(std::vector<ChildProcess>& kids, const std::atomic<uint64_t>& t0, uint64_t total_ns,
               uint64_t deadline, std::atomic<uint32_t>& abort, Progress& progress,
               const std::function<std::string()>& detail);

}  // namespace mdcast::app::bench
