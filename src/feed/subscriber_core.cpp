// SubscriberCore: construction, the window, the live path's anomalies
// (screening, fragments, holds, instrument sequence and book refusals),
// sessions and heartbeats. Recovery requests are in subscriber_recovery.cpp,
// the control plane in subscriber_control.cpp.
#include <algorithm>
#include <cstring>

#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

std::string_view to_string(SubscriberEvent e) noexcept {
  switch (e) {
    case SubscriberEvent::kPublisherSilent: return "publisher silent";
    case SubscriberEvent::kPublisherBack: return "publisher back";
    case SubscriberEvent::kSessionEnded: return "session ended";
    case SubscriberEvent::kSessionChanged: return "new publisher session";
    case SubscriberEvent::kControlError: return "control error";
    case SubscriberEvent::kForgedRun: return "forged datagrams cut";
  }
  return "event";
}

SubscriberCore::SubscriberCore(const SubscriberConfig& cfg, ControlChannel* control, SubscriberCounters* counters)
    : cfg_(cfg),
      n_inst_(cfg.books.max_instruments),
      tags_required_(cfg.secret && cfg.authenticate_data),
      ctl_(control),
      reasm_(cfg.max_reassemblies, cfg.max_message) {
  cfg_.validate();
  if (counters) {
    counters_ = counters;
  } else {
    owned_counters_ = std::make_unique<SubscriberCounters>();
    counters_ = owned_counters_.get();
  }
  if (cfg.maintain_books) books_ = std::make_unique<book::BookSet>(cfg.books);
  filter_ = std::make_unique<uint8_t[]>(n_inst_);
  last_iseq_ = std::make_unique<uint32_t[]>(n_inst_);
  irec_of_ = std::make_unique<uint8_t[]>(n_inst_);
  std::fill_n(filter_.get(), n_inst_, cfg.all_instruments ? 1 : 0);
  if (!cfg.all_instruments)
    for (uint32_t i : cfg.instruments) filter_[i] = 1;
  std::fill_n(irec_of_.get(), n_inst_, kNoRec);
  slot_bytes_ = (cfg.max_datagram + 63) / 64 * 64;
  n_slots_ = cfg.window_bytes / slot_bytes_;
  window_ = std::make_unique<std::byte[]>(n_slots_ * slot_bytes_);
  meta_ = std::make_unique<Meta[]>(n_slots_);
  irecs_.resize(cfg.max_instrument_recoveries);
  for (auto& r : irecs_) r.hold = std::make_unique<std::byte[]>(cfg.instrument_hold_bytes);
  // The control round's requests are encoded here, so that sending them
  // allocates nothing: the largest is a snapshot request naming every
  // instrument the filter may hold.
  if (tags_required_) awaiting_ = std::make_unique<std::byte[]>(kAwaitingKey * cfg.max_datagram);
  frame_bytes_ = std::max(wire::ctl::kSmallFrame, wire::ctl::snapshot_request_size(cfg.all_instruments ? 0 : n_inst_));
  frame_ = std::make_unique<std::byte[]>(frame_bytes_);
  if (!cfg.all_instruments) snap_ids_ = std::make_unique<uint32_t[]>(n_inst_);
}

SubscriberCore::~SubscriberCore() { wire::wipe(data_key_); }

size_t SubscriberCore::buffered() const noexcept {
  size_t n = 0;
  for (size_t i = 0; i < n_slots_; ++i) n += meta_[i].seq != 0;
  return n;
}

uint32_t SubscriberCore::active_irecs() const noexcept {
  uint32_t n = 0;
  for (const auto& r : irecs_) n += r.busy;
  return n;
}

// ------------------------------------------------------------ screening --

bool SubscriberCore::admit(const wire::DatagramHeader& h, wire::DatagramCheck chk, size_t size) noexcept {
  if (chk != wire::DatagramCheck::kOk) {
    counters_->malformed.add();
    if (chk == wire::DatagramCheck::kBadCrc) counters_->crc_errors.add();
    return false;
  }
  if (size > cfg_.max_datagram) {
    // Larger than this subscriber was configured for (its window slots):
    // a configuration mismatch with the publisher, counted, never copied.
    counters_->malformed.add();
    counters_->oversized.add();
    return false;
  }
  if (h.channel != cfg_.channel) {
    counters_->foreign_channel.add();
    return false;
  }
  if (cfg_.sender_id != 0 && h.sender == cfg_.sender_id) {
    counters_->dropped_own.add();
    return false;
  }
  if (h.session != session_) {
    // The first session heard is taken on trust until the subscription's
    // acknowledgement confirms or replaces it; any other is only a claim.
    // A subscriber that authenticates trusts only its control plane: until
    // the acknowledgement names the session its datagrams wait in the window
    // (delivered then, or discarded if the publisher names another).
    if (session_ == 0) {
      start_session(h.session);
      if (cfg_.secret && ctl_ && !session_confirmed_) mode_ = Mode::kUnconfirmed;
      return true;
    }
    return other_session(h.session);
  }
  return true;
}

void SubscriberCore::publisher_back() noexcept {
  publisher_silent_ = false;
  notify_event(SubscriberEvent::kPublisherBack, {});
}

// --------------------------------------------------------------- window --

void SubscriberCore::store(std::span<const std::byte> d, uint64_t seq, Rail rail, uint64_t now) noexcept {
  note_gap(now);  // before any overflow handling: a gap is a gap, however it is recovered
  uint64_t base = window_base();
  if (seq < base) {  // below a window that slid during a snapshot wait: abandoned
    counters_->window_discards.add();
    return;
  }
  if (seq >= base + n_slots_) {
    // Too far ahead to buffer: what lies below the new window is abandoned and
    // must come from a snapshot.
    counters_->window_overflows.add();
    const uint64_t new_base = seq - n_slots_ + 1;
    if (new_base - base >= n_slots_) {
      for (size_t i = 0; i < n_slots_; ++i)
        if (meta_[i].seq != 0) {
          meta_[i].seq = 0;
          counters_->window_discards.add();
        }
    } else {
      for (uint64_t s = base; s < new_base; ++s)
        if (present(s)) {
          meta_[slot_of(s)].seq = 0;
          counters_->window_discards.add();
        }
    }
    floor_ = new_base;
    base = new_base;
    enter_snapshot();
  }
  Meta& m = meta_[slot_of(seq)];
  if (m.seq == seq) {
    counters_->duplicates.add();
    return;
  }
  if (mode_ == Mode::kUnconfirmed) counters_->unconfirmed_held.add();
  rail_first(rail);
  std::memcpy(&window_[slot_of(seq) * slot_bytes_], d.data(), d.size());
  m = {seq, now, static_cast<uint16_t>(d.size())};
  note_gap(now);
  scan_needed_ = true;
}

void SubscriberCore::note_gap(uint64_t now) noexcept {
  if (mode_ != Mode::kLive || next_seq_ > highest_seen_) {
    gap_open_ = false;
    return;
  }
  if (!gap_open_) {
    gap_open_ = true;
    gap_since_ = now;
    counters_->gaps.add();
    scan_needed_ = true;
    if (losses_) open_loss(now);
  }
}

void SubscriberCore::drain(uint64_t now) noexcept {
  // Re-checked per datagram: delivering one may start a full snapshot
  // (no instrument-recovery slot left), which stops delivery from the window.
  while (mode_ == Mode::kLive) {
    Meta& m = meta_[slot_of(next_seq_)];
    if (m.seq != next_seq_) break;
    const std::span<const std::byte> d{&window_[slot_of(next_seq_) * slot_bytes_], m.len};
    const wire::DatagramHeader h = wire::read_header(d.data());
    m.seq = 0;
    deliver_buffered(d, h, m.recv);  // received then: the handler's latency figure
    ++next_seq_;
  }
  counters_->next_sequence.set(next_seq_);
  if (next_seq_ > highest_seen_) {
    gap_open_ = false;
    if (gap_rec_.ordinal) close_loss(now, LossHow::kOpen);
  } else {
    note_gap(now);
  }
}

// ------------------------------------------------------------- messages --

bool SubscriberCore::reassemble(const wire::FragmentView& f, wire::MessageView& whole) noexcept {
  if (!wants(f.instrument())) {
    counters_->messages_filtered.add();
    return false;
  }
  counters_->fragments.add();
  const auto r = reasm_.add_checked(f, whole);
  if (r == Reassembler::Result::kDropped) {
    counters_->reassembly_dropped.add();
    return false;
  }
  if (r != Reassembler::Result::kComplete) return false;
  counters_->reassembled.add();
  return true;
}

void SubscriberCore::hold(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept {
  InstrumentRecovery& r = irecs_[irec_of_[inst]];
  if (r.hold_len + kHoldHeader + v.size() > cfg_.instrument_hold_bytes) {
    r.overflow = true;  // finish_irec then asks for a newer snapshot instead of replaying a hole
    return;
  }
  std::byte* p = r.hold.get() + r.hold_len;
  store_le<uint64_t>(p, dl.sequence);
  store_le<uint64_t>(p + 8, dl.send_time_ns);
  std::memcpy(p + kHoldHeader, v.data(), v.size());
  r.hold_len += kHoldHeader + v.size();
}

void SubscriberCore::out_of_sequence(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept {
  if (v.instrument_seq() < last_iseq_[inst] + 1) {  // already in the book: a snapshot covered it
    counters_->messages_superseded.add();
    return;
  }
  counters_->instrument_gaps.add();
  start_irec(inst);
  if (irec_of_[inst] != kNoRec) hold(inst, v, dl);
}

void SubscriberCore::book_refused(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept {
  counters_->book_errors.add();
  start_irec(inst);
  if (irec_of_[inst] != kNoRec) hold(inst, v, dl);
}

// ------------------------------------------------- sessions, heartbeats --

void SubscriberCore::start_session(uint64_t s) noexcept {
  session_ = s;
  mode_ = Mode::kLive;
  next_seq_ = 1;
  highest_seen_ = 0;
  floor_ = 0;
  // Time without data is measured from the session's first delivery.
  progress_seq_ = next_seq_;
  progress_ns_ = 0;
  progress_idle_ = false;
  hb_tail_ = {UINT64_MAX, UINT64_MAX};
  gap_open_ = false;
  scan_needed_ = false;
  session_ended_ = false;
  end_seq_ = 0;
  session_confirmed_ = false;
  confirmed_last_ = 0;
  confirm_limit_ = UINT64_MAX;
  asked_ = {};
  noted_ = {};
  n_reqs_ = 0;
  snap_sent_ = false;
  for (size_t i = 0; i < n_slots_; ++i)
    if (meta_[i].seq != 0) {
      meta_[i].seq = 0;
      counters_->window_discards.add();  // the old session's: never to be delivered
    }
  cancel_irecs();
  reasm_.reset();
  std::fill_n(last_iseq_.get(), n_inst_, 0u);
  if (books_) books_->clear_all();
  counters_->next_sequence.set(1);
  counters_->highest_sequence.set(0);
  notify_reset(s);
}

void SubscriberCore::on_unsequenced(std::span<const std::byte> d, const wire::DatagramHeader& h, Rail rail,
                                    uint64_t now) noexcept {
  counters_->heartbeats.add();  // per datagram: the counters' balance counts datagrams
  wire::MessageCursor cur = wire::MessageCursor::payload_of(d);
  wire::MessageView v;
  while (cur.next(v))
    if (v.type() == wire::MsgType::kHeartbeat) check_heartbeat(wire::HeartbeatView(v), h.flags, rail, now);
}

void SubscriberCore::check_heartbeat(const wire::HeartbeatView& hb, uint8_t flags, Rail rail, uint64_t now) noexcept {
  const uint64_t last = hb.last_seq();
  // A member that sent nothing for a heartbeat interval (the same tail
  // twice on its rail), and nothing beyond what was delivered: until the
  // next new sequence the feed is paused, not late (what longest_data_gap_ns
  // leaves out). One such heartbeat alone is a busy feed caught up.
  note_progress(now);
  if (rail != Rail::kRecovery) {
    uint64_t& prev = hb_tail_[static_cast<uint8_t>(rail)];
    if (mode_ == Mode::kLive && last + 1 == next_seq_ && prev == last) progress_idle_ = true;
    prev = last;
  }
  // Tail loss: the publisher sent more than we saw (unless the claim reaches
  // beyond the window: then the control plane is asked first).
  if (last > highest_seen_ && ((last < ahead_limit() && last < confirm_limit_) || plausible_ahead(last, false))) {
    highest_seen_ = last;
    counters_->highest_sequence.set(last);
    note_gap(now);
  }
  if ((flags & wire::kFlagEndOfSession) && !session_ended_) {
    if (ctl_) {
      ++noted_.held_end;
      claim(kClaimEnd);  // ended only at the sequence the publisher confirms
    } else {
      end_confirmed(last, now);
    }
  }
  if (!cfg_.verify_checksums || !books_ || mode_ != Mode::kLive) return;
  // Per-instrument checksums: comparable whenever our instrument sequence
  // equals the publisher's, wherever the datagram stream stands.
  for (uint16_t i = 0; i < hb.entry_count(); ++i) {
    const auto e = hb.entry(i);
    if (!wants(e.instrument) || irec_of_[e.instrument] != kNoRec || last_iseq_[e.instrument] != e.instrument_seq)
      continue;
    if (books_->book(e.instrument).checksum() == e.checksum) {
      counters_->checksum_ok.add();
    } else {
      counters_->checksum_mismatch.add();
      start_irec(e.instrument);
    }
  }
  // The global checksum needs the whole feed, caught up to the heartbeat.
  if (cfg_.all_instruments && next_seq_ == last + 1 && active_irecs() == 0 && hb.instrument_count() == n_inst_) {
    if (books_->global_checksum() == hb.global_checksum()) {
      counters_->checksum_ok.add();
    } else {
      counters_->checksum_mismatch.add();
      if (now >= checksum_snapshot_after_) {
        checksum_snapshot_after_ = now + cfg_.checksum_snapshot_interval_ns;
        enter_snapshot();
      }
    }
  }
}

}  // namespace mdcast::feed
