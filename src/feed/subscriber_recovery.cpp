// SubscriberCore: getting back what the medium lost. Retransmit requests for
// the missing runs (timeouts, retries), the full snapshot when history is
// gone, and single-instrument snapshots with their held messages.
//
// What starts a recovery (enter_snapshot, start_irec) only marks its request
// due: it is often a datagram, and a datagram sends nothing. poll_requests
// sends what is due, encoded into the frame buffer (subscriber_core.hpp).
#include <algorithm>

#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

// ----------------------------------------------------------- retransmits --

void SubscriberCore::request_missing(uint64_t now) noexcept {
  scan_needed_ = false;
  if (highest_seen_ + 1 - next_seq_ > cfg_.max_retransmit_span) {
    enter_snapshot();
    return;
  }
  auto covered = [this](uint64_t s) -> uint64_t {  // end of the request covering s, or 0
    for (uint32_t i = 0; i < n_reqs_; ++i)
      if (s >= reqs_[i].from && s < reqs_[i].from + reqs_[i].count) return reqs_[i].from + reqs_[i].count - 1;
    return 0;
  };
  const uint64_t limit = std::min<uint64_t>(highest_seen_, window_base() + n_slots_ - 1);
  uint64_t s = next_seq_;
  while (s <= limit && n_reqs_ < cfg_.max_outstanding) {
    if (present(s)) {
      ++s;
      continue;
    }
    if (const uint64_t end = covered(s)) {
      s = end + 1;
      continue;
    }
    uint64_t e = s;
    while (e + 1 <= limit && !present(e + 1) && !covered(e + 1) && e + 1 - s < 0xffff) ++e;
    Request& r = reqs_[n_reqs_++];
    r = {next_rid_++, s, static_cast<uint32_t>(e - s + 1), 0, 0, false};
    counters_->retransmit_requests.add();
    send_retransmit(r, now);
    s = e + 1;
  }
  // Beyond the window nothing could be stored anyway: those come after the drain.
  if (highest_seen_ > limit) scan_needed_ = true;
}

void SubscriberCore::send_retransmit(Request& r, uint64_t now) noexcept {
  // Sent even when the channel refuses it (backlog full): the timeout asks
  // again, which bounds how often a stuck channel is tried.
  r.sent = true;
  r.deadline = now + cfg_.request_timeout_ns;
  if (!ctl_) return;
  try {
    // Typed, not encoded here: a medium that can fetch the range itself
    // (RDMA READ) answers through on_retransmitted without a frame.
    (void)ctl_->request_retransmit(r.rid, session_, r.from, r.count);
  } catch (...) {
    // Out of memory encoding the frame: the timeout asks again.
  }
}

void SubscriberCore::retransmit_answered(uint32_t rid, uint64_t session, wire::RetransmitStatus status,
                                         std::span<const std::span<const std::byte>> datagrams,
                                         uint64_t now) noexcept {
  uint32_t i = 0;
  while (i < n_reqs_ && reqs_[i].rid != rid) ++i;
  if (i == n_reqs_) return;  // late reply to a request we gave up on
  reqs_[i] = reqs_[--n_reqs_];
  if (session != session_) {
    scan_needed_ = true;
    return;
  }
  if (status == wire::RetransmitStatus::kNotYet) {
    // We asked beyond what the publisher sent: our idea of its tail came
    // from something that lied. Its status bounds what we wait for; asking
    // again before that would only hear "not yet" again.
    claim(kClaimNotYet);
    return;
  }
  // Whatever the answer left out (a capped reply) is asked for again by the
  // next scan, as a fresh request.
  scan_needed_ = true;
  if (status == wire::RetransmitStatus::kTooOld) {
    counters_->retransmit_too_old.add();
    enter_snapshot();
    return;
  }
  for (const auto& d : datagrams) receive_recovered(d, now);
}

void SubscriberCore::on_retransmitted(uint32_t rid, uint64_t session,
                                      std::span<const std::span<const std::byte>> datagrams, uint64_t now) noexcept {
  if (datagrams.empty() && session == session_) {
    uint32_t i = 0;
    while (i < n_reqs_ && reqs_[i].rid != rid) ++i;
    if (i == n_reqs_) return;
    Request& r = reqs_[i];
    if (++r.retries > cfg_.max_retries) {
      enter_snapshot();
      return;
    }
    r.sent = false;  // poll() sends it again: never from inside the medium's callback
    return;
  }
  retransmit_answered(rid, session, wire::RetransmitStatus::kOk, datagrams, now);
}

void SubscriberCore::poll_requests(uint64_t now) noexcept {
  for (uint32_t i = 0; i < n_reqs_;) {
    Request& r = reqs_[i];
    if (r.sent) {
      if (now < r.deadline) {
        ++i;
        continue;
      }
      counters_->retransmit_timeouts.add();
      if (++r.retries > cfg_.max_retries) {
        enter_snapshot();
        break;
      }
    }
    send_retransmit(r, now);
    ++i;
  }
  for (auto& r : irecs_)
    if (r.busy && irec_of_[r.inst] != kNoRec && (!r.sent || now >= r.deadline)) send_irec(r, now);

  if (mode_ == Mode::kLive && scan_needed_ && next_seq_ <= highest_seen_ && now - gap_since_ >= cfg_.reorder_wait_ns)
    request_missing(now);
  // Last: a snapshot entered above (retries exhausted, a gap too large) is
  // asked for in this round, not the next.
  if (mode_ == Mode::kSnapshot && (!snap_sent_ || now >= snap_deadline_)) {
    if (snap_sent_) counters_->retransmit_timeouts.add();
    send_snapshot_request(now);
  }
}

// A new control connection knows nothing of what was asked on the previous
// one: its replies are lost with it.
void SubscriberCore::mark_unsent() noexcept {
  for (uint32_t i = 0; i < n_reqs_; ++i) reqs_[i].sent = false;
  snap_sent_ = false;
  for (auto& r : irecs_) r.sent = false;
}

// On a subscription acknowledged: whatever waits for one goes out now, with
// the request ids and retry counts it had (a late answer still matches).
void SubscriberCore::resend_unsent(uint64_t now) noexcept {
  if (mode_ == Mode::kSnapshot && !snap_sent_) send_snapshot_request(now);
  for (auto& r : irecs_)
    if (r.busy && !r.sent) send_irec(r, now);
  for (uint32_t i = 0; i < n_reqs_; ++i)
    if (!reqs_[i].sent) send_retransmit(reqs_[i], now);
}

// ------------------------------------------------------- full snapshots --

void SubscriberCore::enter_snapshot() noexcept {
  if (mode_ == Mode::kSnapshot) return;
  mode_ = Mode::kSnapshot;
  counters_->snapshots_requested.add();
  n_reqs_ = 0;
  cancel_irecs();  // the full snapshot covers them
  gap_open_ = false;
  snap_rid_ = next_rid_++;
  snap_sent_ = false;  // due: the next poll asks
  snap_cleared_ = false;
}

void SubscriberCore::send_snapshot_request(uint64_t now) noexcept {
  if (!subscribed_) return;  // sent once the subscription is acknowledged
  snap_sent_ = true;
  snap_deadline_ = now + cfg_.request_timeout_ns;
  wire::SnapshotRequestView r{cfg_.all_instruments, {}};
  if (!r.all) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_inst_; ++i)
      if (filter_[i]) snap_ids_[n++] = i;
    r.ids = {snap_ids_.get(), n};
  }
  send_encoded(wire::encode_control(snap_rid_, r, frame_buffer()));
}

void SubscriberCore::clear_filtered() noexcept {
  snap_cleared_ = true;
  for (uint32_t i = 0; i < n_inst_; ++i) {
    if (!filter_[i]) continue;
    last_iseq_[i] = 0;
    if (books_) books_->clear(i);
  }
  reasm_.reset();
}

void SubscriberCore::apply_snapshot_run(std::span<const std::byte> run, int irec) noexcept {
  wire::MessageCursor cur(run.data(), run.size());
  wire::MessageView v;
  while (cur.next(v)) {
    // The type first: an unknown (forward-compatible) message may be 4 bytes.
    if (!wire::is_market_data(v.type())) continue;
    const uint32_t inst = v.instrument();
    if (!wants(inst)) continue;
    if (irec >= 0 && inst != irecs_[static_cast<size_t>(irec)].inst) continue;
    if (v.type() == wire::MsgType::kInstrumentDefinition) {
      if (books_) books_->set_definition(inst, wire::decode(v).definition);
      continue;
    }
    if (v.type() != wire::MsgType::kSnapshotChunk) continue;
    const wire::SnapshotChunkView c(v);
    if (c.chunk_index() == 0 && books_) books_->clear(inst);
    if (books_) {
      for (uint16_t i = 0; i < c.order_count(); ++i) {
        const auto e = c.order(i);
        if (books_->add_order(inst, e.order_id, e.price, e.quantity, e.side) != book::ApplyResult::kOk)
          counters_->book_errors.add();
      }
      books_->set_status(inst, c.status());
      books_->set_instrument_seq(inst, c.instrument_seq());
    }
    last_iseq_[inst] = c.instrument_seq();
    if (irec >= 0) irecs_[static_cast<size_t>(irec)].got_chunk = true;
  }
}

void SubscriberCore::finish_snapshot(uint64_t snap_seq, uint64_t now) noexcept {
  if (snap_seq + 1 < next_seq_) {  // older than what we already delivered: ask again (the next poll)
    snap_sent_ = false;
    return;
  }
  if (!snap_cleared_) clear_filtered();
  counters_->snapshots_applied.add();
  mode_ = Mode::kLive;
  snap_sent_ = false;
  next_seq_ = snap_seq + 1;
  floor_ = 0;
  // The window re-bases at next_seq_: what the snapshot covers goes, and so
  // does anything the re-based window cannot index (it is asked for again).
  for (size_t i = 0; i < n_slots_; ++i) {
    Meta& m = meta_[i];
    if (m.seq == 0) continue;
    if (m.seq <= snap_seq) {
      m.seq = 0;
      counters_->skipped_by_snapshot.add();
    } else if (m.seq >= next_seq_ + n_slots_) {
      m.seq = 0;
      counters_->window_discards.add();
    }
  }
  // What is still expected comes from what is buffered and the snapshot, not
  // from a sequence seen earlier: a bogus far-ahead datagram (a rogue sender
  // on a medium without CRC) must not keep the subscriber recovering forever.
  // Heartbeats re-announce the true tail.
  highest_seen_ = snap_seq;
  for (size_t i = 0; i < n_slots_; ++i)
    if (meta_[i].seq > highest_seen_) highest_seen_ = meta_[i].seq;
  counters_->highest_sequence.set(highest_seen_);
  for (uint32_t i = 0; i < n_inst_; ++i)
    if (filter_[i]) notify_snapshot(i, books_.get());
  gap_open_ = false;
  drain(now);
  scan_needed_ = true;
}

void SubscriberCore::on_snapshot_data(uint32_t rid, const wire::SnapshotData& b) noexcept {
  if (b.session != session_) return;
  if (mode_ == Mode::kSnapshot && rid == snap_rid_) {
    if (!snap_cleared_) clear_filtered();
    apply_snapshot_run(b.messages, -1);
    return;
  }
  for (size_t i = 0; i < irecs_.size(); ++i)
    if (irecs_[i].busy && irecs_[i].rid == rid && irec_of_[irecs_[i].inst] == i) {
      apply_snapshot_run(b.messages, static_cast<int>(i));
      return;
    }
}

void SubscriberCore::on_snapshot_done(uint32_t rid, const wire::SnapshotDone& b, uint64_t now) noexcept {
  if (b.session != session_) return;
  if (mode_ == Mode::kSnapshot && rid == snap_rid_) {
    // Anything but ok (unavailable for now) is left to the deadline.
    if (b.status == wire::SnapshotStatus::kOk) finish_snapshot(b.snapshot_seq, now);
    return;
  }
  for (size_t i = 0; i < irecs_.size(); ++i) {
    InstrumentRecovery& r = irecs_[i];
    if (!r.busy || r.rid != rid || irec_of_[r.inst] != i) continue;
    if (b.status == wire::SnapshotStatus::kOk) {
      finish_irec(static_cast<int>(i), now);
    } else {
      // Refused (entitlement): stop asking, drop the instrument from the filter.
      filter_[r.inst] = 0;
      irec_of_[r.inst] = kNoRec;
      r.busy = false;
      r.hold_len = 0;
    }
    return;
  }
}

// ----------------------------------------------- per-instrument recovery --

void SubscriberCore::start_irec(uint32_t inst) noexcept {
  if (irec_of_[inst] != kNoRec || mode_ == Mode::kSnapshot) return;
  for (size_t i = 0; i < irecs_.size(); ++i) {
    InstrumentRecovery& r = irecs_[i];
    if (r.busy) continue;
    r.busy = true;
    r.sent = false;  // due: the next poll asks
    r.got_chunk = false;
    r.overflow = false;
    r.inst = inst;
    r.rid = next_rid_++;
    r.retries = 0;
    r.hold_len = 0;
    irec_of_[inst] = static_cast<uint8_t>(i);
    counters_->instrument_recoveries.add();
    return;
  }
  enter_snapshot();  // no recovery slot free: recover everything
}

void SubscriberCore::send_irec(InstrumentRecovery& r, uint64_t now) noexcept {
  if (!subscribed_) return;
  r.sent = true;
  r.deadline = now + cfg_.request_timeout_ns;
  const uint32_t id = r.inst;
  send_encoded(wire::encode_control(r.rid, wire::SnapshotRequestView{false, {&id, 1}}, frame_buffer()));
}

void SubscriberCore::finish_irec(int idx, uint64_t now) noexcept {
  InstrumentRecovery& r = irecs_[static_cast<size_t>(idx)];
  const uint32_t inst = r.inst;
  if (r.overflow || !r.got_chunk) {  // lost held messages: take a newer snapshot
    r.overflow = false;
    r.got_chunk = false;
    r.hold_len = 0;
    r.rid = next_rid_++;
    r.sent = false;  // the next poll asks
    return;
  }
  irec_of_[inst] = kNoRec;  // r stays busy while replaying, so a new recovery uses another slot
  counters_->instrument_recovered.add();
  notify_snapshot(inst, books_.get());
  const uint32_t snap_iseq = last_iseq_[inst];
  for (size_t off = 0; off < r.hold_len;) {
    const std::byte* p = r.hold.get() + off;
    const wire::MessageView v(p + kHoldHeader, load_le<uint16_t>(p + kHoldHeader));
    off += kHoldHeader + v.size();
    if (v.instrument_seq() <= snap_iseq) continue;
    replay_held(v, Delivery{load_le<uint64_t>(p), load_le<uint64_t>(p + 8), now, true});
  }
  r.busy = false;
  r.hold_len = 0;
}

void SubscriberCore::cancel_irecs() noexcept {
  for (auto& r : irecs_) {
    if (r.busy && irec_of_[r.inst] != kNoRec) irec_of_[r.inst] = kNoRec;
    r.busy = false;
    r.hold_len = 0;
  }
}

}  // namespace mdcast::feed
