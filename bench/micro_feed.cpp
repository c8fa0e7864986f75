// The feed engines: retransmit ring, publisher staging, subscriber live path.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/history/retransmit_ring.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "stream.hpp"

namespace mdcast::micro {
namespace {

// claim + fill the header + commit, and a get() of a datagram a little
// older (what serving a retransmit request does), per datagram.
void claim_commit_get(benchmark::State& state, history::RetransmitRing& ring, uint16_t len) {
  uint64_t seq = 0;
  size_t got = 0;
  for (auto _ : state) {
    ++seq;
    std::byte* p = ring.claim(seq);
    p[0] = std::byte{1};
    ring.commit(seq, len);
    got += ring.get(seq > 100 ? seq - 100 : seq).size();
  }
  benchmark::DoNotOptimize(got);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
void BM_RetransmitRing(benchmark::State& state) {
  const size_t max_datagram = 4032;
  auto mem = MappedMemory::anonymous(history::RetransmitRing::memory_for(64u << 20, max_datagram));
  history::RetransmitRing ring(mem.span(), max_datagram);
  claim_commit_get(state, ring, 1000);
}
BENCHMARK(BM_RetransmitRing);

// The same over the packed layout (the shm medium's), with datagrams of
// range(0) bytes: records are packed back to back instead of one slot each.
void BM_RetransmitRingPacked(benchmark::State& state) {
  const size_t max_datagram = 4032, data = size_t{64} << 20;
  auto mem = MappedMemory::anonymous(history::RetransmitRing::packed_memory_for(data));
  history::RetransmitRing::format_packed(mem.span(), data, max_datagram);
  history::RetransmitRing ring(mem.span(), max_datagram);
  claim_commit_get(state, ring, static_cast<uint16_t>(state.range(0)));
}
BENCHMARK(BM_RetransmitRingPacked)->Arg(104)->Arg(1000);

struct NullSink {
  uint64_t bytes = 0;
  feed::SendResult send(std::span<const std::byte> d, uint64_t) noexcept {
    bytes += d.size();
    return feed::SendResult::kSent;
  }
  feed::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return feed::SendResult::kSent; }
};

feed::PublisherConfig pub_config(uint64_t flush_interval_ns) {
  feed::PublisherConfig pc;
  pc.session = 1;
  pc.max_datagram = 4032;
  pc.flush_interval_ns = flush_interval_ns;
  pc.books = stream_books();
  return pc;
}

// Publisher::publish of 64-byte opaque messages into full datagrams (what the
// throughput runs of `mdcast bench` publish), medium excluded; the ring is
// the engine's own (fixed slots) or `ring_memory` as a medium formatted it.
void publish_opaque64(benchmark::State& state, std::span<std::byte> ring_memory) {
  NullSink sink;
  feed::Publisher<NullSink> pub(pub_config(state.range(0) ? 20'000 : 0), sink, ring_memory);
  std::byte payload[64]{};
  uint64_t now = 1;
  uint32_t inst = 0;
  for (auto _ : state) {
    wire::Message m = wire::Message::make_opaque(inst, {payload, 64 - wire::opaque::kPayload});
    inst = inst == 99 ? 0 : inst + 1;
    const auto r = pub.publish(m, now);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(sink.bytes));
}
void BM_PublishOpaque64(benchmark::State& state) { publish_opaque64(state, {}); }
BENCHMARK(BM_PublishOpaque64)->ArgName("batching")->Arg(1)->Arg(0);

// The same, built into a packed ring (what a publisher over shm does): with
// one message per datagram (batching:0) each datagram takes a 128-byte
// record instead of a 4 KiB slot.
void BM_PublishOpaque64Packed(benchmark::State& state) {
  const size_t data = size_t{64} << 20;
  auto mem = MappedMemory::anonymous(history::RetransmitRing::packed_memory_for(data));
  history::RetransmitRing::format_packed(mem.span(), data, 4032);
  publish_opaque64(state, mem.span());
}
BENCHMARK(BM_PublishOpaque64Packed)->ArgName("batching")->Arg(1)->Arg(0);

// Publisher::publish of the synthetic order flow (book check + apply + encode),
// Generator::next included (subtract BM_GeneratorNext).
void BM_PublishOrderFlow(benchmark::State& state) {
  NullSink sink;
  feed::Publisher<NullSink> pub(pub_config(20'000), sink);
  book::GeneratorConfig gc;
  gc.instruments = 100;
  book::Generator gen(gc);
  wire::Message m;
  for (int i = 0; i < 100'000; ++i) {
    gen.next(m);
    (void)pub.publish(m, 1);
  }
  for (auto _ : state) {
    gen.next(m);
    const auto r = pub.publish(m, 1);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PublishOrderFlow);

struct CountingHandler {
  uint64_t messages = 0;
  uint64_t sum = 0;
  void on_message(const wire::Message& m, const feed::Delivery&) noexcept {
    ++messages;
    sum += m.instrument;
  }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t) noexcept {}
};

// Subscriber::on_datagram on the in-order live path: every datagram is the
// next one, delivered from the caller's buffer. The stream is replayed under a
// new session each pass (the subscriber starts over; its warm-up prefix is fed
// untimed so the books are warm when timing resumes).
void run_subscriber(benchmark::State& state, Stream& s, bool books) {
  feed::SubscriberConfig sc;
  sc.books = stream_books();
  sc.maintain_books = books;
  sc.verify_checksums = false;
  CountingHandler h;
  feed::Subscriber<CountingHandler> sub(sc, h, nullptr);
  uint64_t session = 1;
  auto restart = [&] {
    s.set_session(++session);
    for (size_t i = 0; i < s.warm; ++i) sub.on_datagram(s.datagram(i), feed::Rail::kA, 2);
  };
  restart();
  const uint64_t base = h.messages;
  uint64_t untimed = 0, bytes = 0;
  size_t i = s.warm;
  for (auto _ : state) {
    if (i == s.size()) {
      state.PauseTiming();
      const uint64_t before = h.messages;
      restart();
      untimed += h.messages - before;
      i = s.warm;
      state.ResumeTiming();
    }
    const auto d = s.datagram(i++);
    bytes += d.size();
    sub.on_datagram(d, feed::Rail::kA, 2);
  }
  benchmark::DoNotOptimize(h.sum);
  const uint64_t timed = h.messages - base - untimed;
  state.SetItemsProcessed(static_cast<int64_t>(timed));  // items = messages delivered
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["msgs/datagram"] =
      benchmark::Counter(static_cast<double>(timed) / static_cast<double>(state.iterations()));
  if (sub.counters().book_errors.get() || sub.counters().gaps.get())
    state.SkipWithError("the subscriber saw gaps or book errors: the benchmark stream is broken");
}

void BM_SubscriberOrderFlow(benchmark::State& state) {
  static Stream s = order_flow_stream(100'000, 400'000, 100);
  run_subscriber(state, s, state.range(0) != 0);
}
BENCHMARK(BM_SubscriberOrderFlow)->ArgName("books")->Arg(1)->Arg(0);

// 64-byte opaque messages, books off: the subscriber half of the throughput target.
void BM_SubscriberOpaque64(benchmark::State& state) {
  static Stream s = opaque_stream(1'000'000, 64, 100);
  run_subscriber(state, s, false);
}
BENCHMARK(BM_SubscriberOpaque64);

}  // namespace
}  // namespace mdcast::micro
