// Mutual authentication of the control plane: three frames before Subscribe,
// and the proofs they carry.
//
//   client → publisher  AuthHello      {channel, identity, client nonce}
//   publisher → client  AuthChallenge  {server nonce, server proof}
//   client → publisher  AuthProof      {client proof}
//
//   server proof = HMAC-SHA-256(secret, label | "mdcast-srv" | channel | identity | client nonce | server nonce)
//   client proof = HMAC-SHA-256(secret, label | "mdcast-cli" | channel | identity | server nonce | client nonce)
//
// Once the client's proof is accepted, a publisher that tags its datagrams
// sends the session's data key (wire/datagram.hpp) wrapped for this client:
//
//   publisher → client  AuthDataKey    {session, wrapped key, key check}
//
//   wrapped   = data key XOR first 16 bytes of HMAC-SHA-256(secret, label | "mdcast-key" | channel | identity | Ns | Nc)
//   key check = HMAC-SHA-256(secret, label | "mdcast-kck" | channel | identity | Ns | Nc | session | wrapped)
//
// The pad is fresh per connection (both nonces) and known only to the two
// ends, so the key crosses the wire as a one-time-pad ciphertext; the check
// lets the client refuse a key that was altered or replayed from another
// connection or session.
//
// The secret never travels. The publisher proves itself first, over the
// client's fresh nonce, so a squatter on the control address learns nothing
// it could replay, and the client sends its own proof only to a publisher
// that knows the secret; the client's proof covers the publisher's fresh
// nonce, so a recorded proof is worthless on the next connection. The role
// tag keeps one side's proof from being reflected as the other's, and the
// channel and protocol label keep a proof for one feed from opening another.
//
// Codec as in wire/control.hpp: building frames allocates; parsing is
// bounds-checked and never throws. The proofs need libsodium (HMAC-SHA-256,
// a CSPRNG, constant-time comparison): sodium_init() runs on first use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mdcast/wire/control.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::wire {

namespace auth {
constexpr size_t kNonceSize = 32;
constexpr size_t kMacSize = 32;      // HMAC-SHA-256
constexpr size_t kKeySize = 32;
constexpr size_t kMaxIdentity = 64;  // an identity names a client; it is not secret
// Every MAC input starts with this (with its terminating NUL): a new scheme changes the label.
constexpr std::string_view kLabel{"mdcast-auth-v1", 15};
// Frame layouts, offsets from the frame start (docs/protocol.md).
constexpr size_t kHelloChannel = 12, kHelloScheme = 14, kHelloIdLen = 15, kHelloNonce = 16, kHelloIdentity = 48;
constexpr size_t kChallengeNonce = 12, kChallengeProof = 44, kChallengeSize = 76;
constexpr size_t kProofMac = 12, kProofSize = 44;
constexpr size_t kDataKeySession = 12, kDataKeyWrapped = 20, kDataKeyCheck = 36, kDataKeySize = 68;
constexpr uint8_t kSchemeHmacSha256 = 1;
}  // namespace auth

using AuthNonce = std::array<std::byte, auth::kNonceSize>;
using AuthMac = std::array<std::byte, auth::kMacSize>;
using AuthKey = std::span<const std::byte, auth::kKeySize>;

struct AuthHello {
  uint16_t channel = 0;
  std::string identity;
  AuthNonce client_nonce{};
};
struct AuthChallenge {
  AuthNonce server_nonce{};
  AuthMac server_proof{};
};
struct AuthProof {
  AuthMac client_proof{};
};
struct AuthDataKey {
  uint64_t session = 0;
  DataKey wrapped{};
  AuthMac check{};
};

using AuthBody = std::variant<AuthHello, AuthChallenge, AuthProof, AuthDataKey>;
struct AuthFrame {
  uint32_t request_id = 0;
  AuthBody body;
};

// Whether a frame (header at least) claims one of the three auth types: the
// control dispatch sends those to parse_auth instead of parse_control.
[[nodiscard]] bool is_auth_frame(std::span<const std::byte> frame) noexcept;

// Parses one complete auth frame. nullopt with `why` set (never naming a
// secret: frames carry none) when the frame is malformed or not an auth frame.
[[nodiscard]] std::optional<AuthFrame> parse_auth(std::span<const std::byte> frame, std::string* why) noexcept;

// Encoders. The hello's identity must pass valid_identity (else mdcast::Error).
std::vector<std::byte> encode_auth(uint32_t request_id, const AuthHello& b);
std::vector<std::byte> encode_auth(uint32_t request_id, const AuthChallenge& b);
std::vector<std::byte> encode_auth(uint32_t request_id, const AuthProof& b);
std::vector<std::byte> encode_auth(uint32_t request_id, const AuthDataKey& b);

// 1..64 characters of A-Z a-z 0-9 . _ - @ +: safe in a log line, an error
// text and a secrets file, whoever sent it.
[[nodiscard]] bool valid_identity(std::string_view id) noexcept;

// The proofs (see the top of this file).
[[nodiscard]] AuthMac server_proof(AuthKey key, uint16_t channel, std::string_view identity,
                                   const AuthNonce& client_nonce, const AuthNonce& server_nonce) noexcept;
[[nodiscard]] AuthMac client_proof(AuthKey key, uint16_t channel, std::string_view identity,
                                   const AuthNonce& server_nonce, const AuthNonce& client_nonce) noexcept;
// The data key for one client's connection (see the top of this file), and
// its reverse: nullopt when the check fails (altered, or made for another
// connection, session or secret).
[[nodiscard]] AuthDataKey wrap_data_key(AuthKey key, uint16_t channel, std::string_view identity,
                                        const AuthNonce& server_nonce, const AuthNonce& client_nonce, uint64_t session,
                                        const DataKey& data_key) noexcept;
[[nodiscard]] std::optional<DataKey> unwrap_data_key(AuthKey key, uint16_t channel, std::string_view identity,
                                                     const AuthNonce& server_nonce, const AuthNonce& client_nonce,
                                                     const AuthDataKey& frame) noexcept;
// A session's data key from a secret both members of a publisher pair hold
// (docs/architecture.md): HMAC-SHA-256(root, label | "mdcast-data" | channel | session), first 16 bytes.
[[nodiscard]] DataKey derive_data_key(AuthKey root, uint16_t channel, uint64_t session) noexcept;
// Constant time: how much of a guess was right never shows in the timing.
[[nodiscard]] bool proof_equal(const AuthMac& a, const AuthMac& b) noexcept;
// Fills with bytes of the system CSPRNG (libsodium's randombytes).
void random_bytes(std::span<std::byte> out) noexcept;
[[nodiscard]] AuthNonce random_nonce() noexcept;
// Overwrites memory the compiler may not optimise away (sodium_memzero).
void wipe(std::span<std::byte> b) noexcept;
void wipe(std::string& s) noexcept;
// libsodium ready; throws mdcast::Error when it cannot initialise (no
// entropy source). Setup code calls it so the data path never has to.
void auth_init();

}  // namespace mdcast::wire
