// Ed25519 through libsodium (signature.hpp).
#include "mdcast/wire/signature.hpp"

#include <sodium.h>

#include "mdcast/wire/auth.hpp"

namespace mdcast::wire {

static_assert(kSignSeedSize == crypto_sign_SEEDBYTES && kSignPublicKeySize == crypto_sign_PUBLICKEYBYTES &&
              kSignatureSize == crypto_sign_BYTES && crypto_sign_SECRETKEYBYTES == 64);

namespace {
// Picks libsodium's implementations once; idempotent, and its lock is taken
// only the first time, never per verification.
void ready() noexcept {
  static const bool ok = sodium_init() >= 0;
  (void)ok;
}
const unsigned char* u8(const std::byte* p) noexcept { return reinterpret_cast<const unsigned char*>(p); }
unsigned char* u8(std::byte* p) noexcept { return reinterpret_cast<unsigned char*>(p); }
}  // namespace

SigningKey::SigningKey(std::span<const std::byte, kSignSeedSize> seed) noexcept {
  ready();
  crypto_sign_seed_keypair(u8(public_.data()), u8(secret_.data()), u8(seed.data()));
}

SigningKey::~SigningKey() { wipe(secret_); }

Signature SigningKey::sign(std::span<const std::byte> message) const noexcept {
  Signature s{};
  crypto_sign_detached(u8(s.data()), nullptr, u8(message.data()), message.size(), u8(secret_.data()));
  return s;
}

bool signature_valid(const SignPublicKey& key, std::span<const std::byte> message,
                     std::span<const std::byte, kSignatureSize> signature) noexcept {
  ready();
  return crypto_sign_verify_detached(u8(signature.data()), u8(message.data()), message.size(), u8(key.data())) == 0;
}

std::optional<SignPublicKey> parse_public_key(std::string_view hex) noexcept {
  if (hex.size() != 2 * kSignPublicKeySize) return std::nullopt;
  SignPublicKey k{};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < k.size(); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    k[i] = std::byte{static_cast<unsigned char>(hi << 4 | lo)};
  }
  return k;
}

std::string format_public_key(const SignPublicKey& key) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * key.size());
  for (const std::byte b : key) {
    s += kHex[std::to_integer<unsigned>(b) >> 4];
    s += kHex[std::to_integer<unsigned>(b) & 15];
  }
  return s;
}

}  // namespace mdcast::wire
