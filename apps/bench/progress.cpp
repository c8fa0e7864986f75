#include "progress.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "mdcast/core/clock.hpp"

namespace mdcast::app::bench {

void Progress::phase(std::string text) {
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
  phase_ = std::move(text);
  fmt::print(stderr, "{}\n", phase_);
  std::fflush(stderr);
}

void Progress::update(double elapsed_s, double total_s, const std::string& detail) {
  if (!enabled_) return;
  const uint64_t now = monotonic_ns();
  if (now - last_ < 200 * kNsPerMs) return;
  last_ = now;
  fmt::print(stderr, "\r    {:5.1f} / {:.1f} s  {}\x1b[K", std::max(0.0, elapsed_s), total_s, detail);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::done() {
  if (drawn_) fmt::print(stderr, "\r\x1b[K");
  drawn_ = false;
  std::fflush(stderr);
}

}  // namespace mdcast::app::bench
