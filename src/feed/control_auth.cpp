// ControlService: the publisher's side of the mutual challenge-response
// (wire/auth.hpp). Until a client has proven itself, nothing but the
// handshake is served. Unknown identities are answered exactly like known
// ones (a challenge from a random per-process key), so the publisher never
// tells which identities exist; they fail at the proof like a wrong secret.
//
// A refused proof is answered only after a delay that doubles with every
// failure and decays when failures stop. The delay is kept for the whole
// publisher, not per identity: per-identity state would have to exist for
// any name a client invents (memory an attacker chooses, or an eviction
// policy it can game) and would treat known and unknown identities
// differently, which is what the dummy key hides. One shared delay bounds the
// guessing rate of all attackers together, costs one counter, and never
// delays a client that proves itself: only failures wait.
#include <fmt/format.h>

#include <algorithm>

#include "mdcast/feed/control_service.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::feed {

using namespace wire;
using Stage = ServerAuth::Stage;

namespace {
constexpr uint8_t kMaxHellos = 4;
uint32_t rid_of(std::span<const std::byte> f) noexcept {
  return f.size() >= ctl::kHeaderSize ? load_le<uint32_t>(f.data() + ctl::kRequestId) : 0;
}
}  // namespace

std::optional<bool> ControlService::gate(ClientId c, Client& cl, std::span<const std::byte> frame, uint64_t now,
                                         ReplySink& out) {
  ServerAuth& a = cl.auth;
  if (a.stage == Stage::kParked) {
    if (now < a.until) {
      counters_->auth_parked_frames.add();
      return true;
    }
    send_refusal(c, cl);
    return false;
  }
  if (a.stage == Stage::kRefused) return false;
  if (is_auth_frame(frame)) return handle_auth(c, cl, frame, now, out);
  if (cfg_.secrets && a.stage != Stage::kOk) {
    counters_->auth_required.add();
    return reject(c, cl, rid_of(frame), ErrorCode::kBadCredential,
                  "this publisher serves authenticated clients only (AuthHello first): configure the subscriber "
                  "with subscriber.identity and subscriber.secret_file",
                  out);
  }
  return std::nullopt;
}

bool ControlService::handle_auth(ClientId c, Client& cl, std::span<const std::byte> frame, uint64_t now,
                                 ReplySink& out) {
  ServerAuth& a = cl.auth;
  std::string why;
  auto parsed = parse_auth(frame, &why);
  if (!parsed) {
    counters_->malformed_frames.add();
    counters_->auth_protocol_errors.add();
    return reject(c, cl, rid_of(frame), ErrorCode::kMalformed, "malformed authentication frame: " + why, out);
  }
  const uint32_t rid = parsed->request_id;
  auto protocol_error = [&](ErrorCode code, std::string text) {
    counters_->auth_protocol_errors.add();
    return reject(c, cl, rid, code, std::move(text), out);
  };
  if (!cfg_.secrets)
    return protocol_error(ErrorCode::kUnsupported,
                          "this publisher serves an open feed (it has no secrets file) and cannot prove any "
                          "identity: give it publisher.secrets, or drop the subscriber's secret");
  const uint16_t channel = core_.config().channel;

  if (const auto* h = std::get_if<AuthHello>(&parsed->body)) {
    if (a.stage == Stage::kOk)
      return protocol_error(ErrorCode::kUnsupported, fmt::format("already authenticated as '{}'", a.identity));
    if (++a.hellos > kMaxHellos)
      return protocol_error(ErrorCode::kOverloaded,
                            fmt::format("more than {} hellos on one connection: reconnect", kMaxHellos));
    if (h->channel != channel)
      return protocol_error(ErrorCode::kUnknownChannel,
                            fmt::format("channel {} is not published here (this publisher serves channel {})",
                                        h->channel, channel));
    a.entry = cfg_.secrets->find(h->identity);
    if (!a.entry) counters_->auth_unknown_identity.add();
    a.identity = h->identity;
    a.client_nonce = h->client_nonce;
    a.server_nonce = random_nonce();
    const AuthKey key = a.entry ? a.entry->key.view() : dummy_key_.view();
    a.stage = Stage::kChallenged;
    out.send(c, encode_auth(rid, AuthChallenge{a.server_nonce,
                                               server_proof(key, channel, a.identity, a.client_nonce, a.server_nonce)}));
    return true;
  }
  if (const auto* p = std::get_if<AuthProof>(&parsed->body)) {
    if (a.stage != Stage::kChallenged)
      return protocol_error(ErrorCode::kMalformed,
                            a.stage == Stage::kOk ? "auth-proof after authentication" : "auth-proof without a challenge");
    const AuthKey key = a.entry ? a.entry->key.view() : dummy_key_.view();
    // Compared whatever the identity, so known and unknown ones take the same path.
    const bool match = proof_equal(client_proof(key, channel, a.identity, a.server_nonce, a.client_nonce),
                                   p->client_proof);
    if (match && a.entry) {
      a.stage = Stage::kOk;
      counters_->auth_ok.add();
      if (core_.tagged())
        out.send(c, encode_auth(rid, wrap_data_key(key, channel, a.identity, a.server_nonce, a.client_nonce,
                                                   core_.session(), core_.data_key())));
      return true;
    }
    a.entry = nullptr;
    a.stage = Stage::kParked;
    a.until = now + backoff_.on_failure(now);
    next_refusal_ = std::min(next_refusal_, a.until);
    a.rid = rid;
    a.sink = &out;
    counters_->auth_failed.add();
    counters_->auth_delay_ns.set(a.until - now);
    return true;
  }
  return protocol_error(ErrorCode::kUnsupported, "a publisher does not accept auth-challenge frames");
}

void ControlService::send_refusal(ClientId c, Client& cl) {
  ServerAuth& a = cl.auth;
  a.stage = Stage::kRefused;
  counters_->auth_delayed.add();
  counters_->requests_rejected.add();
  if (!a.sink) return;
  // The same words for a wrong secret and an unknown identity.
  a.sink->send(c, encode_control(a.rid, ErrorReply{ErrorCode::kBadCredential,
                                                   fmt::format("authentication failed for identity '{}': the proof "
                                                               "does not match (a wrong secret, or an identity this "
                                                               "publisher does not know): check subscriber.secret_file "
                                                               "against the publisher's secrets file",
                                                               a.identity)}));
}

void ControlService::tick_auth(uint64_t now) {
  if (!cfg_.secrets) return;
  counters_->auth_delay_ns.set(backoff_.current(now));
  if (now < next_refusal_) return;
  uint64_t next = UINT64_MAX;
  for (auto& [id, cl] : clients_) {
    if (cl.auth.stage != Stage::kParked) continue;
    if (now >= cl.auth.until) send_refusal(id, cl);
    else next = std::min(next, cl.auth.until);
  }
  next_refusal_ = next;
}

}  // namespace mdcast::feed
