// SubscriberCore: what the control plane confirms.
//
// Anyone who can send to the group can send a datagram, so a datagram never
// decides alone what would cost every subscriber dearly: adopting another
// session (books wiped, the real feed dropped as stale), ending the session
// (an "ok" exit before the feed was delivered), or a sequence far beyond the
// window (a full snapshot per forgery). Such a datagram is dropped and
// counted as a claim; the subscriber asks the publisher (SessionQuery, one in
// flight, sent by the next poll and retried after the request timeout) and
// acts on its answer (SessionStatus). Claims the answer refutes are counted as forged. What the
// control plane says comes from a connection the subscriber authenticated,
// so it is what the subscriber trusts.
//
// Without a control channel there is nothing to ask: data decides, as it must.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

bool SubscriberCore::other_session(uint64_t s) noexcept {
  if (!ctl_) {
    // Nothing can confirm anything: follow the data.
    if (session_ != 0) {
      counters_->session_changes.add();
      previous_session_ = session_;
    }
    start_session(s);
    if (previous_session_ != 0) notify_event(SubscriberEvent::kSessionChanged, {});
    return true;
  }
  if (s == previous_session_ && previous_session_ != 0) {
    counters_->stale_session.add();  // late datagrams of the session we left
    return false;
  }
  claimed_session_ = s;
  counters_->claims_held.add();
  ++noted_.held_session;
  claim(kClaimSession);
  return false;
}

bool SubscriberCore::plausible_ahead(uint64_t seq, bool sequenced) noexcept {
  // Within a window's reach of what the publisher confirmed (and pair_lag:
  // the other member of a pair may be ahead of the one asked) is plausible:
  // a subscriber that fell behind by more than its window gets the
  // datagrams that move it to a snapshot, as it would without confirmations.
  // Called for sequences beyond the window of what was delivered, and with
  // cfg_.confirm_ahead also for any beyond that reach of the confirmed
  // position (confirm_limit_), however gapless: a forged run is held there.
  if (!ctl_ || seq < confirmed_last_ + n_slots_ + cfg_.pair_lag) return true;
  if (sequenced) counters_->claims_held.add();  // a heartbeat is counted as one already
  ++noted_.held_ahead;
  noted_.ahead = std::max(noted_.ahead, seq);
  claim(kClaimAhead);
  return false;
}

// Only noted: claims come from datagrams, and the query goes out from
// poll_query (a query already in flight answers this claim too).
void SubscriberCore::claim(Claim c) noexcept { noted_.kinds |= c; }

// The question in flight is lost with its connection: what it asked is asked
// again, on the next one.
void SubscriberCore::forget_query() noexcept {
  query_sent_ = false;
  noted_.merge(asked_);
  asked_ = {};
}

void SubscriberCore::send_query(uint64_t now) noexcept {
  // The subscription's acknowledgement answers too; a query waits for it.
  if (!subscribed_ || !ctl_) return;
  if (!query_sent_) {
    query_since_ = now;
    query_delivered_ = next_seq_ - 1;
    query_highest_ = highest_seen_;
    query_rid_ = next_rid_++;
    query_tries_ = 0;
    asked_ = noted_;
    noted_ = {};
  } else {
    ++query_tries_;  // the same question again (see query_rid_)
  }
  query_sent_ = true;
  query_deadline_ = now + (cfg_.request_timeout_ns << std::min<uint32_t>(query_tries_, 3));
  counters_->session_queries.add();
  send_encoded(wire::encode_control(query_rid_, wire::SessionQuery{}, frame_buffer()));
}

void SubscriberCore::poll_query(uint64_t now) noexcept {
  // A confirmation alone is not asked again: confirm_limit_ is lifted when
  // it goes unanswered (poll), and the next half window asks afresh.
  if (query_sent_ ? (asked_.kinds | noted_.kinds) != 0 && now >= query_deadline_ : noted_.kinds != 0)
    send_query(now);
}

void SubscriberCore::on_session_status(uint32_t rid, const wire::SessionStatus& b, uint64_t now) noexcept {
  if (rid != query_rid_ || !query_sent_) return;  // late answer to a query already settled
  query_sent_ = false;
  const Claims asked = std::exchange(asked_, {});
  const uint8_t claims = asked.kinds;
  const uint64_t ahead = asked.ahead;
  uint64_t refuted = 0;
  if (b.session != session_ || !session_confirmed_) {
    // The publisher runs another session than ours: whatever was claimed
    // about the old one is moot. The new one is recovered from its start.
    session_confirmed_by(b.session, b.last_seq, now);
    counters_->claims_confirmed.add();
    if (b.ended) end_confirmed(b.end_seq, now);
  } else {
    confirm_last(b.last_seq);
    // Delivered before we asked, so sent before the publisher answered,
    // yet beyond what it had sent then (and beyond the other member of a
    // pair): it never came from the publisher.
    if (cfg_.confirm_ahead && query_delivered_ > b.last_seq + cfg_.pair_lag) forged_run(b.last_seq);
    refuted += asked.held_session;  // the publisher is still in ours
    if (claims & kClaimAhead) {
      if (ahead <= b.last_seq) {
        counters_->claims_confirmed.add();  // real datagrams, lost here: recovered like any gap
        if (b.last_seq > highest_seen_) {
          highest_seen_ = b.last_seq;
          counters_->highest_sequence.set(highest_seen_);
          note_gap(now);
          scan_needed_ = true;
        }
      } else if (ahead < b.last_seq + n_slots_) {
        // Within a window of what the publisher had then: data that overtook
        // the answer (a control connection slower than the data, a TCP
        // retransmission). Not refuted; the datagrams were dropped, and are
        // recovered as the gap they left once later data shows it.
        counters_->claims_overtaken.add();
      } else {
        refuted += asked.held_ahead;
      }
    }
    if (claims & kClaimNotYet) {
      // Within pair_lag of a member's tail is the other member's data, not a
      // forgery: dropped all the same (the member asked will send it), but
      // counted as what it is.
      clamp_to(b.last_seq, !(cfg_.pair_lag && highest_seen_ <= b.last_seq + cfg_.pair_lag));
      scan_needed_ = true;  // what is really missing is asked for again
    }
    if (b.ended) {
      if (claims & kClaimEnd) counters_->claims_confirmed.add();
      end_confirmed(b.end_seq, now);
    } else {
      refuted += asked.held_end;
    }
  }
  if (refuted) counters_->forged_datagrams.add(refuted);
}

void SubscriberCore::session_confirmed_by(uint64_t session, uint64_t last_seq, uint64_t now) noexcept {
  if (session != session_) {
    const bool had = session_ != 0;
    if (had) {
      counters_->session_changes.add();
      previous_session_ = session_;
    }
    start_session(session);
    if (had) notify_event(SubscriberEvent::kSessionChanged, {});
  } else if (session_confirmed_ && last_seq + 1 + cfg_.pair_lag < next_seq_) {
    // The publisher is behind what we delivered in "its" session: the id was
    // reused by a new run (a fixed id in a configuration). Its data is not
    // ours to skip: start over. (Within pair_lag it is the other member of a
    // publisher pair, which will send the same datagrams: nothing to do.)
    counters_->session_changes.add();
    start_session(session);
    notify_event(SubscriberEvent::kSessionChanged, {});
  }
  session_confirmed_ = true;
  const bool held = mode_ == Mode::kUnconfirmed;
  if (held) mode_ = Mode::kLive;  // what waited in the window is the publisher's: deliver it
  confirm_last(last_seq);
  if (last_seq > highest_seen_) {
    // Joining late, or data lost before we heard any: the publisher is at last_seq.
    highest_seen_ = last_seq;
    counters_->highest_sequence.set(highest_seen_);
    note_gap(now);
  }
  if (held) {
    drain(now);
    note_gap(now);
  }
  scan_needed_ = true;
}

void SubscriberCore::end_confirmed(uint64_t end_seq, uint64_t now) noexcept {
  const bool first = !session_ended_;
  session_ended_ = true;
  end_seq_ = end_seq;
  if (end_seq > highest_seen_) {  // the tail we have not seen is recovered before "finished"
    highest_seen_ = end_seq;
    counters_->highest_sequence.set(highest_seen_);
    note_gap(now);
    scan_needed_ = true;
  }
  if (first) notify_event(SubscriberEvent::kSessionEnded, {});
}

// The publisher said "not yet" to a range we believed it had sent: our idea
// of its tail came from a datagram or heartbeat that lied (or ran ahead of the
// control plane). The publisher's word bounds what we wait for; anything
// buffered beyond it is dropped and, if real, asked for again later.
void SubscriberCore::clamp_to(uint64_t last_seq, bool forged) noexcept {
  // Only what was seen when the question went out: datagrams that came
  // while the answer was on its way were sent after it was written.
  const uint64_t judged = std::min(highest_seen_, query_highest_);
  if (judged <= last_seq) return;
  uint64_t dropped = 0;
  uint64_t high = std::max(last_seq, next_seq_ - 1);
  for (size_t i = 0; i < n_slots_; ++i) {
    Meta& m = meta_[i];
    if (m.seq == 0) continue;
    if (m.seq > last_seq && m.seq <= judged) {
      m.seq = 0;
      counters_->window_discards.add();
      ++dropped;
    } else {
      high = std::max(high, m.seq);
    }
  }
  highest_seen_ = high;
  counters_->highest_sequence.set(highest_seen_);
  if (forged) counters_->forged_datagrams.add(dropped ? dropped : 1);
  else counters_->pair_ahead_dropped.add(dropped);
  if (next_seq_ > highest_seen_) gap_open_ = false;
  scan_needed_ = true;
}

// A forger's gapless run: each of its datagrams was next in order when it
// came, so it was delivered, and the publisher's own were dropped as
// duplicates. The subscriber goes back to where the publisher is: what the
// window holds past it is dropped, the publisher's datagrams from there on
// are taken again (those already dropped come back as a gap, by
// retransmit), and whatever the run did to the books shows in the next
// heartbeat's checksums, which repair them. A run cannot be undone for the
// application, which has seen it: authenticated data (a feed with
// secrets) is what keeps it out.
void SubscriberCore::forged_run(uint64_t last_seq) noexcept {
  const uint64_t run = next_seq_ - 1 - last_seq;
  counters_->forged_runs.add();
  counters_->forged_datagrams.add(run);
  if (mode_ == Mode::kLive) {
    for (size_t i = 0; i < n_slots_; ++i) {
      Meta& m = meta_[i];
      if (m.seq > last_seq) {
        m.seq = 0;
        counters_->window_discards.add();
      }
    }
    next_seq_ = last_seq + 1;
    highest_seen_ = last_seq;
    counters_->highest_sequence.set(highest_seen_);
    gap_open_ = false;
    reasm_.reset();  // a fragment of the run may have begun a message
    scan_needed_ = true;
  }
  char detail[32];
  const auto n = fmt::format_to_n(detail, sizeof detail, "{} datagrams", run).size;
  notify_event(SubscriberEvent::kForgedRun, {detail, std::min(n, sizeof detail)});
}

}  // namespace mdcast::feed
