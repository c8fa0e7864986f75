// CPU placement: which CPUs this process may use, pinning a thread to one,
// and the check that two busy-polling threads do not share a core.
//
// A busy-polling thread (a publisher's channel, a subscriber's agent) is only
// as fast as the core it owns: two of them on one core (or on two hyperthreads
// of one core) take turns, and each turn is a latency spike of a scheduler
// slice. mdcast pins where told (--cpu, publisher.cpus) and warns, with the
// CPU numbers, where the placement makes busy threads share.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace mdcast {

// CPUs this process may run on (sched_getaffinity), ascending.
[[nodiscard]] std::vector<int> allowed_cpus();

// "0,1", "0-3", "0-3,8" -> CPU ids in the order given. Throws Error naming the
// bad element; every id must be in allowed_cpus().
[[nodiscard]] std::vector<int> parse_cpu_list(const std::string& text);
[[nodiscard]] std::string format_cpu_list(const std::vector<int>& cpus);

// Pins the calling thread to one CPU. Throws Error (with errno text).
void pin_this_thread(int cpu);

// The physical core a CPU is on: the lowest CPU of its
// topology/thread_siblings_list (the CPU itself where sysfs does not say).
[[nodiscard]] int core_of(int cpu);

// A busy-polling thread and where it runs (cpu < 0: not pinned).
struct BusyThread {
  std::string name;
  int cpu = -1;
};

// One line per problem, empty when none: two pinned threads on one CPU, or on
// hyperthreads of one core; more busy threads than this process has CPUs.
[[nodiscard]] std::vector<std::string> placement_warnings(std::span<const BusyThread> threads);

}  // namespace mdcast
