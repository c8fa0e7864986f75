// Ed25519 signatures (libsodium) for what a receiver must be able to check
// before it has any secret in common with the sender: the UDP medium's
// announcement of its control address (docs/security.md 3a). A MAC cannot do
// that job: every subscriber would hold the key that forges it. The signer
// keeps a 32-byte seed (a secrets-file line, `mdcast secret new`); receivers
// are configured with the public key (`mdcast secret public`), which may
// travel. Signing happens once at setup; verifying costs ~50 µs, so callers
// bound how often they verify (udp_medium.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mdcast::wire {

inline constexpr size_t kSignSeedSize = 32;
inline constexpr size_t kSignPublicKeySize = 32;
inline constexpr size_t kSignatureSize = 64;

using SignPublicKey = std::array<std::byte, kSignPublicKeySize>;
using Signature = std::array<std::byte, kSignatureSize>;

// The key pair made from a seed; the secret half is wiped when it goes.
class SigningKey {
 public:
  explicit SigningKey(std::span<const std::byte, kSignSeedSize> seed) noexcept;
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  [[nodiscard]] const SignPublicKey& public_key() const noexcept { return public_; }
  [[nodiscard]] Signature sign(std::span<const std::byte> message) const noexcept;

 private:
  std::array<std::byte, 64> secret_{};  // libsodium's secret key: seed | public key
  SignPublicKey public_{};
};

[[nodiscard]] bool signature_valid(const SignPublicKey& key, std::span<const std::byte> message,
                                   std::span<const std::byte, kSignatureSize> signature) noexcept;

// 64 hex digits; nullopt for anything else (the caller names the setting).
[[nodiscard]] std::optional<SignPublicKey> parse_public_key(std::string_view hex) noexcept;
[[nodiscard]] std::string format_public_key(const SignPublicKey& key);

}  // namespace mdcast::wire
