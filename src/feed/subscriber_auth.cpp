// SubscriberCore: the client's side of the mutual challenge-response
// (wire/auth.hpp). With a secret configured the subscriber insists: it sends
// its proof only after the publisher proved it knows the same secret, it
// never falls back to an open subscription, and until the publisher has
// proven itself it acts on no other frame from it (a squatter on the control
// address can neither learn a replayable proof nor steer the subscriber).
//
// noexcept like the rest of the control plane: frames are built inside
// try blocks, and running out of memory costs a retried hello.
#include <fmt/format.h>

#include <cstring>
#include <variant>

#include "mdcast/feed/subscriber_core.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::feed {

using Stage = ClientAuth::Stage;

void SubscriberCore::send_hello(uint64_t now) noexcept {
  if (auth_.stage == Stage::kHelloSent)
    set_error("no answer to the authentication hello within the request timeout; asking again", "");
  try {
    auth_.client_nonce = wire::random_nonce();
    auth_.hello_rid = next_rid_++;
    auth_.stage = Stage::kHelloSent;
    subscribe_deadline_ = now + cfg_.request_timeout_ns;
    send(wire::encode_auth(auth_.hello_rid, wire::AuthHello{cfg_.channel, cfg_.secret->identity(), auth_.client_nonce}));
  } catch (...) {
    // Out of memory: the deadline sends the hello again.
  }
}

void SubscriberCore::auth_failed(std::string_view why, uint64_t now) noexcept {
  auth_.stage = Stage::kFailed;
  // This connection cannot get better, but the peer that failed may not be
  // the publisher (a forged announcement's listener, a squatter): the medium
  // leaves it (control_peer_failed) and a new connection starts over. Only
  // a failure that lasts subscriber.wait is a refusal (peer_unproven_since).
  if (!peer_unproven_since_) peer_unproven_since_ = now;
  peer_failed_ = true;
  counters_->auth_failures.add();
  try {
    set_error(fmt::format("publisher could not prove it knows the secret for identity '{}': {}",
                          cfg_.secret->identity(), why),
              "");
  } catch (...) {
    set_error("publisher could not prove it knows the secret", "");
  }
  notify_event(SubscriberEvent::kControlError, last_error_);
}

bool SubscriberCore::on_auth_frame(std::span<const std::byte> frame, uint64_t now) noexcept {
  const bool is_auth = wire::is_auth_frame(frame);
  if (!is_auth && !auth_pending()) return false;  // proven: the normal dispatch takes it
  if (auth_.stage == Stage::kFailed) {
    counters_->unauthenticated_frames.add();
    return true;
  }
  std::string why;
  if (!is_auth) {
    // Before the publisher proved itself only an answer to the hello counts:
    // it explains why there will be no challenge (an open feed, another channel).
    const auto parsed = wire::parse_control(frame, &why);
    const auto* err = parsed ? std::get_if<wire::ErrorReply>(&parsed->body) : nullptr;
    if (err && auth_.stage == Stage::kHelloSent && parsed->request_id == auth_.hello_rid) {
      counters_->control_errors.add();
      try {
        auth_failed(fmt::format("it answered the hello with {}: {}", wire::to_string(err->code), err->text), now);
      } catch (...) {
        auth_failed("it answered the hello with an error", now);
      }
      return true;
    }
    counters_->unauthenticated_frames.add();
    return true;
  }
  const auto parsed = wire::parse_auth(frame, &why);
  if (auth_.stage == Stage::kProven && parsed && std::holds_alternative<wire::AuthDataKey>(parsed->body)) {
    on_data_key(*parsed, now);
    return true;
  }
  if (auth_.stage != Stage::kHelloSent) {
    // A challenge nobody asked for (or a second one): nothing in it is trusted.
    counters_->unauthenticated_frames.add();
    return true;
  }
  if (!parsed) {
    auth_failed("its challenge is malformed (" + why + ")", now);
    return true;
  }
  const auto* ch = std::get_if<wire::AuthChallenge>(&parsed->body);
  if (!ch) {
    auth_failed("it sent a client's authentication frame instead of a challenge", now);
    return true;
  }
  if (parsed->request_id != auth_.hello_rid) {
    counters_->unauthenticated_frames.add();  // the answer to an earlier hello of this connection
    return true;
  }
  const ClientSecret& me = *cfg_.secret;
  const auto expect = wire::server_proof(me.key().view(), cfg_.channel, me.identity(), auth_.client_nonce, ch->server_nonce);
  if (!wire::proof_equal(expect, ch->server_proof)) {
    auth_failed("its challenge carries a wrong proof: the publisher holds another secret for this identity or "
                "does not know it, or something other than the publisher answers at this control address", now);
    return true;
  }
  // The publisher is proven; only now does our proof leave, bound to its fresh nonce.
  auth_.server_nonce = ch->server_nonce;
  try {
    auth_.proof_rid = next_rid_++;
    auth_.stage = Stage::kProven;
    send(wire::encode_auth(auth_.proof_rid, wire::AuthProof{wire::client_proof(
                                                me.key().view(), cfg_.channel, me.identity(), ch->server_nonce,
                                                auth_.client_nonce)}));
  } catch (...) {
    // Out of memory: start over at the next deadline with a fresh hello.
    auth_.stage = Stage::kIdle;
    return true;
  }
  send_subscribe(now);
  return true;
}

void SubscriberCore::on_data_key(const wire::AuthFrame& f, uint64_t now) noexcept {
  const auto& k = std::get<wire::AuthDataKey>(f.body);
  if (f.request_id != auth_.proof_rid) {
    counters_->unauthenticated_frames.add();
    return;
  }
  const ClientSecret& me = *cfg_.secret;
  const auto key = wire::unwrap_data_key(me.key().view(), cfg_.channel, me.identity(), auth_.server_nonce,
                                         auth_.client_nonce, k);
  if (!key) {
    auth_failed("the data key it sent does not check (altered on the way, or made for another connection)", now);
    return;
  }
  data_key_ = *key;
  data_key_session_ = k.session;
  have_data_key_ = true;
  key_this_connection_ = true;
  // What waited for it, in arrival order; any still not of this session is counted then.
  const size_t n = n_awaiting_;
  n_awaiting_ = 0;
  for (size_t i = 0; i < n; ++i)
    receive_awaited({awaiting_.get() + i * cfg_.max_datagram, awaiting_meta_[i].len}, awaiting_meta_[i].rail, now);
}

void SubscriberCore::await_key(std::span<const std::byte> d, Rail rail) noexcept {
  if (n_awaiting_ == kAwaitingKey || !awaiting_ || d.size() > cfg_.max_datagram) {
    counters_->unverifiable.add();  // a gap the normal recovery fills once the key is here
    return;
  }
  std::memcpy(awaiting_.get() + n_awaiting_ * cfg_.max_datagram, d.data(), d.size());
  awaiting_meta_[n_awaiting_++] = {static_cast<uint16_t>(d.size()), rail};
}

bool SubscriberCore::authentic(std::span<const std::byte> d, const wire::DatagramHeader& h, Rail rail,
                               uint64_t) noexcept {
  if (!(h.flags & wire::kFlagTag)) {
    counters_->untagged.add();
    return false;
  }
  if (!have_data_key_ || h.session != data_key_session_) {
    // Retransmits come over the control plane, after its key: never waiting.
    if (rail == Rail::kRecovery || key_this_connection_)
      counters_->unverifiable.add();
    else
      await_key(d, rail);
    return false;
  }
  if (!wire::tag_ok(d, data_key_)) {
    counters_->bad_tags.add();
    return false;
  }
  return true;
}

bool SubscriberCore::auth_refused(uint32_t rid, const wire::ErrorReply& b) noexcept {
  if (auth_.proof_rid == 0 || rid != auth_.proof_rid) return false;
  counters_->control_errors.add();
  auth_.stage = Stage::kFailed;
  subscribe_refused_ = true;
  counters_->auth_failures.add();
  try {
    set_error(fmt::format("publisher refused the proof for identity '{}' ({}: {})", cfg_.secret->identity(),
                          wire::to_string(b.code), b.text),
              "");
  } catch (...) {
    set_error("publisher refused the proof: ", b.text);
  }
  notify_event(SubscriberEvent::kControlError, b.text);
  return true;
}

}  // namespace mdcast::feed
