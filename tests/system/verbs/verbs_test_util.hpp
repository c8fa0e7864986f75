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
#include "recorder.hpp"

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

using test::message_hash;
using test::Recorder;

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
