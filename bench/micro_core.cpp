// Histogram recording, the clock every latency sample reads, and what an
// idle control poll costs.
#include <benchmark/benchmark.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/media/stream/front_door.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/wire/control.hpp"

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

struct NullHandler final : media::ControlHandler {
  void on_connect(media::ClientId, uint64_t) override {}
  void on_disconnect(media::ClientId) override {}
  bool on_frame(media::ClientId, std::span<const std::byte>, uint64_t, media::ReplySink&) override { return true; }
};

// An idle poll of the publisher's control server with one subscriber
// connected, as the duty loop makes it every 100 us. io_uring 1: the
// readiness ring says nothing happened, no system call; 0: the fallback's
// epoll_wait. shared 1: the server listens on nothing, its subscriber came
// through a publisher's one control endpoint (media/stream/front_door.hpp),
// and each poll also looks at its inbox.
void BM_ControlPollIdle(benchmark::State& state) {
  media::StreamServerConfig cfg;
  cfg.use_io_uring = state.range(0) != 0;
  const bool shared = state.range(1) != 0;
  const std::string addr = fmt::format("unix:@mdcast-bench-{}-{}-{}", ::getpid(), state.range(0), state.range(1));
  std::optional<media::ControlFrontDoor> door;
  if (shared) door.emplace(addr);
  media::StreamControlServer server(addr, cfg, shared ? door->add_channel(1) : nullptr);
  if (cfg.use_io_uring && server.stats().io_uring.get() == 0) {
    state.SkipWithError(server.readiness_mode().c_str());
    return;
  }
  media::StreamControlClient client(addr, false);
  NullHandler h;
  const auto ignore = [](std::span<const std::byte>) {};
  uint64_t now = monotonic_ns();
  (void)client.poll(now, ignore);
  if (shared) {
    // The door routes on the first frame: a Subscribe for channel 1.
    wire::Subscribe sub;
    sub.channel = 1;
    (void)client.send(wire::encode_control(1, sub));
    for (int i = 0; i < 100 && door->stats().routed.get() == 0; ++i) door->poll(monotonic_ns(), kNsPerMs);
    if (door->stats().routed.get() == 0) {
      state.SkipWithError("the front door routed nothing");
      return;
    }
  }
  for (int i = 0; i < 16; ++i) server.poll(h, now += 100 * kNsPerUs);
  if (server.clients() != 1) {
    state.SkipWithError("the subscriber is not connected");
    return;
  }
  const uint64_t waits = server.stats().epoll_waits.get();
  for (auto _ : state) benchmark::DoNotOptimize(server.poll(h, now += 100 * kNsPerUs));
  state.counters["epoll_waits_per_poll"] = static_cast<double>(server.stats().epoll_waits.get() - waits) /
                                           static_cast<double>(std::max<int64_t>(1, state.iterations()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ControlPollIdle)->ArgNames({"io_uring", "shared"})->Args({1, 0})->Args({0, 0})->Args({1, 1});

// The subscriber's side: an idle poll of its control client (1: no system
// call; 0: the fallback's recv).
void BM_ControlClientPollIdle(benchmark::State& state) {
  const std::string addr = fmt::format("unix:@mdcast-bench-client-{}-{}", ::getpid(), state.range(0));
  media::StreamControlServer server(addr);
  media::StreamControlClient client(addr, state.range(0) != 0);
  NullHandler h;
  const auto ignore = [](std::span<const std::byte>) {};
  uint64_t now = monotonic_ns();
  (void)client.poll(now, ignore);
  server.poll(h, now);
  for (int i = 0; i < 16; ++i) (void)client.poll(now += 100 * kNsPerUs, ignore);
  if (state.range(0) != 0 && client.readiness_mode() != "io_uring") {
    state.SkipWithError(client.readiness_mode().c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(client.poll(now += 100 * kNsPerUs, ignore));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ControlClientPollIdle)->ArgName("io_uring")->Arg(1)->Arg(0);

}  // namespace
}  // namespace mdcast::micro
