// SubscriberCore: the loss report (feed/loss_report.hpp). A gap's row is
// written when note_gap opens it and when delivery is whole again (drain);
// poll() closes what ended another way (a new session, the fast path
// delivering the last missing datagram with nothing buffered), within one
// control round of when it did.
#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

void SubscriberCore::open_loss(uint64_t now) noexcept {
  if (gap_rec_.ordinal) close_loss(now, LossHow::kOpen);  // a gap whose end no path recorded
  LossRecord r;
  r.channel = cfg_.channel;
  r.session = session_;
  r.first_seq = next_seq_;
  // The datagram that showed the gap is the highest seen: those before it are missing.
  r.datagrams = highest_seen_ >= next_seq_ ? highest_seen_ - next_seq_ : 0;
  if (r.datagrams == 0) r.datagrams = 1;
  r.detected_ns = now;
  gap_recovered0_ = counters_->datagrams_recovered.get();
  gap_snapshots0_ = counters_->snapshots_applied.get();
  gap_rail_b0_ = counters_->rail_b_first.get();
  losses_->open(r);
  gap_rec_ = r;
}

void SubscriberCore::close_loss(uint64_t now, LossHow how) noexcept {
  LossRecord& r = gap_rec_;
  const uint64_t retransmitted = counters_->datagrams_recovered.get() - gap_recovered0_;
  if (how == LossHow::kOpen) {
    if (r.session != session_) how = LossHow::kUnrecovered;
    else if (counters_->snapshots_applied.get() > gap_snapshots0_) how = LossHow::kSnapshot;
    else if (retransmitted > 0) how = LossHow::kRetransmit;
    else if (counters_->rail_b_first.get() > gap_rail_b0_) how = LossHow::kOtherRail;
    else how = LossHow::kReordered;
  }
  r.how = static_cast<uint64_t>(how);
  r.closed_ns = now > r.detected_ns ? now : r.detected_ns;
  r.retransmitted = retransmitted;
  if (losses_) losses_->update(r);
  r = {};
}

void SubscriberCore::poll_loss(uint64_t now) noexcept {
  if (gap_rec_.session != session_) close_loss(now, LossHow::kUnrecovered);
  else if (!gap_open_ && mode_ == Mode::kLive && next_seq_ > highest_seen_) close_loss(now, LossHow::kOpen);
}

}  // namespace mdcast::feed
