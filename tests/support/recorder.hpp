// What a subscriber delivered, recorded for checking exact delivery: per
// instrument, in order, each message (by a hash of its encoded bytes) and each
// snapshot that replaced the book. Shared by the component tests and the
// verbs system tests.
#pragma once

#include <cstdint>
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

  explicit Recorder(uint32_t n) : per_inst(n) {}
  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    per_inst[m.instrument].push_back({false, m.instrument_seq, message_hash(m)});
    ++delivered;
    recovered += d.recovered;
  }
  void on_snapshot(uint32_t inst, const book::BookSet* b) noexcept {
    per_inst[inst].push_back({true, b ? b->book(inst).instrument_seq() : 0, 0});
  }
  void on_reset(uint32_t) noexcept {
    for (auto& v : per_inst) v.clear();
    ++resets;
  }
};

}  // namespace mdcast::test
