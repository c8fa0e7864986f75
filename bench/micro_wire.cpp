// Codecs and CRC-32C.
#include <benchmark/benchmark.h>

#include <vector>

#include "mdcast/core/crc32c.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::micro {
namespace {

using namespace wire;

// A datagram of `capacity` bytes filled with AddOrders.
std::vector<std::byte> add_order_datagram(size_t capacity, bool crc, uint32_t& count) {
  std::vector<std::byte> d(capacity);
  size_t off = dgram::kHeaderSize;
  count = 0;
  while (off + add_order::kSize <= capacity) {
    Message m = Message::make_add(count % 50, 1000 + count, 1'000'000 + count * 100, 100 + count, count % 2 ? Side::kBuy : Side::kSell);
    m.instrument_seq = count + 1;
    encode(m, d.data() + off);
    off += add_order::kSize;
    ++count;
  }
  DatagramHeader h;
  h.flags = crc ? kFlagCrc : 0;
  h.channel = 1;
  h.message_count = static_cast<uint16_t>(count);
  h.session = 7;
  h.sender = 1;
  h.sequence = 1;
  h.send_time_ns = 1;
  h.length = static_cast<uint16_t>(off);
  d.resize(off);
  write_header(d.data(), h);
  if (crc) seal_crc(d);
  return d;
}

void BM_EncodeAddOrder(benchmark::State& state) {
  std::byte buf[64];
  Message m = Message::make_add(3, 42, 1'234'500, 100, Side::kBuy);
  m.instrument_seq = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m);
    encode(m, buf);
    benchmark::DoNotOptimize(buf);
    benchmark::ClobberMemory();
    ++m.add.order_id;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * add_order::kSize));
}
BENCHMARK(BM_EncodeAddOrder);

// The one bounds-checked pass over a received datagram: a full 4 KiB of
// AddOrders (112 messages), with and without CRC-32C.
void BM_ValidateDatagram(benchmark::State& state) {
  uint32_t count = 0;
  const auto d = add_order_datagram(kMaxDatagram, state.range(0) != 0, count);
  DatagramHeader h;
  for (auto _ : state) {
    benchmark::DoNotOptimize(d.data());
    const DatagramCheck c = validate_datagram(d, h);
    benchmark::DoNotOptimize(c);
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * count));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
  state.counters["msgs/datagram"] = count;
}
BENCHMARK(BM_ValidateDatagram)->ArgName("crc")->Arg(0)->Arg(1);

// Decoding every message of that datagram into a Message (what a subscriber
// does before its handler sees it).
void BM_DecodeDatagram(benchmark::State& state) {
  uint32_t count = 0;
  const auto d = add_order_datagram(kMaxDatagram, false, count);
  for (auto _ : state) {
    MessageCursor cur = MessageCursor::payload_of(d);
    MessageView v;
    while (cur.next(v)) {
      const Message m = decode(v);
      benchmark::DoNotOptimize(m);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * count));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.size()));
}
BENCHMARK(BM_DecodeDatagram);

void BM_Crc32c(benchmark::State& state) {
  std::vector<std::byte> buf(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(i * 31);
  for (auto _ : state) {
    benchmark::DoNotOptimize(buf.data());
    const uint32_t c = crc32c(buf);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buf.size()));
}
BENCHMARK(BM_Crc32c)->Arg(64)->Arg(1024)->Arg(4096);

}  // namespace
}  // namespace mdcast::micro
