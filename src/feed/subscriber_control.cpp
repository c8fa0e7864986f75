// SubscriberCore: the control plane. The subscription and its retries,
// replies from the publisher, status reports, timers, filter changes.
//
// Everything here is noexcept. The requests poll() sends are encoded into
// the frame buffer, without allocating; the subscription, the replies'
// parsing and the channel's own queueing may allocate: each is guarded, so
// that running out of memory costs a counted, dropped frame (its request
// times out and is asked again), never std::terminate.
#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <variant>

#include "mdcast/feed/subscriber_core.hpp"

namespace mdcast::feed {

void SubscriberCore::on_control_connected(uint64_t now) noexcept {
  connected_ = true;
  subscribed_ = false;
  subscribe_refused_ = false;
  peer_failed_ = false;
  forget_query();
  confirm_limit_ = UINT64_MAX;  // nothing confirms until the subscription is acknowledged: the data decides
  auth_ = {};  // a new connection proves both sides again
  key_this_connection_ = false;  // the last key still checks data until the new one arrives
  mark_unsent();  // also when no disconnect was reported: a new connection is a new conversation
  send_subscribe(now);
}

void SubscriberCore::on_control_disconnected() noexcept {
  connected_ = false;
  subscribed_ = false;
  forget_query();
  // A control plane gone (a cut path, a publisher restarting) must not hold
  // the data it cannot confirm, any more than one that does not answer.
  confirm_limit_ = UINT64_MAX;
  mark_unsent();
}

void SubscriberCore::on_control_frame(std::span<const std::byte> frame, uint64_t now) noexcept {
  if (cfg_.secret && on_auth_frame(frame, now)) return;
  std::string why;
  // parse_control is noexcept: out of memory there comes back as a malformed
  // frame, and is counted the same way below.
  auto parsed = wire::parse_control(frame, &why);
  if (!parsed) {
    counters_->control_errors.add();
    set_error("malformed reply from publisher: ", why);
    return;
  }
  const uint32_t rid = parsed->request_id;
  std::visit(
      [&](auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, wire::SubscribeAck>) {
          on_subscribe_ack(rid, b, now);
        } else if constexpr (std::is_same_v<T, wire::RetransmitReply>) {
          retransmit_answered(rid, b.session, b.status, b.datagrams, now);
        } else if constexpr (std::is_same_v<T, wire::SnapshotData>) {
          on_snapshot_data(rid, b);
        } else if constexpr (std::is_same_v<T, wire::SnapshotDone>) {
          on_snapshot_done(rid, b, now);
        } else if constexpr (std::is_same_v<T, wire::SessionStatus>) {
          on_session_status(rid, b, now);
        } else if constexpr (std::is_same_v<T, wire::ErrorReply>) {
          if (cfg_.secret && auth_refused(rid, b)) return;
          on_error_reply(rid, b);
        }
        // Requests (a publisher never sends them) are ignored.
      },
      parsed->body);
}

void SubscriberCore::on_subscribe_ack(uint32_t rid, const wire::SubscribeAck& b, uint64_t now) noexcept {
  if (rid != subscribe_rid_ || rid == subscribe_acked_rid_) return;
  subscribe_acked_rid_ = rid;
  if (tags_required_ && (!key_this_connection_ || data_key_session_ != b.session)) {
    // Nothing this publisher sends could be checked: say so rather than drop it all.
    subscribe_refused_ = true;
    counters_->control_errors.add();
    set_error(fmt::format("the publisher of session {:016x} sent no data key for it after the proof, so its "
                          "datagrams cannot be authenticated: run it with secrets and data authentication on, or set "
                          "subscriber.authenticate_data = false on a medium no one else can send to",
                          b.session),
              "");
    notify_event(SubscriberEvent::kControlError, last_error_);
    return;
  }
  subscribed_ = true;
  publisher_features_ = b.features;
  peer_unproven_since_ = 0;
  // The control plane's word on the session: adopt, confirm, or replace what
  // the data suggested.
  session_confirmed_by(b.session, b.last_seq, now);
  resend_unsent(now);
  if (noted_.kinds) send_query(now);
}

void SubscriberCore::on_error_reply(uint32_t rid, const wire::ErrorReply& b) noexcept {
  counters_->control_errors.add();
  // Retrying cannot help: the Subscribe was refused, or the connection was,
  // for room (every slot, or this peer's share, taken) before it was read.
  if (rid == subscribe_rid_ || (rid == 0 && b.code == wire::ErrorCode::kOverloaded && !subscribed_))
    subscribe_refused_ = true;
  set_error(wire::to_string(b.code), ": ", b.text);
  notify_event(SubscriberEvent::kControlError, b.text);
}

void SubscriberCore::set_error(std::string_view a, std::string_view b, std::string_view c) noexcept {
  try {
    std::string e;
    e.reserve(a.size() + b.size() + c.size());
    e.append(a).append(b).append(c);
    last_error_.swap(e);
  } catch (...) {
    // Out of memory: the previous text stays; the error is counted anyway.
  }
}

void SubscriberCore::poll(uint64_t now) noexcept {
  // last_rx_ is the medium's receive stamp, which may be later than a duty
  // loop's `now` (read every few rounds): that is no silence, not a wrap.
  if (session_ != 0 && !publisher_silent_ && last_rx_ != 0 && now > last_rx_ &&
      now - last_rx_ > cfg_.publisher_timeout_ns) {
    publisher_silent_ = true;
    counters_->publisher_timeouts.add();
    notify_event(SubscriberEvent::kPublisherSilent, {});
  }
  watch_rails(now);
  if (gap_rec_.ordinal) poll_loss(now);
  if (connected_ && !subscribed_ && !subscribe_refused_ && now >= subscribe_deadline_) send_subscribe(now, true);
  if (!subscribed_) return;
  poll_requests(now);
  poll_query(now);
  // A confirmation each half window keeps a real feed from ever reaching
  // confirm_limit_ (the answer takes a round trip; half a window of data
  // is what it may take).
  if (confirm_limit_ != UINT64_MAX && !query_sent_ && highest_seen_ >= confirmed_last_ + n_slots_ / 2) {
    counters_->confirmations.add();
    send_query(now);
  }
  // A control plane that does not answer (its path cut, the publisher's
  // thread busy) must not stop the data it cannot confirm: the data
  // decides, as without a control plane, until an answer sets the limit
  // again and shows whether a run was forged meanwhile.
  if (confirm_limit_ != UINT64_MAX && query_sent_ && now - query_since_ >= cfg_.request_timeout_ns) {
    confirm_limit_ = UINT64_MAX;
    counters_->confirmations_unanswered.add();
  }
  if (now - last_status_ >= cfg_.status_interval_ns) send_status(now);
}

void SubscriberCore::send_subscribe(uint64_t now, bool again) noexcept {
  if (auth_pending()) {
    // The subscription waits for the handshake; a hello unanswered by its
    // deadline is sent again (with a fresh nonce).
    const bool due = auth_.stage == ClientAuth::Stage::kIdle ||
                     (auth_.stage == ClientAuth::Stage::kHelloSent && now >= subscribe_deadline_);
    if (due) send_hello(now);
    return;
  }
  try {
    wire::Subscribe s;
    s.channel = cfg_.channel;
    s.sender_id = cfg_.sender_id;
    s.instruments.all = cfg_.all_instruments;
    if (!cfg_.all_instruments)
      for (uint32_t i = 0; i < n_inst_; ++i)
        if (filter_[i]) s.instruments.ids.push_back(i);
    again = again && subscribe_rid_ != 0 && subscribe_rid_ != subscribe_acked_rid_;
    subscribe_tries_ = again ? subscribe_tries_ + 1 : 0;
    if (!again) subscribe_rid_ = next_rid_++;
    subscribe_deadline_ = now + (cfg_.request_timeout_ns << std::min<uint32_t>(subscribe_tries_, 3));
    send(wire::encode_control(subscribe_rid_, s));
  } catch (...) {
    // Out of memory building a control frame: the deadline retries it.
  }
}

void SubscriberCore::send_status(uint64_t now) noexcept {
  last_status_ = now;
  const wire::StatusReport r{next_seq_, highest_seen_ >= next_seq_ ? highest_seen_ - next_seq_ + 1 : 0,
                             counters_->gaps.get(), cfg_.capacity};
  send_encoded(wire::encode_control(0, r, frame_buffer()));
  if (subscribed_ && (publisher_features_ & wire::SubscribeAck::kAcceptsLatency) && latency_.count != 0)
    send_encoded(wire::encode_control(0, latency_, frame_buffer()));
}

void SubscriberCore::send(std::span<const std::byte> f) noexcept {
  if (!ctl_) return;
  try {
    (void)ctl_->send(f);
  } catch (...) {
    // The channel could not queue it (out of memory): as if refused, the
    // request's deadline asks again (a status report waits for the next).
  }
}

void SubscriberCore::add_instruments(std::span<const uint32_t> ids, uint64_t now) {
  for (uint32_t i : ids) {
    if (i >= n_inst_ || filter_[i]) continue;
    filter_[i] = 1;
    cfg_.instruments.push_back(i);
    if (session_ != 0) start_irec(i);
  }
  if (connected_) send_subscribe(now);
}

void SubscriberCore::remove_instruments(std::span<const uint32_t> ids) {
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
