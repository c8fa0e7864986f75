// What a subscriber delivered, recorded for checking exact delivery: per
// instrument, in order, each message (by a hash of its encoded bytes) and each
// snapshot that replaced the book. Shared by the component tests and the
// verbs system tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::test {

// FNV-1a over the message's encoding: equal hashes, equal messages.
uint64_t message_hash(const wire::Message& m);

struct Recorder {
  struct Event {
    bool snapshot;
    uint32_t iseq;
    uint64_t hash;
  };
  std::vector<std::vector<Event>> per_inst;
  uint64_t resets = 0;
  uint64_t delivered = 0;
  uint64_t recovered = 0;
  // From the delivery hook: how many datagrams it saw, and whether their
  // sequences ever failed to rise within a session (they may jump: snapshots).
  uint64_t datagrams = 0;
  uint64_t last_datagram_seq = 0;
  bool datagram_order_broken = false;

  explicit Recorder(uint32_t n) : per_inst(n) {}
  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    per_inst[m.instrument].push_back({false, m.instrument_seq, message_hash(m)});
    ++delivered;
    recovered += d.recovered;
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    per_inst[inst].push_back({true, b ? b->book(inst).instrument_seq() : 0, 0});
  }
  void on_datagram_delivered(std::span<const std::byte>, const feed::Delivery& d) noexcept {
    if (d.sequence <= last_datagram_seq) datagram_order_broken = true;
    last_datagram_seq = d.sequence;
    ++datagrams;
  }
  void on_reset(uint64_t) noexcept {
    for (auto& v : per_inst) v.clear();
    ++resets;
    last_datagram_seq = 0;
  }
};

}  // namespace mdcast::test
