#include "mdcast/feed/subscriber_table.hpp"

#include "mdcast/feed/loss_report.hpp"

#include <cstring>

namespace mdcast::feed {

std::string_view SubscriberRow::identity_view() const noexcept { return {identity, strnlen(identity, sizeof identity)}; }

SubscriberTable::SubscriberTable(SeqlockRows table) : rows_(table) {
  free_.reserve(rows_.rows());
  // Claimed from the front, so a few subscribers sit in the first rows.
  for (size_t i = rows_.rows(); i > 0; --i) free_.push_back(i - 1);
}

size_t SubscriberTable::claim() noexcept {
  if (free_.empty()) return kNone;
  const size_t r = free_.back();
  free_.pop_back();
  return r;
}

void SubscriberTable::release(size_t row) noexcept {
  if (row >= rows_.rows()) return;
  rows_.write_struct(row, SubscriberRow{});
  free_.push_back(row);  // never past its reserved capacity: each row is freed once per claim
}

std::string_view to_string(LossHow h) noexcept {
  switch (h) {
    case LossHow::kOpen: return "open";
    case LossHow::kRetransmit: return "retransmit";
    case LossHow::kSnapshot: return "snapshot";
    case LossHow::kOtherRail: return "other rail";
    case LossHow::kReordered: return "reordered";
    case LossHow::kUnrecovered: return "unrecovered";
  }
  return "?";
}

}  // namespace mdcast::feed
