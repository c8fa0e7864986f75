// A feed's progress across its processes, read from their counters files
// (what `mdcast demo` shows live, what a harness or a console of an
// application's own feed would show): what the publisher has published,
// where the slowest and the fastest subscriber are, what they lost and
// recovered. Read-only: the processes are not disturbed.
//
//   stats::FeedWatch watch({publisher_pid, sub1_pid, sub2_pid});
//   const stats::FeedProgress& p = watch.refresh();
//   fmt::print("published {} delivered {}..{}\n", p.published, p.delivered_min, p.delivered_max);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mdcast::stats {

struct FeedProgress {
  // The publisher's (the file whose role is "publisher" or "relay").
  uint64_t published = 0;      // messages, at least what any subscriber delivered
  uint64_t rate = 0;           // messages/s since it was first read publishing
  uint64_t last_sequence = 0;  // datagrams
  // Over the subscribers read at least once.
  uint64_t delivered_min = 0, delivered_max = 0;
  uint64_t gaps = 0, recovered = 0, snapshots = 0;
  uint64_t lag = 0;  // the most datagrams any one is behind what it has seen
  size_t subscribers = 0;
};

class FeedWatch {
 public:
  explicit FeedWatch(std::vector<uint64_t> pids);

  // Reads every file again. A process whose file is gone (one that
  // finished removes it) or unreadable counts as last read, so a finished
  // subscriber does not fall back to "delivered 0".
  const FeedProgress& refresh();
  [[nodiscard]] const FeedProgress& progress() const noexcept { return p_; }

 private:
  struct Seen {
    bool valid = false, publisher = false;
    uint64_t delivered = 0, gaps = 0, recovered = 0, snapshots = 0, lag = 0;
    uint64_t published = 0, sequence = 0, stamp_ns = 0;
  };
  std::vector<uint64_t> pids_;
  std::vector<Seen> seen_;
  uint64_t first_published_ = 0, first_stamp_ = 0;  // the publisher when first read publishing
  FeedProgress p_;
};

}  // namespace mdcast::stats
