// Order books and the synthetic order flow.
#include <benchmark/benchmark.h>

#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/book/order_book.hpp"
#include "stream.hpp"

namespace mdcast::micro {
namespace {

void BM_GeneratorNext(benchmark::State& state) {
  book::GeneratorConfig gc;
  gc.instruments = 100;
  book::Generator gen(gc);
  wire::Message m;
  for (auto _ : state) {
    gen.next(m);
    benchmark::DoNotOptimize(m);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_GeneratorNext);

// BookSet::apply over a realistic stream (100 instruments, ~40 resting orders
// each, add/modify/delete/execute mix) on warm books: the first 100k messages
// build the books untimed; when the recorded stream runs out the books are
// rebuilt untimed and it replays.
void BM_BookSetApply(benchmark::State& state) {
  constexpr size_t kWarm = 100'000, kMeasured = 500'000;
  book::GeneratorConfig gc;
  gc.instruments = static_cast<uint32_t>(state.range(0));
  book::Generator gen(gc);
  std::vector<wire::Message> msgs(kWarm + kMeasured);
  for (auto& m : msgs) gen.next(m);
  book::BookSet books(stream_books());
  auto rebuild = [&] {
    books.clear_all();
    for (size_t i = 0; i < kWarm; ++i) (void)books.apply(msgs[i]);
  };
  rebuild();
  size_t i = kWarm;
  uint64_t refused = 0;
  for (auto _ : state) {
    if (i == msgs.size()) {
      state.PauseTiming();
      rebuild();
      i = kWarm;
      state.ResumeTiming();
    }
    const book::ApplyResult r = books.apply(msgs[i++]);
    refused += r != book::ApplyResult::kOk;
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.counters["refused"] = static_cast<double>(refused);  // must stay 0: the stream is valid
  state.counters["resting_orders"] = books.order_count();
}
BENCHMARK(BM_BookSetApply)->ArgName("instruments")->Arg(100)->Arg(1000);

}  // namespace
}  // namespace mdcast::micro
