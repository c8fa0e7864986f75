// Histogram recording and the clock every latency sample reads.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/rng.hpp"

namespace mdcast::micro {
namespace {

void BM_HistogramRecord(benchmark::State& state) {
  // Latency-like values: mostly 50 ns .. 5 us, a tail to milliseconds.
  std::vector<uint64_t> v(4096);
  Rng rng(1);
  for (auto& x : v) x = 50 + (rng.below(100) < 99 ? rng.below(5000) : rng.below(5'000'000));
  Histogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.record(v[i]);
    i = (i + 1) & 4095;
  }
  benchmark::DoNotOptimize(h.count());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_HistogramRecord);

void BM_MonotonicClock(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(monotonic_ns());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_MonotonicClock);

// What one poll of an idle control connection costs: a recv that finds
// nothing (the duty loops of `mdcast publish/subscribe` do one per client per
// idle round). Mostly the price of a system call on this host.
void BM_RecvEmptySocket(benchmark::State& state) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) {
    state.SkipWithError("socketpair failed");
    return;
  }
  char buf[64];
  for (auto _ : state) benchmark::DoNotOptimize(::recv(sv[0], buf, sizeof buf, MSG_DONTWAIT));
  ::close(sv[0]);
  ::close(sv[1]);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RecvEmptySocket);

}  // namespace
}  // namespace mdcast::micro
