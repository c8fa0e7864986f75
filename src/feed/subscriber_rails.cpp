// SubscriberCore: what a publisher pair's takeover looks like from here
// (docs/architecture.md, "Publisher pairs"). The members publish the same
// datagrams, one on each rail, so a member's death is a rail that falls
// silent while the other goes on, and its cost is the time until the
// survivor brings a sequence the dead one had not: both are judged once a
// control round from stamps the live path writes anyway (rail_rx_, next_seq_),
// so a datagram pays one store for them and nothing more.
#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

void SubscriberCore::note_progress(uint64_t now) noexcept {
  if (next_seq_ == progress_seq_) return;
  if (progress_ns_ != 0 && now > progress_ns_) {
    // A heartbeat that showed the publisher had nothing more to send made
    // the interval its pause (no input, the end of a session), not data
    // this subscriber went without.
    const uint64_t gap = progress_idle_ ? 0 : now - progress_ns_;
    if (gap > counters_->longest_data_gap_ns.get()) counters_->longest_data_gap_ns.set(gap);
    // The first interval that began after a rail's last datagram is the one
    // its silence may have caused: kept until the rail is heard again.
    for (size_t r = 0; r < 2; ++r)
      if (!rail_gap_known_[r] && rail_rx_[r] != 0 && rail_rx_[r] <= progress_ns_) {
        rail_gap_[r] = gap;
        rail_gap_known_[r] = true;
      }
  }
  progress_seq_ = next_seq_;
  progress_ns_ = now;
  progress_idle_ = false;
}

void SubscriberCore::watch_rails(uint64_t now) noexcept {
  for (size_t r = 0; r < 2; ++r)
    if (rail_rx_[r] != rail_seen_[r]) {
      rail_seen_[r] = rail_rx_[r];
      rail_gap_known_[r] = false;
    }
  note_progress(now);
  // Receive stamps may be later than `now` (see poll): that is no silence.
  const auto quiet = [&](size_t r) {
    return rail_rx_[r] != 0 && now > rail_rx_[r] && now - rail_rx_[r] > cfg_.publisher_timeout_ns;
  };
  for (size_t r = 0; r < 2; ++r) {
    const size_t other = 1 - r;
    if (rail_silent_[r]) {
      if (!quiet(r)) {
        rail_silent_[r] = false;
        (r == 0 ? counters_->rail_a_returns : counters_->rail_b_returns).add();
      }
      continue;
    }
    // Both quiet is the publisher's silence (publisher_timeouts), not a rail's.
    if (!quiet(r) || rail_rx_[other] == 0 || quiet(other)) continue;
    rail_silent_[r] = true;
    (r == 0 ? counters_->rail_a_silences : counters_->rail_b_silences).add();
    // No new sequence yet since the rail's last datagram: what it cost so
    // far (nothing if the publisher showed it had nothing more to send).
    const uint64_t cost = rail_gap_known_[r]           ? rail_gap_[r]
                          : progress_idle_ || !progress_ns_ ? 0
                                                            : now - progress_ns_;
    counters_->silence_gap_ns.add(cost);
  }
}

}  // namespace mdcast::feed
