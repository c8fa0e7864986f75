// The feed engines: retransmit ring, publisher staging, subscriber live path.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/history/retransmit_log.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "stream.hpp"

namespace mdcast::micro {
namespace {

// claim + fill the header + commit, and a get() of a datagram a little
// older (what serving a retransmit request does), per datagram: through the
// engine's RetransmitLog (one tag test per call), or a log itself.
template <class Log>
void claim_commit_get(benchmark::State& state, Log& ring, uint16_t len) {
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
// Fixed slots (the names are the ones docs/performance.md compares across
// builds: before the two logs were split this was one RetransmitRing).
void BM_RetransmitRing(benchmark::State& state) {
  const size_t max_datagram = 4032;
  auto mem = MappedMemory::anonymous(history::RetransmitLog::memory_for(64u << 20, max_datagram));
  history::RetransmitLog ring(mem.span(), max_datagram);
  claim_commit_get(state, ring, 1000);
}
BENCHMARK(BM_RetransmitRing);
void BM_SlotLog(benchmark::State& state) {
  const size_t max_datagram = 4032;
  auto mem = MappedMemory::anonymous(history::SlotLog::memory_for(64u << 20, max_datagram));
  history::SlotLog ring(mem.span(), max_datagram);
  claim_commit_get(state, ring, 1000);
}
BENCHMARK(BM_SlotLog);

// The same over the term log (the shm medium's), with datagrams of range(0)
// bytes: records are packed back to back instead of one slot each.
std::span<std::byte> term_log_memory(MappedMemory& mem, size_t max_datagram) {
  const size_t data = size_t{64} << 20;
  mem = MappedMemory::anonymous(history::TermLog::memory_for(data));
  history::TermLog::format(mem.span(), data, max_datagram);
  return mem.span();
}
void BM_RetransmitRingPacked(benchmark::State& state) {
  MappedMemory mem;
  history::RetransmitLog ring(term_log_memory(mem, 4032), 4032);
  claim_commit_get(state, ring, static_cast<uint16_t>(state.range(0)));
}
BENCHMARK(BM_RetransmitRingPacked)->Arg(104)->Arg(1000);
void BM_TermLog(benchmark::State& state) {
  MappedMemory mem;
  history::TermLog ring(term_log_memory(mem, 4032), 4032);
  claim_commit_get(state, ring, static_cast<uint16_t>(state.range(0)));
}
BENCHMARK(BM_TermLog)->Arg(104)->Arg(1000);

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
  MappedMemory mem;
  publish_opaque64(state, term_log_memory(mem, 4032));
}
BENCHMARK(BM_PublishOpaque64Packed)->ArgName("batching")->Arg(1)->Arg(0);

// What a 64-byte message costs in log memory, fixed slots (log:0) against
// the term log (log:1), for UDP's datagrams (1472 bytes) and those of shm and
// the in-memory medium (4032), one message per datagram (batching:0) or
// full datagrams (:1). Counted from the records' own addresses over the last
// datagrams of the run (one lap at most, so each line and page is counted
// once): the log's bytes per message (a slot, or a record with its padding:
// how fast a lap goes by), and the 64-byte lines and 4 KiB pages the writer
// stores to per message (the claim and index words included) - what the
// caches, the TLB and, on a shared log, every reader pay. The time is the
// publish's, as in BM_PublishOpaque64.
void BM_LogFootprint64(benchmark::State& state) {
  const bool term = state.range(0) != 0;
  const auto max_datagram = static_cast<size_t>(state.range(1));
  MappedMemory mem;
  std::span<std::byte> ring_memory;
  if (term) {
    ring_memory = term_log_memory(mem, max_datagram);
  } else {
    mem = MappedMemory::anonymous(history::SlotLog::memory_for(64u << 20, max_datagram));
    ring_memory = mem.span();
  }
  feed::PublisherConfig pc = pub_config(state.range(2) ? 20'000 : 0);
  pc.max_datagram = max_datagram;
  NullSink sink;
  feed::Publisher<NullSink> pub(pc, sink, ring_memory);
  std::byte payload[64]{};
  uint32_t inst = 0;
  for (auto _ : state) {
    wire::Message m = wire::Message::make_opaque(inst, {payload, 64 - wire::opaque::kPayload});
    inst = inst == 99 ? 0 : inst + 1;
    benchmark::DoNotOptimize(pub.publish(m, 1));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  pub.flush(1);  // the open datagram too (a run of a few iterations may have no other)

  const history::RetransmitLog& log = pub.core().ring();
  const uint64_t newest = log.newest();
  const uint64_t oldest = std::max<uint64_t>(log.oldest(), newest > 10'000 ? newest - 10'000 + 1 : 1);
  std::set<uintptr_t> lines, pages;
  uint64_t messages = 0, bytes = 0;
  auto touch = [&](uintptr_t at, size_t n) {
    for (uintptr_t l = at / 64; l <= (at + n - 1) / 64; ++l) lines.insert(l);
    for (uintptr_t p = at / 4096; p <= (at + n - 1) / 4096; ++p) pages.insert(p);
  };
  const auto base = reinterpret_cast<uintptr_t>(log.memory());
  const size_t entries = history::TermLog::index_entries(size_t{64} << 20);
  for (uint64_t seq = oldest; seq <= newest && seq != 0; ++seq) {
    const auto d = log.get(seq);
    if (d.empty()) continue;
    messages += wire::read_header(d.data()).message_count;
    bytes += term ? history::record::size_for(d.size()) : log.slot_size();
    touch(reinterpret_cast<uintptr_t>(d.data()) - history::RetransmitLog::kRecordHeader,
          history::RetransmitLog::kRecordHeader + d.size());
    // The claim's other store: the index entry (term) or the reserved word (slots).
    touch(term ? base + history::TermLog::kControlSize + 8 * (seq % entries) : base, 8);
  }
  if (messages == 0) return state.SkipWithError("no datagram held");
  const auto per = [&](double v) { return benchmark::Counter(v / static_cast<double>(messages)); };
  state.counters["bytes/msg"] = per(static_cast<double>(bytes));
  state.counters["lines/msg"] = per(static_cast<double>(lines.size()));
  state.counters["pages/msg"] = per(static_cast<double>(pages.size()));
}
BENCHMARK(BM_LogFootprint64)
    ->ArgNames({"log", "max_datagram", "batching"})
    ->ArgsProduct({{0, 1}, {1472, 4032}, {0, 1}});

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
