// Exact delivery, checked: what one subscriber delivered against the
// publisher's log. Shared by the Sim (engines driven directly) and the agent
// tests (engines inside PublisherAgent / SubscriberAgent).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/messages.hpp"
#include "recorder.hpp"

namespace mdcast::test {

// What the publisher published: per instrument, the hash of the message
// with instrument sequence i + 1 at index i.
class PublishedLog {
 public:
  explicit PublishedLog(uint32_t instruments = 0) : per_inst_(instruments) {}
  void reset(uint32_t instruments) { per_inst_.assign(instruments, {}); }
  // A message the publisher accepted (instrument_seq assigned); false if its
  // instrument sequence does not follow the previous one.
  bool add(const wire::Message& m);
  [[nodiscard]] const std::vector<uint64_t>& of(uint32_t inst) const { return per_inst_.at(inst); }

 private:
  std::vector<std::vector<uint64_t>> per_inst_;
};

// gtest failures unless, for every instrument in the subscriber's filter, the
// delivered stream is exactly the published one (same bytes, in order, no
// duplicate, no hole) except where a snapshot replaced a range, its books
// equal the publisher's, it is caught up with the publisher's session, and
// its counters account for every datagram. `report` is printed on failure.
// `on_channel` (set: a feed over channels) says which instruments the
// publisher's channel carries; the others are not checked.
void expect_exact_delivery(const PublishedLog& log, const feed::PublisherCore& pub,
                           const feed::Subscriber<Recorder>& sub, const Recorder& rec, const std::string& report,
                           bool forged_checksums = false, const std::function<bool(uint32_t)>& on_channel = {});

// received + recovered = delivered + duplicates + own + foreign + malformed +
// stale + heartbeats + skipped by snapshot + window discards + buffered.
void expect_counters_add_up(const feed::Subscriber<Recorder>& sub, const std::string& report);

}  // namespace mdcast::test
