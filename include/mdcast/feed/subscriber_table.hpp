// The publisher's view of each subscriber, as rows another process reads
// (`mdcast stat --subscribers`): who it is, where it is, what it lost and
// what it asked for.
//
// A row per subscribed control client of one channel, in a fixed number of
// rows set when the counters file is made (stats/counters_file.hpp): a
// client past them is counted (ctl.subscribers_unlisted), never given
// memory. The control service writes the rows from its own poll (the
// publishing thread): a row when a client subscribes or leaves, and every
// row again at most every kRefreshNs, a few per poll, so a poll costs the
// same for one subscriber or a thousand. Nothing here runs per message.
//
// What a row can say is what the publisher knows: the status report's
// fields (protocol.md: position, lag, drops, capacity), the latency the
// subscriber's application reported (a LatencyReport beside the status
// report: the status report's length is exact, so it cannot grow a field),
// the requests the client made here and how they were answered, and who
// the transport says it is. It carries no recovery count of the
// subscriber's own: what it recovered from this publisher is counted here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/seqlock_rows.hpp"

namespace mdcast::feed {

struct SubscriberRow {
  static constexpr uint64_t kSubscribed = 1;      // granted a subscription (not unsubscribed from all since)
  static constexpr uint64_t kAuthenticated = 2;   // identity is a proven identity (a feed with secrets)
  static constexpr uint64_t kUnixPeer = 4;        // pid and peer (a uid) from the kernel (SO_PEERCRED)
  static constexpr uint64_t kTcpPeer = 8;         // peer: an IPv4 address, port its port

  uint64_t client = 0;        // the control plane's id for the connection; 0: a free row
  uint64_t channel = 0;       // wire channel id
  uint64_t flags = 0;
  uint64_t pid = 0;           // the subscriber's process (Unix sockets), 0: unknown
  uint64_t peer = 0;          // uid (Unix) or IPv4 address in host order (TCP)
  uint64_t port = 0;          // TCP: the client's port
  uint64_t connected_ns = 0;  // CLOCK_MONOTONIC
  uint64_t position = 0;      // the next sequence it will deliver, from its last status report (0: none yet)
  uint64_t lag = 0;           // the publisher's last sequence - (position - 1), when the row was written
  uint64_t reported_lag = 0;  // datagrams it had seen but not delivered, as it reported
  uint64_t drops = 0;         // gaps it reported, cumulative
  uint64_t capacity = 0;      // messages/s it said it takes (0: unknown)
  uint64_t retransmit_requests = 0;      // retransmit requests it made
  uint64_t datagrams_retransmitted = 0;  // datagrams sent it in answer
  uint64_t snapshot_requests = 0;        // snapshots it asked for
  uint64_t recoveries = 0;    // retransmits answered with datagrams + snapshots sent it whole
  uint64_t refused = 0;       // requests answered with an error (overloaded included)
  uint64_t report_ns = 0;     // its last status report, CLOCK_MONOTONIC (0: none yet)
  uint64_t written_ns = 0;    // when the publisher wrote this row
  char identity[64] = {};     // the proven identity (kAuthenticated), else empty
  // What its application measured (one-way, ns, since it started), as it
  // reported; latency_count 0: nothing reported.
  uint64_t latency_count = 0;
  uint64_t latency_p50_ns = 0;
  uint64_t latency_p99_ns = 0;
  uint64_t latency_max_ns = 0;

  [[nodiscard]] std::string_view identity_view() const noexcept;
};
static_assert(std::is_trivially_copyable_v<SubscriberRow> && sizeof(SubscriberRow) % 8 == 0);
constexpr size_t kSubscriberRowWords = sizeof(SubscriberRow) / 8;

// One channel's rows, and which are free. Control code: made at setup (it
// allocates its free list then), used from the publishing thread only.
class SubscriberTable {
 public:
  // Rows a channel's table has in a publisher's counters file: a few
  // hundred subscribers per channel are shown; more are counted.
  static constexpr size_t kRowsPerChannel = 256;
  static constexpr uint64_t kRefreshNs = 100 * kNsPerMs;
  static constexpr size_t kRowsPerPoll = 16;
  static constexpr size_t kNone = SIZE_MAX;

  SubscriberTable() = default;
  explicit SubscriberTable(SeqlockRows table);

  [[nodiscard]] size_t rows() const noexcept { return rows_.rows(); }
  // A free row, or kNone when every row is taken.
  [[nodiscard]] size_t claim() noexcept;
  // The row is written free (client 0) and can be claimed again.
  void release(size_t row) noexcept;
  void write(size_t row, const SubscriberRow& r) noexcept { rows_.write_struct(row, r); }

 private:
  SeqlockRows rows_;
  std::vector<size_t> free_;  // a stack, reserved for every row
};

}  // namespace mdcast::feed
