#include "core_to_core.hpp"

#include <atomic>
#include <exception>
#include <memory>
#include <thread>

#include "cpu.hpp"
#include "tsc.hpp"

namespace mdcast::app::bench {

CoreToCoreResult core_to_core(int cpu_a, int cpu_b, uint64_t round_trips, uint64_t warmup) {
  CoreToCoreResult r;
  const TscClock tsc = TscClock::calibrate();
  r.tsc_ghz = tsc.ghz();
  // The bounced word alone on its cache line (and the next one, against the
  // adjacent-line prefetcher).
  struct alignas(128) Line {
    std::atomic<uint64_t> v{0};
  };
  auto line = std::make_unique<Line>();
  std::atomic<uint64_t>& flag = line->v;
  const uint64_t total = warmup + round_trips;

  // Both sides run on threads of their own, so the caller's affinity is left
  // alone. Each pins itself, then they meet; if either could not pin, neither
  // starts.
  std::atomic<int> pinned{0};
  std::atomic<bool> failed{false};
  std::exception_ptr errors[2];
  auto meet = [&](int side, int cpu) {
    try {
      pin_this_thread(cpu);
    } catch (...) {
      errors[side] = std::current_exception();
      failed.store(true);
    }
    pinned.fetch_add(1);
    while (pinned.load() < 2) std::this_thread::yield();
    return !failed.load();
  };

  std::thread pong([&] {
    if (!meet(1, cpu_b)) return;
    for (uint64_t k = 0; k < total; ++k) {
      // A plain load loop, no pause: the floor, not a polite spinner.
      while (flag.load(std::memory_order_acquire) != 2 * k + 1) {
      }
      flag.store(2 * k + 2, std::memory_order_release);
    }
  });
  std::thread ping([&] {
    if (!meet(0, cpu_a)) return;
    for (uint64_t k = 0; k < total; ++k) {
      const uint64_t t0 = TscClock::now();
      flag.store(2 * k + 1, std::memory_order_release);
      while (flag.load(std::memory_order_acquire) != 2 * k + 2) {
      }
      const uint64_t t1 = TscClock::now();
      if (k >= warmup) r.one_way_ns.record(tsc.to_ns(t1 - t0) / 2);
    }
  });
  ping.join();
  pong.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  r.round_trips = round_trips;
  return r;
}

}  // namespace mdcast::app::bench
