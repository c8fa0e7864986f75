// A token bucket on the caller's clock: what one control client may cost
// the publisher (datagrams retransmitted, snapshot bytes served) per second,
// with a burst.
//
// A request larger than the burst is still served when the bucket is full,
// and leaves it in debt: so any request can eventually be served, and a
// client that asks for more than it is allowed waits proportionally longer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mdcast::feed {

class TokenBucket {
 public:
  TokenBucket() = default;
  // Starts full: a client's first requests are never refused.
  TokenBucket(double rate_per_s, double burst, uint64_t now) noexcept
      : rate_(rate_per_s), burst_(burst), tokens_(burst), last_(now) {}

  // Tokens available at `now` (negative while in debt).
  [[nodiscard]] double available(uint64_t now) noexcept {
    // A clock that steps back refills nothing and is not held against the client.
    if (now > last_) {
      tokens_ = std::min(burst_, tokens_ + rate_ * static_cast<double>(now - last_) * 1e-9);
      last_ = now;
    }
    return tokens_;
  }
  // What a request of `cost` needs in the bucket to be served now.
  [[nodiscard]] double needed(double cost) const noexcept { return std::min(cost, burst_); }
  void take(double cost) noexcept { tokens_ -= cost; }
  // Nanoseconds from `now` until needed(cost) tokens are there (call after available(now)).
  [[nodiscard]] uint64_t wait_ns(double cost) const noexcept {
    const double missing = needed(cost) - tokens_;
    if (missing <= 0) return 0;
    return static_cast<uint64_t>(std::ceil(missing / rate_ * 1e9));
  }
  [[nodiscard]] double burst() const noexcept { return burst_; }

 private:
  double rate_ = 1;
  double burst_ = 1;
  double tokens_ = 1;
  uint64_t last_ = 0;
};

}  // namespace mdcast::feed
