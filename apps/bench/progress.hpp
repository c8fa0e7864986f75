// The bench's lines on stderr: one per step, and a live progress line under
// it while a run waits on its children (only on a terminal, by default).
#pragma once

#include <cstdint>
#include <string>

namespace mdcast::app::bench {

class Progress {
 public:
  explicit Progress(bool enabled) noexcept : enabled_(enabled) {}
  void phase(std::string text);  // a new step: "[3/9] mdcast latency @ 100k msg/s"
  void update(double elapsed_s, double total_s, const std::string& detail);
  void done();                   // clears the line
  [[nodiscard]] bool enabled() const noexcept { return enabled_; }

 private:
  bool enabled_;
  bool drawn_ = false;
  uint64_t last_ = 0;
  std::string phase_;
};

}  // namespace mdcast::app::bench
