// Implementation of Subscriber<Handler> (included by subscriber.hpp).
#pragma once

#include <algorithm>

// Included first, it gets the declarations this way (subscriber.hpp's own
// include of this file is then a no-op).
#include "mdcast/feed/subscriber.hpp"

namespace mdcast::feed {

template <SubscriberHandler H>
Subscriber<H>::Subscriber(const SubscriberConfig& cfg, H& handler, ControlChannel* control,
                          SubscriberCounters* counters)
    : cfg_(cfg), handler_(handler), ctl_(control), n_inst_(cfg.books.max_instruments),
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
}

template <SubscriberHandler H>
size_t Subscriber<H>::buffered() const noexcept {
  size_t n = 0;
  for (size_t i = 0; i < n_slots_; ++i) n += meta_[i].seq != 0;
  return n;
}

template <SubscriberHandler H>
uint32_t Subscriber<H>::active_irecs() const noexcept {
  uint32_t n = 0;
  for (const auto& r : irecs_) n += r.busy;
  return n;
}

// ------------------------------------------------------------------ data --

template <SubscriberHandler H>
void Subscriber<H>::on_datagram(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept {
  wire::DatagramHeader h;
  uint32_t unknown = 0;
  const wire::DatagramCheck chk = wire::validate_datagram(d, h, &unknown);
  if (rail == Rail::kRecovery)
    counters_->datagrams_recovered.add();
  else
    counters_->datagrams_received.add();
  if (chk != wire::DatagramCheck::kOk) {
    counters_->malformed.add();
    if (chk == wire::DatagramCheck::kBadCrc) counters_->crc_errors.add();
    return;
  }
  if (d.size() > cfg_.max_datagram) {
    // Larger than this subscriber was configured for (its window slots):
    // a configuration mismatch with the publisher, counted, never copied.
    counters_->malformed.add();
    counters_->oversized.add();
    return;
  }
  if (h.channel != cfg_.channel) {
    counters_->foreign_channel.add();
    return;
  }
  if (cfg_.sender_id != 0 && h.sender == cfg_.sender_id) {
    counters_->dropped_own.add();
    return;
  }
  if (!accept_session(h.session, now)) {
    counters_->stale_session.add();
    return;
  }
  if (unknown) counters_->unknown_messages.add(unknown);
  last_rx_ = now;
  if (publisher_silent_) {
    publisher_silent_ = false;
    event(SubscriberEvent::kPublisherBack, {});
  }
  if (!h.sequenced()) {
    handle_unsequenced(d, h, now);
    return;
  }
  const uint64_t seq = h.sequence;
  if (seq > highest_seen_) {
    highest_seen_ = seq;
    counters_->highest_sequence.set(seq);
  }
  if (seq < next_seq_) {
    counters_->duplicates.add();
    return;
  }
  if (mode_ == Mode::kLive && seq == next_seq_) {
    // The common case: in order, delivered straight from the medium's buffer.
    rail_first(rail);
    deliver(d, h, now, now, rail == Rail::kRecovery);
    ++next_seq_;
    drain(now);
    return;
  }
  store(d, seq, rail, now);
}

template <SubscriberHandler H>
void Subscriber<H>::store(std::span<const std::byte> d, uint64_t seq, Rail rail, uint64_t now) noexcept {
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
    enter_snapshot(now);
  }
  Meta& m = meta_[slot_of(seq)];
  if (m.seq == seq) {
    counters_->duplicates.add();
    return;
  }
  rail_first(rail);
  std::memcpy(&window_[slot_of(seq) * slot_bytes_], d.data(), d.size());
  m = {seq, now, static_cast<uint16_t>(d.size())};
  note_gap(now);
  scan_needed_ = true;
}

template <SubscriberHandler H>
void Subscriber<H>::note_gap(uint64_t now) noexcept {
  if (mode_ != Mode::kLive || next_seq_ > highest_seen_) {
    gap_open_ = false;
    return;
  }
  if (!gap_open_) {
    gap_open_ = true;
    gap_since_ = now;
    counters_->gaps.add();
    scan_needed_ = true;
  }
}

template <SubscriberHandler H>
void Subscriber<H>::drain(uint64_t now) noexcept {
  while (mode_ == Mode::kLive) {
    Meta& m = meta_[slot_of(next_seq_)];
    if (m.seq != next_seq_) break;
    const std::span<const std::byte> d{&window_[slot_of(next_seq_) * slot_bytes_], m.len};
    const wire::DatagramHeader h = wire::read_header(d.data());
    m.seq = 0;
    deliver(d, h, m.recv, now, true);
    ++next_seq_;
  }
  counters_->next_sequence.set(next_seq_);
  if (next_seq_ > highest_seen_) {
    gap_open_ = false;
  } else {
    note_gap(now);
  }
}

template <SubscriberHandler H>
void Subscriber<H>::deliver(std::span<const std::byte> d, const wire::DatagramHeader& h, uint64_t received,
                            uint64_t now, bool recovered) noexcept {
  counters_->datagrams_delivered.add();
  // `received` is when the datagram arrived (latency); `now` drives timers.
  const Delivery dl{h.sequence, h.send_time_ns, received, recovered};
  wire::MessageCursor cur = wire::MessageCursor::payload_of(d);
  wire::MessageView v;
  while (cur.next(v)) {
    const auto t = static_cast<uint8_t>(v.type());
    if (t == static_cast<uint8_t>(wire::MsgType::kFragment)) {
      const wire::FragmentView f(v);
      if (!wants(f.instrument())) {
        counters_->messages_filtered.add();
        continue;
      }
      counters_->fragments.add();
      std::span<const std::byte> whole;
      const auto r = reasm_.add(f, whole);
      if (r == Reassembler::Result::kDropped) {
        counters_->reassembly_dropped.add();
      } else if (r == Reassembler::Result::kComplete) {
        // The reassembled bytes come from the network too: validate them.
        const uint16_t len = whole.size() >= 2 ? load_le<uint16_t>(whole.data()) : uint16_t{0};
        if (len != whole.size() || wire::validate_message(whole.data(), len) != wire::MessageCheck::kOk ||
            !wire::is_market_data(static_cast<wire::MsgType>(whole[wire::msg::kType])) ||
            whole[wire::msg::kType] == std::byte{static_cast<uint8_t>(wire::MsgType::kSnapshotChunk)}) {
          counters_->reassembly_dropped.add();
          continue;
        }
        counters_->reassembled.add();
        process(wire::MessageView(whole.data(), len), dl, now);
      }
      continue;
    }
    if (t < static_cast<uint8_t>(wire::MsgType::kInstrumentDefinition) ||
        t > static_cast<uint8_t>(wire::MsgType::kOpaque) ||
        t == static_cast<uint8_t>(wire::MsgType::kSnapshotChunk) ||
        t == static_cast<uint8_t>(wire::MsgType::kHeartbeat))
      continue;  // unknown types were counted at validation; others do not belong here
    process(v, dl, now);
  }
}

template <SubscriberHandler H>
void Subscriber<H>::process(wire::MessageView v, const Delivery& dl, uint64_t now) noexcept {
  const uint32_t inst = v.instrument();
  if (!wants(inst)) {
    counters_->messages_filtered.add();
    return;
  }
  if (irec_of_[inst] != kNoRec) {
    hold(inst, v, dl);
    return;
  }
  const uint32_t iseq = v.instrument_seq();
  const uint32_t expected = last_iseq_[inst] + 1;
  if (iseq != expected) {
    if (iseq < expected) {  // already in the book: a snapshot covered it
      counters_->messages_superseded.add();
      return;
    }
    counters_->instrument_gaps.add();
    start_irec(inst, now);
    if (irec_of_[inst] != kNoRec) hold(inst, v, dl);
    return;
  }
  const wire::Message m = wire::decode(v);
  if (books_) {
    const book::ApplyResult r = books_->apply(m);
    if (r != book::ApplyResult::kOk && r != book::ApplyResult::kIgnored) {
      counters_->book_errors.add();
      start_irec(inst, now);
      if (irec_of_[inst] != kNoRec) hold(inst, v, dl);
      return;
    }
    books_->set_instrument_seq(inst, iseq);
  }
  last_iseq_[inst] = iseq;
  counters_->messages_delivered.add();
  handler_.on_message(m, dl);
}

template <SubscriberHandler H>
void Subscriber<H>::hold(uint32_t inst, wire::MessageView v, const Delivery& dl) noexcept {
  InstrumentRecovery& r = irecs_[irec_of_[inst]];
  if (r.hold_len + kHoldHeader + v.size() > cfg_.instrument_hold_bytes) {
    r.overflow = true;
    return;
  }
  std::byte* p = r.hold.get() + r.hold_len;
  store_le<uint64_t>(p, dl.sequence);
  store_le<uint64_t>(p + 8, dl.send_time_ns);
  std::memcpy(p + kHoldHeader, v.data(), v.size());
  r.hold_len += kHoldHeader + v.size();
}

// ------------------------------------------------------- sessions, heartbeats --

template <SubscriberHandler H>
bool Subscriber<H>::accept_session(uint32_t s, uint64_t) noexcept {
  if (s == session_) return true;
  if (session_ == 0) {
    start_session(s);
    return true;
  }
  // Serial-number comparison: a restarted publisher has a later session id.
  if (static_cast<int32_t>(s - session_) > 0) {
    counters_->session_changes.add();
    start_session(s);
    event(SubscriberEvent::kSessionChanged, {});
    return true;
  }
  return false;
}

template <SubscriberHandler H>
void Subscriber<H>::start_session(uint32_t s) noexcept {
  session_ = s;
  mode_ = Mode::kLive;
  next_seq_ = 1;
  highest_seen_ = 0;
  floor_ = 0;
  gap_open_ = false;
  scan_needed_ = false;
  session_ended_ = false;
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
  handler_.on_reset(s);
}

template <SubscriberHandler H>
void Subscriber<H>::handle_unsequenced(std::span<const std::byte> d, const wire::DatagramHeader& h,
                                       uint64_t now) noexcept {
  counters_->heartbeats.add();  // per datagram: the counters' balance counts datagrams
  wire::MessageCursor cur = wire::MessageCursor::payload_of(d);
  wire::MessageView v;
  while (cur.next(v)) {
    if (v.type() != wire::MsgType::kHeartbeat) continue;
    const wire::HeartbeatView hb(v);
    const uint64_t last = hb.last_seq();
    if (last > highest_seen_) {  // tail loss: the publisher sent more than we saw
      highest_seen_ = last;
      counters_->highest_sequence.set(last);
      note_gap(now);
    }
    if (h.flags & wire::kFlagEndOfSession) {
      if (!session_ended_) event(SubscriberEvent::kSessionEnded, {});
      session_ended_ = true;
    }
    if (!cfg_.verify_checksums || !books_ || mode_ != Mode::kLive) continue;
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
        start_irec(e.instrument, now);
      }
    }
    // The global checksum needs the whole feed, caught up to the heartbeat.
    if (cfg_.all_instruments && next_seq_ == last + 1 && active_irecs() == 0 &&
        hb.instrument_count() == n_inst_) {
      if (books_->global_checksum() == hb.global_checksum()) {
        counters_->checksum_ok.add();
      } else {
        counters_->checksum_mismatch.add();
        enter_snapshot(now);
      }
    }
  }
}

// ---------------------------------------------------------------- control --

template <SubscriberHandler H>
void Subscriber<H>::on_control_connected(uint64_t now) noexcept {
  connected_ = true;
  subscribed_ = false;
  subscribe_refused_ = false;
  send_subscribe(now);
}

template <SubscriberHandler H>
void Subscriber<H>::send_subscribe(uint64_t now) noexcept {
  try {
    wire::Subscribe s;
    s.channel = cfg_.channel;
    s.sender_id = cfg_.sender_id;
    s.credential = cfg_.credential;
    s.instruments.all = cfg_.all_instruments;
    if (!cfg_.all_instruments)
      for (uint32_t i = 0; i < n_inst_; ++i)
        if (filter_[i]) s.instruments.ids.push_back(i);
    subscribe_rid_ = next_rid_++;
    subscribe_deadline_ = now + cfg_.request_timeout_ns;
    send(wire::encode_control(subscribe_rid_, s));
  } catch (...) {
    // Out of memory building a control frame: the deadline retries it.
  }
}

template <SubscriberHandler H>
void Subscriber<H>::send_status(uint64_t now) noexcept {
  last_status_ = now;
  try {
    send(wire::encode_control(0, wire::StatusReport{next_seq_, highest_seen_ >= next_seq_ ? highest_seen_ - next_seq_ + 1 : 0,
                                                    counters_->gaps.get(), cfg_.capacity}));
  } catch (...) {
  }
}

template <SubscriberHandler H>
void Subscriber<H>::send_retransmit(Request& r, uint64_t now) noexcept {
  r.deadline = now + cfg_.request_timeout_ns;
  try {
    send(wire::encode_control(r.rid, wire::RetransmitRequest{session_, r.from, r.count}));
  } catch (...) {
  }
}

template <SubscriberHandler H>
void Subscriber<H>::request_missing(uint64_t now) noexcept {
  scan_needed_ = false;
  if (highest_seen_ + 1 - next_seq_ > cfg_.max_retransmit_span) {
    enter_snapshot(now);
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
    r = {next_rid_++, s, static_cast<uint32_t>(e - s + 1), 0, 0};
    counters_->retransmit_requests.add();
    send_retransmit(r, now);
    s = e + 1;
  }
  // Beyond the window nothing could be stored anyway: those come after the drain.
  if (highest_seen_ > limit) scan_needed_ = true;
}

template <SubscriberHandler H>
void Subscriber<H>::enter_snapshot(uint64_t now) noexcept {
  if (mode_ == Mode::kSnapshot) return;
  mode_ = Mode::kSnapshot;
  counters_->snapshots_requested.add();
  n_reqs_ = 0;
  cancel_irecs();  // the full snapshot covers them
  gap_open_ = false;
  snap_rid_ = next_rid_++;
  snap_sent_ = false;
  snap_cleared_ = false;
  send_snapshot_request(now);
}

template <SubscriberHandler H>
void Subscriber<H>::send_snapshot_request(uint64_t now) noexcept {
  if (!subscribed_) return;  // sent once the subscription is acknowledged
  snap_sent_ = true;
  snap_deadline_ = now + cfg_.request_timeout_ns;
  try {
    wire::SnapshotRequest r;
    r.instruments.all = cfg_.all_instruments;
    if (!cfg_.all_instruments)
      for (uint32_t i = 0; i < n_inst_; ++i)
        if (filter_[i]) r.instruments.ids.push_back(i);
    send(wire::encode_control(snap_rid_, r));
  } catch (...) {
  }
}

template <SubscriberHandler H>
void Subscriber<H>::clear_filtered() noexcept {
  snap_cleared_ = true;
  for (uint32_t i = 0; i < n_inst_; ++i) {
    if (!filter_[i]) continue;
    last_iseq_[i] = 0;
    if (books_) books_->clear(i);
  }
  reasm_.reset();
}

template <SubscriberHandler H>
void Subscriber<H>::apply_snapshot_run(std::span<const std::byte> run, int irec) noexcept {
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

template <SubscriberHandler H>
void Subscriber<H>::finish_snapshot(uint64_t snap_seq, uint64_t now) noexcept {
  if (snap_seq + 1 < next_seq_) {  // older than what we already delivered: ask again
    snap_sent_ = false;
    send_snapshot_request(now);
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
    if (filter_[i]) handler_.on_snapshot(i, books_.get());
  gap_open_ = false;
  drain(now);
  scan_needed_ = true;
}

template <SubscriberHandler H>
void Subscriber<H>::start_irec(uint32_t inst, uint64_t now) noexcept {
  if (irec_of_[inst] != kNoRec || mode_ == Mode::kSnapshot) return;
  for (size_t i = 0; i < irecs_.size(); ++i) {
    InstrumentRecovery& r = irecs_[i];
    if (r.busy) continue;
    r.busy = true;
    r.sent = false;
    r.got_chunk = false;
    r.overflow = false;
    r.inst = inst;
    r.rid = next_rid_++;
    r.retries = 0;
    r.hold_len = 0;
    irec_of_[inst] = static_cast<uint8_t>(i);
    counters_->instrument_recoveries.add();
    send_irec(r, now);
    return;
  }
  enter_snapshot(now);  // no recovery slot free: recover everything
}

template <SubscriberHandler H>
void Subscriber<H>::send_irec(InstrumentRecovery& r, uint64_t now) noexcept {
  if (!subscribed_) return;
  r.sent = true;
  r.deadline = now + cfg_.request_timeout_ns;
  try {
    wire::SnapshotRequest q;
    q.instruments.all = false;
    q.instruments.ids = {r.inst};
    send(wire::encode_control(r.rid, q));
  } catch (...) {
  }
}

template <SubscriberHandler H>
void Subscriber<H>::finish_irec(int idx, uint64_t now) noexcept {
  InstrumentRecovery& r = irecs_[static_cast<size_t>(idx)];
  const uint32_t inst = r.inst;
  if (r.overflow || !r.got_chunk) {  // lost held messages: take a newer snapshot
    r.overflow = false;
    r.got_chunk = false;
    r.hold_len = 0;
    r.rid = next_rid_++;
    send_irec(r, now);
    return;
  }
  irec_of_[inst] = kNoRec;  // r stays busy while replaying, so a new recovery uses another slot
  counters_->instrument_recovered.add();
  handler_.on_snapshot(inst, books_.get());
  const uint32_t snap_iseq = last_iseq_[inst];
  for (size_t off = 0; off < r.hold_len;) {
    const std::byte* p = r.hold.get() + off;
    const wire::MessageView v(p + kHoldHeader, load_le<uint16_t>(p + kHoldHeader));
    off += kHoldHeader + v.size();
    if (v.instrument_seq() <= snap_iseq) continue;
    process(v, Delivery{load_le<uint64_t>(p), load_le<uint64_t>(p + 8), now, true}, now);
  }
  r.busy = false;
  r.hold_len = 0;
}

template <SubscriberHandler H>
void Subscriber<H>::cancel_irecs() noexcept {
  for (auto& r : irecs_) {
    if (r.busy && irec_of_[r.inst] != kNoRec) irec_of_[r.inst] = kNoRec;
    r.busy = false;
    r.hold_len = 0;
  }
}

template <SubscriberHandler H>
void Subscriber<H>::on_control_frame(std::span<const std::byte> frame, uint64_t now) noexcept {
  std::string why;
  auto parsed = wire::parse_control(frame, &why);
  if (!parsed) {
    counters_->control_errors.add();
    last_error_ = "malformed reply from publisher: " + why;
    return;
  }
  const uint32_t rid = parsed->request_id;
  std::visit(
      [&](auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, wire::SubscribeAck>) {
          if (rid != subscribe_rid_) return;
          subscribed_ = true;
          if (!accept_session(b.session, now)) return;
          if (b.session == session_ && b.last_seq > highest_seen_) {
            // Joining late: the publisher is already at last_seq.
            highest_seen_ = b.last_seq;
            counters_->highest_sequence.set(highest_seen_);
            note_gap(now);
          }
          scan_needed_ = true;
          if (mode_ == Mode::kSnapshot && !snap_sent_) send_snapshot_request(now);
          for (auto& r : irecs_)
            if (r.busy && !r.sent) send_irec(r, now);
        } else if constexpr (std::is_same_v<T, wire::RetransmitReply>) {
          uint32_t i = 0;
          while (i < n_reqs_ && reqs_[i].rid != rid) ++i;
          if (i == n_reqs_) return;  // late reply to a request we gave up on
          reqs_[i] = reqs_[--n_reqs_];
          scan_needed_ = true;
          if (b.session != session_) return;
          if (b.status == wire::RetransmitStatus::kTooOld) {
            counters_->retransmit_too_old.add();
            enter_snapshot(now);
            return;
          }
          for (const auto& d : b.datagrams) on_datagram(d, Rail::kRecovery, now);
        } else if constexpr (std::is_same_v<T, wire::SnapshotData>) {
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
        } else if constexpr (std::is_same_v<T, wire::SnapshotDone>) {
          if (b.session != session_) return;
          if (mode_ == Mode::kSnapshot && rid == snap_rid_) {
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
        } else if constexpr (std::is_same_v<T, wire::ErrorReply>) {
          counters_->control_errors.add();
          if (rid == subscribe_rid_) subscribe_refused_ = true;  // retrying cannot help
          try {
            last_error_ = std::string(wire::to_string(b.code)) + ": " + b.text;
          } catch (...) {
          }
          event(SubscriberEvent::kControlError, b.text);
        }
      },
      parsed->body);
}

template <SubscriberHandler H>
void Subscriber<H>::poll(uint64_t now) noexcept {
  if (session_ != 0 && !publisher_silent_ && now - last_rx_ > cfg_.publisher_timeout_ns && last_rx_ != 0) {
    publisher_silent_ = true;
    counters_->publisher_timeouts.add();
    event(SubscriberEvent::kPublisherSilent, {});
  }
  if (connected_ && !subscribed_ && !subscribe_refused_ && now >= subscribe_deadline_) send_subscribe(now);
  if (!subscribed_) return;

  if (mode_ == Mode::kSnapshot) {
    if (!snap_sent_ || now >= snap_deadline_) {
      if (snap_sent_) counters_->retransmit_timeouts.add();
      send_snapshot_request(now);
    }
  }
  for (uint32_t i = 0; i < n_reqs_;) {
    Request& r = reqs_[i];
    if (now < r.deadline) {
      ++i;
      continue;
    }
    counters_->retransmit_timeouts.add();
    if (++r.retries > cfg_.max_retries) {
      enter_snapshot(now);
      break;
    }
    send_retransmit(r, now);
    ++i;
  }
  for (auto& r : irecs_)
    if (r.busy && irec_of_[r.inst] != kNoRec && (!r.sent || now >= r.deadline)) send_irec(r, now);

  if (mode_ == Mode::kLive && scan_needed_ && next_seq_ <= highest_seen_ && now - gap_since_ >= cfg_.reorder_wait_ns)
    request_missing(now);
  if (now - last_status_ >= cfg_.status_interval_ns) send_status(now);
}

template <SubscriberHandler H>
void Subscriber<H>::add_instruments(std::span<const uint32_t> ids, uint64_t now) {
  for (uint32_t i : ids) {
    if (i >= n_inst_ || filter_[i]) continue;
    filter_[i] = 1;
    cfg_.instruments.push_back(i);
    if (session_ != 0) start_irec(i, now);
  }
  if (connected_) send_subscribe(now);
}

template <SubscriberHandler H>
void Subscriber<H>::remove_instruments(std::span<const uint32_t> ids) {
  wire::Unsubscribe u;
  u.instruments.all = false;
  for (uint32_t i : ids) {
    if (i >= n_inst_ || !filter_[i]) continue;
    filter_[i] = 0;
    if (irec_of_[i] != kNoRec) {
      irecs_[irec_of_[i]].busy = false;
      irec_of_[i] = kNoRec;
    }
    last_iseq_[i] = 0;
    if (books_) books_->clear(i);
    u.instruments.ids.push_back(i);
  }
  std::erase_if(cfg_.instruments, [&](uint32_t i) { return !filter_[i]; });
  if (connected_) send(wire::encode_control(next_rid_++, u));
}

}  // namespace mdcast::feed
