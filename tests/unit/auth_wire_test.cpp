// Authentication frames and proofs (wire/auth.hpp): every frame round-trips,
// every truncation, extension and bad field is refused with a reason, and the
// proofs are bound to role, key, channel, identity and both nonces. The
// golden proofs were computed independently (Python's hmac over the layout in
// docs/protocol.md), so the MAC input is pinned, not just self-consistent.
#include <gtest/gtest.h>

#include "auth_support.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/wire/auth.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using namespace wire;

AuthNonce filled(uint8_t v) {
  AuthNonce n;
  n.fill(std::byte{v});
  return n;
}

template <class T>
T parse_as(const Bytes& f, uint32_t rid) {
  std::string why;
  auto p = parse_auth(f, &why);
  EXPECT_TRUE(p) << why;
  if (!p) return T{};
  EXPECT_EQ(p->request_id, rid);
  EXPECT_TRUE(std::holds_alternative<T>(p->body));
  return std::holds_alternative<T>(p->body) ? std::get<T>(p->body) : T{};
}

void expect_refused(const Bytes& f, std::string_view what, std::string_view reason_has = {}) {
  std::string why;
  EXPECT_FALSE(parse_auth(f, &why)) << what;
  EXPECT_FALSE(why.empty()) << what;
  if (!reason_has.empty()) {
    EXPECT_NE(why.find(reason_has), std::string::npos) << what << ": " << why;
  }
  EXPECT_FALSE(parse_auth(f, nullptr)) << what;
}

Bytes resized(Bytes f, size_t n) {
  f.resize(n);
  if (n >= 4) store_le<uint32_t>(f.data() + ctl::kLength, static_cast<uint32_t>(n));
  return f;
}

std::vector<std::pair<std::string, Bytes>> every_frame() {
  return {
      {"hello", encode_auth(1, AuthHello{4, "desk-a", filled(1)})},
      {"hello-long-id", encode_auth(1, AuthHello{4, std::string(64, 'x'), filled(1)})},
      {"challenge", encode_auth(2, AuthChallenge{filled(2), {}})},
      {"proof", encode_auth(3, AuthProof{})},
      {"data-key", encode_auth(4, AuthDataKey{})},
  };
}

TEST(AuthWire, HelloRoundTripsAndLayout) {
  const AuthHello h{0xbeef, "desk-a@host.1", filled(0x5a)};
  const Bytes f = encode_auth(0x01020304, h);
  ASSERT_EQ(f.size(), 48u + h.identity.size());
  EXPECT_EQ(load_le<uint8_t>(f.data() + ctl::kType), static_cast<uint8_t>(CtlType::kAuthHello));
  EXPECT_EQ(load_le<uint16_t>(f.data() + 12), 0xbeef);
  EXPECT_EQ(load_le<uint8_t>(f.data() + 14), 1) << "scheme 1: HMAC-SHA-256";
  EXPECT_EQ(load_le<uint8_t>(f.data() + 15), h.identity.size());
  EXPECT_EQ(f[16], std::byte{0x5a});
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data() + 48), h.identity.size()), h.identity);
  EXPECT_TRUE(is_auth_frame(f));
  const auto r = parse_as<AuthHello>(f, 0x01020304);
  EXPECT_EQ(r.channel, h.channel);
  EXPECT_EQ(r.identity, h.identity);
  EXPECT_EQ(r.client_nonce, h.client_nonce);
  EXPECT_FALSE(parse_control(f, nullptr)) << "auth frames are not requests: the dispatch sends them to parse_auth";
}

TEST(AuthWire, ChallengeAndProofRoundTrip) {
  AuthMac m;
  for (size_t i = 0; i < m.size(); ++i) m[i] = std::byte(static_cast<uint8_t>(i * 7));
  const Bytes c = encode_auth(9, AuthChallenge{filled(3), m});
  ASSERT_EQ(c.size(), 76u);
  EXPECT_EQ(c[12], std::byte{3});
  EXPECT_EQ(c[44 + 1], std::byte{7});
  const auto rc = parse_as<AuthChallenge>(c, 9);
  EXPECT_EQ(rc.server_nonce, filled(3));
  EXPECT_EQ(rc.server_proof, m);
  const Bytes p = encode_auth(10, AuthProof{m});
  ASSERT_EQ(p.size(), 44u);
  EXPECT_EQ(parse_as<AuthProof>(p, 10).client_proof, m);
}

TEST(AuthWire, EveryTruncationAndExtensionIsRefused) {
  for (const auto& [name, f] : every_frame()) {
    ASSERT_TRUE(parse_auth(f, nullptr)) << name;
    for (size_t n = 0; n < f.size(); ++n) expect_refused(resized(f, n), name + " cut to " + std::to_string(n));
    for (size_t extra : {1, 4, 100}) expect_refused(resized(f, f.size() + extra), name + " + " + std::to_string(extra));
    Bytes x = f;
    store_le<uint32_t>(x.data(), static_cast<uint32_t>(f.size() + 1));
    expect_refused(x, name + " length+1", "length");
    x = f;
    store_le<uint8_t>(x.data() + ctl::kVersion, 1);
    expect_refused(x, name + " version 1", "version");
  }
}

TEST(AuthWire, BadFieldsAreRefused) {
  Bytes h = encode_auth(1, AuthHello{4, "desk-a", filled(1)});
  Bytes s = h;
  store_le<uint8_t>(s.data() + 14, 2);
  expect_refused(s, "scheme 2", "scheme");
  // The identity length disagreeing with the frame, either way.
  for (uint8_t n : {0, 5, 7, 255}) {
    Bytes x = h;
    store_le<uint8_t>(x.data() + 15, n);
    expect_refused(x, "identity length " + std::to_string(n));
  }
  // Identities that are empty, too long, or carry what a log must not print.
  for (std::string bad : {std::string(), std::string(65, 'a'), std::string("a b"), std::string("x\ny"),
                          std::string("\x1b[2J"), std::string("caf\xc3\xa9"), std::string("a/b"), std::string(1, '\0')}) {
    Bytes x = resized(h, 48 + bad.size());
    store_le<uint8_t>(x.data() + 15, static_cast<uint8_t>(bad.size()));
    std::memcpy(x.data() + 48, bad.data(), bad.size());
    expect_refused(x, "identity of " + std::to_string(bad.size()) + " bytes");
    EXPECT_THROW((void)encode_auth(1, AuthHello{4, bad, {}}), Error);
  }
  // Not an auth type at all.
  expect_refused(encode_control(1, StatusReport{}), "status report", "not an authentication frame");
  EXPECT_FALSE(is_auth_frame(encode_control(1, StatusReport{})));
  EXPECT_FALSE(is_auth_frame(Bytes(11)));
}

TEST(AuthWire, ValidIdentities) {
  for (std::string_view ok : {"a", "desk-a", "Desk_B.2", "svc+feed@host", "0123456789abcdef"})
    EXPECT_TRUE(valid_identity(ok)) << ok;
  EXPECT_TRUE(valid_identity(std::string(64, 'z')));
  EXPECT_FALSE(valid_identity(std::string(65, 'z')));
  EXPECT_FALSE(valid_identity(""));
  EXPECT_FALSE(valid_identity("tab\there"));
}

TEST(AuthWire, GoldenProofs) {
  const auto key = test_key(1);
  EXPECT_EQ(test_secret_hex(1), "26313c47525d68737e89949faab5c0cbd6e1ecf7020d18232e39444f5a65707b");
  EXPECT_EQ(to_hex(server_proof(key.view(), 4, "gold", filled(0x11), filled(0x22))),
            "10fe8b250b6abfa7ebabb0908c7375ae0e0c1116eb4c7e24dd5912e9b8e4a3ac");
  EXPECT_EQ(to_hex(client_proof(key.view(), 4, "gold", filled(0x22), filled(0x11))),
            "de7e3476feb80473c9f351e5f509e0030f86a2e3b7c8bf3465cce811ebddf3e8");
}

TEST(AuthWire, ProofsAreBoundToEverythingTheyCover) {
  const auto k1 = test_key(1), k2 = test_key(2);
  const auto a = filled(1), b = filled(2);
  const AuthMac base = server_proof(k1.view(), 4, "gold", a, b);
  EXPECT_TRUE(proof_equal(base, server_proof(k1.view(), 4, "gold", a, b))) << "deterministic";
  EXPECT_FALSE(proof_equal(base, client_proof(k1.view(), 4, "gold", a, b))) << "a server proof is no client proof";
  EXPECT_FALSE(proof_equal(base, server_proof(k2.view(), 4, "gold", a, b))) << "key";
  EXPECT_FALSE(proof_equal(base, server_proof(k1.view(), 5, "gold", a, b))) << "channel";
  EXPECT_FALSE(proof_equal(base, server_proof(k1.view(), 4, "gold2", a, b))) << "identity";
  EXPECT_FALSE(proof_equal(base, server_proof(k1.view(), 4, "gold", b, a))) << "nonce order";
  EXPECT_FALSE(proof_equal(base, server_proof(k1.view(), 4, "gold", a, filled(3)))) << "server nonce";
  AuthMac flipped = base;
  flipped[31] ^= std::byte{1};
  EXPECT_FALSE(proof_equal(base, flipped));
}

TEST(AuthWire, NoncesAreFresh) {
  const auto n1 = random_nonce(), n2 = random_nonce();
  EXPECT_NE(n1, n2);
  EXPECT_NE(n1, AuthNonce{});
}

TEST(AuthWire, WipeClearsTheWholeBuffer) {
  std::string s(100, 's');
  s.resize(3);  // the bytes past size() are still there
  const char* p = s.data();
  wipe(s);
  EXPECT_TRUE(s.empty());
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(p[i], '\0') << i;
  std::array<std::byte, 8> b;
  b.fill(std::byte{9});
  wipe(b);
  EXPECT_EQ(b, (std::array<std::byte, 8>{}));
}

TEST(AuthWire, DataKeyRoundTripsAndLayout) {
  AuthDataKey k;
  k.session = 0x0102030405060708;
  for (size_t i = 0; i < k.wrapped.size(); ++i) k.wrapped[i] = std::byte(static_cast<uint8_t>(i + 1));
  for (size_t i = 0; i < k.check.size(); ++i) k.check[i] = std::byte(static_cast<uint8_t>(0x80 + i));
  const Bytes f = encode_auth(7, k);
  ASSERT_EQ(f.size(), 68u);
  EXPECT_EQ(load_le<uint8_t>(f.data() + ctl::kType), static_cast<uint8_t>(CtlType::kAuthDataKey));
  EXPECT_EQ(load_le<uint64_t>(f.data() + 12), k.session);
  EXPECT_EQ(f[20], std::byte{1});
  EXPECT_EQ(f[36], std::byte{0x80});
  EXPECT_TRUE(is_auth_frame(f));
  const auto r = parse_as<AuthDataKey>(f, 7);
  EXPECT_EQ(r.session, k.session);
  EXPECT_EQ(r.wrapped, k.wrapped);
  EXPECT_EQ(r.check, k.check);
}

TEST(AuthWire, TheDataKeyUnwrapsOnlyForItsConnectionSessionAndSecret) {
  std::array<std::byte, 32> secret{}, other{};
  for (size_t i = 0; i < 32; ++i) {
    secret[i] = std::byte(static_cast<uint8_t>(i));
    other[i] = std::byte(static_cast<uint8_t>(i + 1));
  }
  DataKey dk;
  for (size_t i = 0; i < dk.size(); ++i) dk[i] = std::byte(static_cast<uint8_t>(0xa0 + i));
  const AuthNonce ns = filled(1), nc = filled(2);
  const AuthDataKey w = wrap_data_key(AuthKey(secret), 3, "desk-a", ns, nc, 77, dk);
  EXPECT_NE(w.wrapped, dk) << "the key never crosses the wire as itself";
  const auto back = unwrap_data_key(AuthKey(secret), 3, "desk-a", ns, nc, w);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, dk);
  EXPECT_FALSE(unwrap_data_key(AuthKey(other), 3, "desk-a", ns, nc, w)) << "another secret";
  EXPECT_FALSE(unwrap_data_key(AuthKey(secret), 4, "desk-a", ns, nc, w)) << "another channel";
  EXPECT_FALSE(unwrap_data_key(AuthKey(secret), 3, "desk-b", ns, nc, w)) << "another identity";
  EXPECT_FALSE(unwrap_data_key(AuthKey(secret), 3, "desk-a", filled(9), nc, w)) << "another connection";
  AuthDataKey moved = w;
  moved.session = 78;
  EXPECT_FALSE(unwrap_data_key(AuthKey(secret), 3, "desk-a", ns, nc, moved)) << "another session";
  AuthDataKey flipped = w;
  flipped.wrapped[0] ^= std::byte{1};
  EXPECT_FALSE(unwrap_data_key(AuthKey(secret), 3, "desk-a", ns, nc, flipped)) << "an altered key";
  // A pair's members derive the same key for a session, another for the next.
  EXPECT_EQ(derive_data_key(AuthKey(secret), 3, 77), derive_data_key(AuthKey(secret), 3, 77));
  EXPECT_NE(derive_data_key(AuthKey(secret), 3, 77), derive_data_key(AuthKey(secret), 3, 78));
  EXPECT_NE(derive_data_key(AuthKey(secret), 3, 77), derive_data_key(AuthKey(secret), 4, 77));
}

}  // namespace
}  // namespace mdcast::test
