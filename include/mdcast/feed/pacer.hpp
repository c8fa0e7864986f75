// Token-bucket pacing in messages. Multicast has no flow control: the
// publisher paces by policy (fixed rate, or the slowest live subscriber's
// reported capacity) or not at all. An empty bucket is back-pressure, an
// ordinary result for the caller.
#pragma once

#include <algorithm>
#include <cstdint>

#include "mdcast/feed/config.hpp"

namespace mdcast::feed {

class Pacer {
 public:
  explicit Pacer(const PacingConfig& cfg) noexcept
      : mode_(cfg.mode), rate_(cfg.mode == PacingMode::kNone ? 0 : cfg.rate), burst_(std::max(1.0, cfg.burst)),
        tokens_(burst_) {}

  [[nodiscard]] bool try_take(uint64_t now) noexcept {
    if (rate_ <= 0) return true;
    if (now > last_) {
      tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_) * rate_ * 1e-9);
      last_ = now;
    }
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }
  // 0 disables pacing.
  void set_rate(double r) noexcept { rate_ = r; }
  [[nodiscard]] double rate() const noexcept { return rate_; }
  [[nodiscard]] PacingMode mode() const noexcept { return mode_; }

 private:
  PacingMode mode_;
  double rate_;
  double burst_;
  double tokens_;
  uint64_t last_ = 0;
};

}  // namespace mdcast::feed
