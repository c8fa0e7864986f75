#include "mdcast/wire/auth.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <cstring>

#include "mdcast/core/error.hpp"

namespace mdcast::wire {
namespace {

using namespace auth;

static_assert(kKeySize == crypto_auth_hmacsha256_KEYBYTES);
static_assert(kMacSize == crypto_auth_hmacsha256_BYTES);
static_assert(kHelloIdentity == kHelloNonce + kNonceSize && kChallengeProof == kChallengeNonce + kNonceSize &&
              kChallengeSize == kChallengeProof + kMacSize && kProofSize == kProofMac + kMacSize);

// sodium_init is idempotent and thread-safe; a function-local static keeps
// the per-call cost to one check.
bool sodium_ready() noexcept {
  static const bool ok = sodium_init() >= 0;
  return ok;
}

std::vector<std::byte> frame(CtlType t, uint32_t request_id, size_t size) {
  std::vector<std::byte> f(size);
  store_le<uint32_t>(f.data() + ctl::kLength, static_cast<uint32_t>(size));
  store_le<uint8_t>(f.data() + ctl::kType, static_cast<uint8_t>(t));
  store_le<uint8_t>(f.data() + ctl::kVersion, kVersion);
  store_le<uint16_t>(f.data() + 6, 0);
  store_le<uint32_t>(f.data() + ctl::kRequestId, request_id);
  return f;
}

template <size_t N>
void copy_out(std::array<std::byte, N>& to, const std::byte* from) noexcept {
  std::memcpy(to.data(), from, N);
}

bool exact(std::span<const std::byte> f, size_t n, std::string* why, std::string_view what) {
  if (f.size() == n) return true;
  if (why) *why = fmt::format("{} frame is {} bytes, expected {}", what, f.size(), n);
  return false;
}

// One MAC over the fields both proofs share, in the order the role gives the
// nonces, and (for the data key's check) what follows them.
AuthMac mac(AuthKey key, std::string_view role, uint16_t channel, std::string_view identity, const AuthNonce& first,
            const AuthNonce& second, std::span<const std::byte> extra = {}) noexcept {
  (void)sodium_ready();  // the HMAC needs no initialisation; randombytes does
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  auto put = [&st](const void* p, size_t n) {
    crypto_auth_hmacsha256_update(&st, static_cast<const unsigned char*>(p), n);
  };
  std::byte ch[2];
  store_le<uint16_t>(ch, channel);
  // The identity is length-prefixed so no two (identity, nonce) splits hash alike.
  const auto id_len = static_cast<uint8_t>(std::min(identity.size(), kMaxIdentity));
  put(kLabel.data(), kLabel.size());
  put(role.data(), role.size());
  put(ch, sizeof ch);
  put(&id_len, 1);
  put(identity.data(), id_len);
  put(first.data(), first.size());
  put(second.data(), second.size());
  if (!extra.empty()) put(extra.data(), extra.size());
  AuthMac out;
  crypto_auth_hmacsha256_final(&st, reinterpret_cast<unsigned char*>(out.data()));
  sodium_memzero(&st, sizeof st);  // the state holds key-derived pads
  return out;
}

}  // namespace

bool is_auth_frame(std::span<const std::byte> f) noexcept {
  if (f.size() < ctl::kHeaderSize) return false;
  const auto t = static_cast<CtlType>(load_le<uint8_t>(f.data() + ctl::kType));
  return t == CtlType::kAuthHello || t == CtlType::kAuthChallenge || t == CtlType::kAuthProof ||
         t == CtlType::kAuthDataKey;
}

bool valid_identity(std::string_view id) noexcept {
  if (id.empty() || id.size() > kMaxIdentity) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '@' || c == '+';
    if (!ok) return false;
  }
  return true;
}

std::optional<AuthFrame> parse_auth(std::span<const std::byte> f, std::string* why) noexcept {
  try {
    if (!check_frame_header(f, why)) return std::nullopt;
    AuthFrame out;
    out.request_id = load_le<uint32_t>(f.data() + ctl::kRequestId);
    const std::byte* p = f.data();
    switch (static_cast<CtlType>(load_le<uint8_t>(p + ctl::kType))) {
      case CtlType::kAuthHello: {
        if (f.size() < kHelloIdentity) {
          if (why) *why = fmt::format("auth-hello frame of {} bytes is shorter than its {}-byte body", f.size(),
                                      kHelloIdentity);
          return std::nullopt;
        }
        const auto scheme = load_le<uint8_t>(p + kHelloScheme);
        if (scheme != kSchemeHmacSha256) {
          if (why) *why = fmt::format("auth-hello asks for scheme {}, this side speaks {} (HMAC-SHA-256)", scheme,
                                      kSchemeHmacSha256);
          return std::nullopt;
        }
        const auto n = load_le<uint8_t>(p + kHelloIdLen);
        if (!exact(f, kHelloIdentity + n, why, "auth-hello")) return std::nullopt;
        AuthHello h;
        h.channel = load_le<uint16_t>(p + kHelloChannel);
        h.identity.assign(reinterpret_cast<const char*>(p + kHelloIdentity), n);
        // Checked here so that no caller logs or compares an identity that
        // could smuggle control characters into an operator's terminal.
        if (!valid_identity(h.identity)) {
          if (why) *why = fmt::format("auth-hello identity of {} bytes is not 1-{} characters of A-Z a-z 0-9 . _ - @ +",
                                      n, kMaxIdentity);
          return std::nullopt;
        }
        copy_out(h.client_nonce, p + kHelloNonce);
        out.body = std::move(h);
        break;
      }
      case CtlType::kAuthChallenge: {
        if (!exact(f, kChallengeSize, why, "auth-challenge")) return std::nullopt;
        AuthChallenge c;
        copy_out(c.server_nonce, p + kChallengeNonce);
        copy_out(c.server_proof, p + kChallengeProof);
        out.body = c;
        break;
      }
      case CtlType::kAuthProof: {
        if (!exact(f, kProofSize, why, "auth-proof")) return std::nullopt;
        AuthProof pr;
        copy_out(pr.client_proof, p + kProofMac);
        out.body = pr;
        break;
      }
      case CtlType::kAuthDataKey: {
        if (!exact(f, kDataKeySize, why, "auth-data-key")) return std::nullopt;
        AuthDataKey k;
        k.session = load_le<uint64_t>(p + kDataKeySession);
        copy_out(k.wrapped, p + kDataKeyWrapped);
        copy_out(k.check, p + kDataKeyCheck);
        out.body = k;
        break;
      }
      default:
        if (why) *why = fmt::format("frame type {} is not an authentication frame", load_le<uint8_t>(p + ctl::kType));
        return std::nullopt;
    }
    return out;
  } catch (...) {
    // Out of memory for the identity or the reason (see parse_control).
    if (why) {
      try {
        *why = "out of memory";
      } catch (...) {
      }
    }
    return std::nullopt;
  }
}

std::vector<std::byte> encode_auth(uint32_t rid, const AuthHello& b) {
  if (!valid_identity(b.identity))
    fail("identity of {} characters is not 1-{} characters of A-Z a-z 0-9 . _ - @ +", b.identity.size(), kMaxIdentity);
  auto f = frame(CtlType::kAuthHello, rid, kHelloIdentity + b.identity.size());
  store_le<uint16_t>(f.data() + kHelloChannel, b.channel);
  store_le<uint8_t>(f.data() + kHelloScheme, kSchemeHmacSha256);
  store_le<uint8_t>(f.data() + kHelloIdLen, static_cast<uint8_t>(b.identity.size()));
  std::memcpy(f.data() + kHelloNonce, b.client_nonce.data(), kNonceSize);
  std::memcpy(f.data() + kHelloIdentity, b.identity.data(), b.identity.size());
  return f;
}

std::vector<std::byte> encode_auth(uint32_t rid, const AuthChallenge& b) {
  auto f = frame(CtlType::kAuthChallenge, rid, kChallengeSize);
  std::memcpy(f.data() + kChallengeNonce, b.server_nonce.data(), kNonceSize);
  std::memcpy(f.data() + kChallengeProof, b.server_proof.data(), kMacSize);
  return f;
}

std::vector<std::byte> encode_auth(uint32_t rid, const AuthProof& b) {
  auto f = frame(CtlType::kAuthProof, rid, kProofSize);
  std::memcpy(f.data() + kProofMac, b.client_proof.data(), kMacSize);
  return f;
}

std::vector<std::byte> encode_auth(uint32_t rid, const AuthDataKey& b) {
  auto f = frame(CtlType::kAuthDataKey, rid, kDataKeySize);
  store_le<uint64_t>(f.data() + kDataKeySession, b.session);
  std::memcpy(f.data() + kDataKeyWrapped, b.wrapped.data(), b.wrapped.size());
  std::memcpy(f.data() + kDataKeyCheck, b.check.data(), kMacSize);
  return f;
}

namespace {
AuthMac key_check(AuthKey key, uint16_t channel, std::string_view identity, const AuthNonce& ns, const AuthNonce& nc,
                  uint64_t session, const DataKey& wrapped) noexcept {
  std::array<std::byte, 8 + sizeof(DataKey)> extra;
  store_le<uint64_t>(extra.data(), session);
  std::memcpy(extra.data() + 8, wrapped.data(), wrapped.size());
  return mac(key, "mdcast-kck", channel, identity, ns, nc, extra);
}
}  // namespace

AuthDataKey wrap_data_key(AuthKey key, uint16_t channel, std::string_view identity, const AuthNonce& ns,
                          const AuthNonce& nc, uint64_t session, const DataKey& data_key) noexcept {
  AuthMac pad = mac(key, "mdcast-key", channel, identity, ns, nc);
  AuthDataKey out;
  out.session = session;
  for (size_t i = 0; i < data_key.size(); ++i) out.wrapped[i] = data_key[i] ^ pad[i];
  out.check = key_check(key, channel, identity, ns, nc, session, out.wrapped);
  sodium_memzero(pad.data(), pad.size());
  return out;
}

std::optional<DataKey> unwrap_data_key(AuthKey key, uint16_t channel, std::string_view identity, const AuthNonce& ns,
                                       const AuthNonce& nc, const AuthDataKey& f) noexcept {
  if (!proof_equal(key_check(key, channel, identity, ns, nc, f.session, f.wrapped), f.check)) return std::nullopt;
  AuthMac pad = mac(key, "mdcast-key", channel, identity, ns, nc);
  DataKey out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = f.wrapped[i] ^ pad[i];
  sodium_memzero(pad.data(), pad.size());
  return out;
}

DataKey derive_data_key(AuthKey root, uint16_t channel, uint64_t session) noexcept {
  static constexpr AuthNonce kNone{};
  std::byte s[8];
  store_le<uint64_t>(s, session);
  AuthMac m = mac(root, "mdcast-data", channel, {}, kNone, kNone, s);
  DataKey out;
  std::memcpy(out.data(), m.data(), out.size());
  sodium_memzero(m.data(), m.size());
  return out;
}

AuthMac server_proof(AuthKey key, uint16_t channel, std::string_view identity, const AuthNonce& client_nonce,
                     const AuthNonce& server_nonce) noexcept {
  return mac(key, "mdcast-srv", channel, identity, client_nonce, server_nonce);
}

AuthMac client_proof(AuthKey key, uint16_t channel, std::string_view identity, const AuthNonce& server_nonce,
                     const AuthNonce& client_nonce) noexcept {
  return mac(key, "mdcast-cli", channel, identity, server_nonce, client_nonce);
}

bool proof_equal(const AuthMac& a, const AuthMac& b) noexcept { return sodium_memcmp(a.data(), b.data(), a.size()) == 0; }

void random_bytes(std::span<std::byte> out) noexcept {
  // auth_init() at setup made sure this holds; without it randombytes would
  // still work (it initialises itself) but could abort on a broken system.
  (void)sodium_ready();
  randombytes_buf(out.data(), out.size());
}

AuthNonce random_nonce() noexcept {
  AuthNonce n;
  random_bytes(n);
  return n;
}

void wipe(std::span<std::byte> b) noexcept {
  if (!b.empty()) sodium_memzero(b.data(), b.size());
}

void wipe(std::string& s) noexcept {
  // The whole capacity: a string that shrank keeps the old bytes past size().
  if (s.capacity() > 0) sodium_memzero(s.data(), s.capacity());
  s.clear();
}

void auth_init() {
  if (!sodium_ready()) fail("libsodium could not initialise (sodium_init failed: no usable entropy source?)");
}

}  // namespace mdcast::wire
