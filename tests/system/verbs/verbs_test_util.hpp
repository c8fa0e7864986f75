// Shared by the verbs system tests and mdcast-verbs-probe: one scenario
// (generator, books, engine configs) that publisher and subscribers agree on,
// a handler that records what a subscriber delivered, and the check that it
// equals what was published - replayed locally from the same seed, so a
// subscriber process verifies itself without seeing the publisher's memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/feed/subscriber.hpp"

namespace mdcast::test::verbs {

struct Scenario {
  uint64_t seed = 7;
  uint64_t messages = 20'000;
  uint32_t instruments = 40;
};

book::BookConfig book_config(const Scenario& s);
book::GeneratorConfig generator_config(const Scenario& s);
feed::PublisherConfig publisher_config(const Scenario& s, size_t max_datagram);
feed::SubscriberConfig subscriber_config(const Scenario& s, size_t max_datagram);

uint64_t message_hash(const wire::Message& m);

// What a subscriber delivered, per instrument, in order.
struct Recorder {
  struct Event {
    bool snapshot;
    uint32_t iseq;
    uint64_t hash;
  };
  std::vector<std::vector<Event>> per_inst;
  uint64_t delivered = 0;
  uint64_t recovered = 0;
  uint64_t resets = 0;

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

// The publication replayed without a medium: the books a subscriber must end
// with and, per instrument, the hash of message i+1.
struct Expected {
  std::unique_ptr<book::BookSet> books;
  std::vector<std::vector<uint64_t>> log;
  uint64_t global_checksum = 0;
};
Expected replay(const Scenario& s);

// Empty if `rec` + `books` equal the publication exactly (every message once,
// in order, books identical per BookSet::diff); else the first difference.
std::string verify(const Expected& e, const Recorder& rec, const book::BookSet* books);

// key value lines (counters, results) written by the probe, read by the tests.
void write_result(const std::string& path, const std::map<std::string, std::string>& kv);
std::map<std::string, std::string> read_result(const std::string& path);

}  // namespace mdcast::test::verbs
