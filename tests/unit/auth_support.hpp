// Helpers for tests of the authenticated control plane: fixed secrets, a
// reply sink that keeps frames per client, and a client driven by hand (it
// can do everything a real one does, and what a hostile one would: prove
// without checking the publisher, replay, send out of order).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/wire/auth.hpp"
#include "support.hpp"

namespace mdcast::test {

// 64 hex digits, distinct per seed, never all zero.
inline std::string test_secret_hex(uint8_t seed) {
  std::string s;
  for (int i = 0; i < 32; ++i) {
    const auto b = static_cast<uint8_t>(seed * 37 + i * 11 + 1);
    s += "0123456789abcdef"[b >> 4];
    s += "0123456789abcdef"[b & 15];
  }
  return s;
}

inline feed::SecretKey test_key(uint8_t seed) { return *feed::SecretKey::from_hex(test_secret_hex(seed)); }

// "gold" (seed 1) entitled to all, "silver" (seed 2) to 1 and 3.
inline std::shared_ptr<const feed::PublisherSecrets> test_secrets() {
  const std::string text = "# test\ngold " + test_secret_hex(1) + " all\nsilver " + test_secret_hex(2) + " 1,3\n";
  return std::make_shared<const feed::PublisherSecrets>(feed::PublisherSecrets::parse(text, "test.secrets"));
}

struct Replies : media::ReplySink {
  std::vector<std::pair<media::ClientId, Bytes>> frames;
  void send(media::ClientId c, std::vector<std::byte> f) override { frames.emplace_back(c, std::move(f)); }
  std::vector<Bytes> to(media::ClientId c) const {
    std::vector<Bytes> v;
    for (const auto& [id, f] : frames)
      if (id == c) v.push_back(f);
    return v;
  }
  void forget(media::ClientId c) {
    std::erase_if(frames, [c](const auto& p) { return p.first == c; });
  }
};

inline std::optional<wire::ErrorReply> as_error(const Bytes& f) {
  auto p = wire::parse_control(f, nullptr);
  if (!p || !std::holds_alternative<wire::ErrorReply>(p->body)) return std::nullopt;
  return std::get<wire::ErrorReply>(p->body);
}

// One client's handshake, by hand.
struct HandClient {
  media::ClientId id = 1;
  std::string identity = "gold";
  uint8_t key_seed = 1;
  uint16_t channel = 4;
  wire::AuthNonce client_nonce = wire::random_nonce();
  std::optional<wire::AuthChallenge> challenge;
  uint32_t challenge_rid = 0;

  // Sends the hello; true when the service answered with a challenge. Sink:
  // any ReplySink with a `frames` vector of (client, bytes).
  template <class Sink>
  bool hello(feed::ControlService& svc, Sink& out, uint64_t now, uint32_t rid = 1) {
    const size_t before = out.frames.size();
    EXPECT_TRUE(svc.on_frame(id, wire::encode_auth(rid, wire::AuthHello{channel, identity, client_nonce}), now, out));
    challenge.reset();
    for (size_t i = before; i < out.frames.size(); ++i) {
      if (out.frames[i].first != id) continue;
      auto p = wire::parse_auth(out.frames[i].second, nullptr);
      if (p && std::holds_alternative<wire::AuthChallenge>(p->body)) {
        challenge = std::get<wire::AuthChallenge>(p->body);
        challenge_rid = p->request_id;
      }
    }
    return challenge.has_value();
  }
  // Whether the challenge proves the service knows this client's secret.
  [[nodiscard]] bool publisher_proven() const {
    if (!challenge) return false;
    const auto k = test_key(key_seed);
    return wire::proof_equal(wire::server_proof(k.view(), channel, identity, client_nonce, challenge->server_nonce),
                             challenge->server_proof);
  }
  [[nodiscard]] wire::AuthMac proof() const {
    const auto k = test_key(key_seed);
    return wire::client_proof(k.view(), channel, identity, challenge ? challenge->server_nonce : wire::AuthNonce{},
                              client_nonce);
  }
  // Sends a proof (a hostile client sends one without checking the publisher).
  template <class Sink>
  bool prove(feed::ControlService& svc, Sink& out, uint64_t now, uint32_t rid = 2) {
    return svc.on_frame(id, wire::encode_auth(rid, wire::AuthProof{proof()}), now, out);
  }
  // The whole honest handshake; true when the publisher proved itself.
  template <class Sink>
  bool authenticate(feed::ControlService& svc, Sink& out, uint64_t now) {
    if (!hello(svc, out, now) || !publisher_proven()) return false;
    return prove(svc, out, now);
  }
};

}  // namespace mdcast::test
