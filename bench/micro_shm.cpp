// The shared-memory ring, writer and reader in one process (the cross-core
// cost is what `mdcast bench` measures; this is the instruction cost). The
// writer copies here (write()); a publisher builds datagrams in place.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::micro {
namespace {

using media::shm::RingOptions;
using media::shm::RingReader;
using media::shm::RingWriter;

RingOptions options(const std::string& tag, size_t slots = 16384) {
  RingOptions o;
  o.name = "micro-" + tag + "-" + std::to_string(::getpid());
  o.dir = "/dev/shm";
  o.slots = slots;
  o.huge_pages = false;
  return o;
}

// One datagram of range(0) bytes per iteration into a warm ring.
void BM_ShmRingWrite(benchmark::State& state) {
  RingWriter w(options("w"), 1, 1, "unix:@micro");
  std::vector<std::byte> d(static_cast<size_t>(state.range(0)), std::byte{7});
  uint64_t seq = 0;
  for (size_t i = 0; i < 2 * 16384; ++i) w.write(d, ++seq);  // every slot touched once: no first-lap faults
  for (auto _ : state) w.write(d, ++seq);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_ShmRingWrite)->Arg(104)->Arg(1024)->Arg(4032);

// write then read of the same datagram (single process: hot caches).
void BM_ShmRingWriteRead(benchmark::State& state) {
  RingWriter w(options("wr"), 1, 1, "unix:@micro");
  RingReader r(w.path());
  std::vector<std::byte> d(static_cast<size_t>(state.range(0)), std::byte{7});
  auto buf = std::make_unique<std::byte[]>(r.max_datagram());
  size_t len = 0;
  uint64_t seq = 0;
  for (size_t i = 0; i < 2 * 16384; ++i) {
    w.write(d, ++seq);
    (void)r.read(buf.get(), len);
  }
  for (auto _ : state) {
    w.write(d, ++seq);
    const auto res = r.read(buf.get(), len);
    benchmark::DoNotOptimize(res);
    benchmark::DoNotOptimize(buf[0]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_ShmRingWriteRead)->Arg(104)->Arg(1024)->Arg(4032);

// The first lap over a new ring: what a publisher pays per datagram right
// after it starts (page faults unless the mapping was populated up front).
// Ring setup is untimed; items = datagrams of the lap.
void BM_ShmRingFirstLap(benchmark::State& state) {
  constexpr size_t kSlots = 512;  // 2 MiB of records
  // A lap of 104-byte datagrams: 128-byte records, 32 to each 4 KiB.
  constexpr size_t kLap = kSlots * 4096 / 128;
  std::vector<std::byte> d(104, std::byte{7});
  std::optional<RingWriter> w;
  for (auto _ : state) {
    state.PauseTiming();
    w.reset();
    w.emplace(options("lap", kSlots), 1, 1, "unix:@micro");
    state.ResumeTiming();
    for (size_t i = 0; i < kLap; ++i) w->write(d, i + 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kLap));
}
BENCHMARK(BM_ShmRingFirstLap)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mdcast::micro
