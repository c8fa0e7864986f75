// Recorded datagram streams for the engine microbenchmarks: a real publisher
// (PublisherCore via Publisher<Sink>) fed by the synthetic order flow or by
// fixed-size opaque messages, its datagrams captured in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mdcast/book/order_book.hpp"

namespace mdcast::micro {

struct Stream {
  std::vector<std::byte> bytes;       // datagrams back to back
  std::vector<size_t> offsets;        // start of datagram i; offsets.back() == bytes.size()
  std::vector<uint32_t> messages;     // messages in datagram i
  size_t warm = 0;                    // datagrams [0, warm) are the warm-up prefix

  [[nodiscard]] size_t size() const noexcept { return offsets.size() - 1; }
  [[nodiscard]] std::span<std::byte> datagram(size_t i) noexcept {
    return {bytes.data() + offsets[i], offsets[i + 1] - offsets[i]};
  }
  // Rewrites every datagram's session id (CRC is off): replaying the stream
  // under a new session makes a subscriber start over.
  void set_session(uint64_t session) noexcept;
};

// `warm_messages` then `messages` of the synthetic order flow over
// `instruments`, batched into full datagrams of up to max_datagram bytes.
Stream order_flow_stream(size_t warm_messages, size_t messages, uint32_t instruments, size_t max_datagram = 4032);
// `messages` opaque messages of `message_bytes` each (encoded), full datagrams.
Stream opaque_stream(size_t messages, size_t message_bytes, uint32_t instruments, size_t max_datagram = 4032);

// The book configuration the streams are valid for.
book::BookConfig stream_books();

}  // namespace mdcast::micro
