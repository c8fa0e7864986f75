#include "mdcast/stats/progress.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {

FeedWatch::FeedWatch(std::vector<uint64_t> pids) : pids_(std::move(pids)), seen_(pids_.size()) {}

const FeedProgress& FeedWatch::refresh() {
  // Subscribers first, the publisher last: each file is refreshed on its own
  // timer, so a publisher read first would be the staler one.
  for (size_t i = pids_.size(); i-- > 0;) {
    Seen& v = seen_[i];
    try {
      const CountersSnapshot s = read_counters(fmt::format("{}/mdcast-{}.stat", stat_dir(), pids_[i]));
      if (s.role == "publisher" || s.role == "relay") {
        v = {true, true};
        v.published = s.get("pub.messages_published");
        v.sequence = s.get("pub.last_sequence");
        v.stamp_ns = s.stamp_ns;
      } else {
        const uint64_t hi = s.get("sub.highest_sequence"), next = s.get("sub.next_sequence");
        v = {true, false, s.get("sub.messages_delivered"), s.get("sub.gaps"), s.get("sub.datagrams_recovered"),
             s.get("sub.snapshots_applied"), hi >= next ? hi - next + 1 : 0};
      }
    } catch (const Error&) {
    }
  }
  p_ = {};
  uint64_t dmin = UINT64_MAX;
  for (const Seen& v : seen_) {
    if (!v.valid) continue;
    if (v.publisher) {
      p_.published = std::max(p_.published, v.published);
      p_.last_sequence = std::max(p_.last_sequence, v.sequence);
      if (!first_stamp_ && v.published) {
        first_stamp_ = v.stamp_ns;
        first_published_ = v.published;
      }
      if (first_stamp_ && v.stamp_ns > first_stamp_)
        p_.rate = (v.published - first_published_) * kNsPerSec / (v.stamp_ns - first_stamp_);
      continue;
    }
    ++p_.subscribers;
    dmin = std::min(dmin, v.delivered);
    p_.delivered_max = std::max(p_.delivered_max, v.delivered);
    p_.gaps += v.gaps;
    p_.recovered += v.recovered;
    p_.snapshots += v.snapshots;
    p_.lag = std::max(p_.lag, v.lag);
  }
  p_.delivered_min = p_.subscribers ? dmin : 0;
  // Nothing is delivered that was not published: a publisher's file that
  // is still behind a subscriber's shows at least what was delivered.
  p_.published = std::max(p_.published, p_.delivered_max);
  return p_;
}

}  // namespace mdcast::stats
