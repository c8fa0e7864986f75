#include "mdcast/core/affinity.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>

#include "mdcast/core/error.hpp"

namespace mdcast {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) fail_errno("sched_getaffinity");
  std::vector<int> out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) fail("CPU list '{}' has an empty element (example: 0,1 or 0-3)", text);
    // from_chars, not sscanf("%d"): 4294967297 must be refused, not wrap to CPU 1.
    auto cpu = [&](std::string_view t) {
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
      int c = 0;
      const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), c);
      if (ec == std::errc::result_out_of_range || (ec == std::errc{} && end == t.data() + t.size() && c >= CPU_SETSIZE))
        fail("'{}' in CPU list '{}' is not a CPU id: CPU ids are below {}", t, text, CPU_SETSIZE);
      if (ec != std::errc{} || end != t.data() + t.size() || t.empty() || c < 0)
        fail("'{}' in CPU list '{}' is not a CPU id or range (example: 0,1 or 0-3)", item, text);
      return c;
    };
    const size_t dash = item.find('-');
    const int lo = cpu(std::string_view(item).substr(0, dash));
    const int hi = dash == std::string::npos ? lo : cpu(std::string_view(item).substr(dash + 1));
    if (hi < lo) fail("'{}' in CPU list '{}' is not a valid range", item, text);
    for (int c = lo; c <= hi; ++c) {
      if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
        fail("CPU {} is not available to this process (allowed: {})", c, format_cpu_list(allowed));
      out.push_back(c);
    }
    if (comma == text.size()) break;
  }
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size(); ++i) s += (i ? "," : "") + std::to_string(cpus[i]);
  return s;
}

void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) {
    errno = rc;
    fail_errno("cannot pin to CPU {}", cpu);
  }
}

int core_of(int cpu) {
  std::ifstream f(fmt::format("/sys/devices/system/cpu/cpu{}/topology/thread_siblings_list", cpu));
  int first = -1;
  if (f >> first && first >= 0) return std::min(first, cpu);
  return cpu;
}

std::vector<std::string> placement_warnings(std::span<const BusyThread> threads) {
  std::vector<std::string> out;
  std::map<int, const BusyThread*> by_cpu, by_core;
  size_t unpinned = 0;
  for (const BusyThread& t : threads) {
    if (t.cpu < 0) {
      ++unpinned;
      continue;
    }
    if (auto [it, fresh] = by_cpu.emplace(t.cpu, &t); !fresh) {
      out.push_back(fmt::format("{} and {} busy-poll on the same CPU {}: they take turns (latency spikes of a "
                                "scheduler slice); give each its own CPU",
                                it->second->name, t.name, t.cpu));
      continue;
    }
    const int core = core_of(t.cpu);
    if (auto [it, fresh] = by_core.emplace(core, &t); !fresh)
      out.push_back(fmt::format("{} (CPU {}) and {} (CPU {}) busy-poll on hyperthreads of one core: they share its "
                                "execution units; use CPUs of different cores",
                                it->second->name, it->second->cpu, t.name, t.cpu));
  }
  const size_t cpus = allowed_cpus().size();
  if (threads.size() > cpus)
    out.push_back(fmt::format("{} busy-polling threads ({} not pinned) on {} CPUs: some share a CPU and take turns",
                              threads.size(), unpinned, cpus));
  return out;
}

}  // namespace mdcast
