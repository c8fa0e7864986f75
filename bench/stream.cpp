#include "stream.hpp"

#include <memory>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/bytes.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::micro {

namespace {

struct CaptureSink {
  Stream* s;
  feed::SendResult send(std::span<const std::byte> d, uint64_t) noexcept {
    s->bytes.insert(s->bytes.end(), d.begin(), d.end());
    s->offsets.push_back(s->bytes.size());
    s->messages.push_back(load_le<uint16_t>(d.data() + wire::dgram::kMessageCount));
    return feed::SendResult::kSent;
  }
  feed::SendResult send_unsequenced(std::span<const std::byte>) noexcept { return feed::SendResult::kSent; }
};

feed::PublisherConfig batching_config(size_t max_datagram) {
  feed::PublisherConfig pc;
  pc.session = 1;
  pc.max_datagram = max_datagram;
  pc.flush_interval_ns = 1'000'000'000;  // datagrams leave full (the clock below never moves)
  pc.retransmit_bytes = 8u << 20;
  pc.books = stream_books();
  return pc;
}

}  // namespace

void Stream::set_session(uint64_t session) noexcept {
  for (size_t i = 0; i < size(); ++i) store_le<uint32_t>(bytes.data() + offsets[i] + wire::dgram::kSession, session);
}

book::BookConfig stream_books() { return {1024, 1u << 20, 256}; }

Stream order_flow_stream(size_t warm_messages, size_t messages, uint32_t instruments, size_t max_datagram) {
  Stream s;
  s.offsets.push_back(0);
  CaptureSink sink{&s};
  feed::Publisher<CaptureSink> pub(batching_config(max_datagram), sink);
  book::GeneratorConfig gc;
  gc.instruments = instruments;
  book::Generator gen(gc);
  wire::Message m;
  for (size_t i = 0; i < warm_messages; ++i) {
    gen.next(m);
    (void)pub.publish(m, 1);
  }
  pub.flush(1);
  s.warm = s.size();
  for (size_t i = 0; i < messages; ++i) {
    gen.next(m);
    (void)pub.publish(m, 1);
  }
  pub.flush(1);
  return s;
}

Stream opaque_stream(size_t messages, size_t message_bytes, uint32_t instruments, size_t max_datagram) {
  Stream s;
  s.offsets.push_back(0);
  CaptureSink sink{&s};
  feed::Publisher<CaptureSink> pub(batching_config(max_datagram), sink);
  auto payload = std::make_unique<std::byte[]>(message_bytes);
  wire::Message m;
  for (size_t i = 0; i < messages; ++i) {
    m = wire::Message::make_opaque(static_cast<uint32_t>(i % instruments),
                                   {payload.get(), message_bytes - wire::opaque::kPayload});
    (void)pub.publish(m, 1);
  }
  pub.flush(1);
  return s;
}

}  // namespace mdcast::micro
