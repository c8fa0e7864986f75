#include "mdcast/media/fault/fault.hpp"

#include <algorithm>

namespace mdcast::media::fault {

FaultPlan::Fate FaultPlan::fate(bool sequenced) noexcept {
  c_.offered.add();
  if (!sequenced && f_.sequenced_only) return Fate::kPass;
  ++n_;
  if (f_.burst_length && n_ > f_.burst_start &&
      (f_.burst_every ? (n_ - f_.burst_start) % f_.burst_every == 0 : n_ == f_.burst_start + 1))
    burst_left_ = f_.burst_length;
  if (burst_left_) {
    --burst_left_;
    c_.burst_lost.add();
    return Fate::kLose;
  }
  if (f_.drop_every && n_ % f_.drop_every == 0) {
    c_.every_lost.add();
    return Fate::kLose;
  }
  if (f_.loss > 0 && rng_.chance(f_.loss)) {
    c_.lost.add();
    return Fate::kLose;
  }
  return Fate::kPass;
}

FaultPlan::Alteration FaultPlan::alter(size_t size) noexcept {
  Alteration a;
  if (f_.truncate > 0 && size > 1 && rng_.chance(f_.truncate)) {
    a.truncate = true;
    a.keep = rng_.below(size);
    c_.truncated.add();
  }
  if (f_.corrupt > 0 && size > 0 && rng_.chance(f_.corrupt)) {
    a.corrupt = true;
    a.at = rng_.below(size);
    a.mask = std::byte{static_cast<uint8_t>(1 + rng_.below(255))};
    c_.corrupted.add();
  }
  if (f_.reorder > 0 && rng_.chance(f_.reorder)) {
    a.hold = true;
    a.hold_for = 1 + static_cast<uint32_t>(rng_.below(std::max<uint32_t>(1, f_.reorder_depth)));
  } else if (f_.duplicate > 0 && rng_.chance(f_.duplicate)) {
    a.duplicate = true;
    c_.duplicated.add();
  }
  return a;
}

}  // namespace mdcast::media::fault
