// Secrets and the state of the control plane's mutual challenge-response
// (the frames and proofs are wire/auth.hpp).
//
// A secrets file lists, one per line, an identity, its 32-byte secret in hex
// and, on the publisher, what that identity may receive:
//
//   # identity   secret (64 hex digits)                                          entitlement
//   desk-a       5f0c...e1                                                         all
//   desk-b       9a7d...03                                                         0-99,200,300-310
//
// `mdcast secret new --identity NAME [--instruments LIST]` prints such a line.
// The publisher's file (ControlConfig::secrets) holds every identity it
// admits; a subscriber's (SubscriberConfig::secret) holds its own line (the
// entitlement column, if present, is ignored there). A file is refused unless
// it is a regular file owned by the running user with no group or other
// permission bits: whoever else can read it could be any client.
//
// Secrets are held once in memory (the configs share the loaded store) and
// wiped when it goes; they are never logged, formatted into an error, or sent.
// Setup code: loading throws mdcast::Error naming the file and line.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/feed/config.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::feed {

// 32 secret bytes. Move-only (a move wipes the source); wiped on destruction.
class SecretKey {
 public:
  static constexpr size_t kSize = wire::auth::kKeySize;
  SecretKey() noexcept = default;
  ~SecretKey() { wire::wipe(bytes_); }
  SecretKey(SecretKey&& o) noexcept : bytes_(o.bytes_) { wire::wipe(o.bytes_); }
  SecretKey& operator=(SecretKey&& o) noexcept {
    if (this != &o) {
      bytes_ = o.bytes_;
      wire::wipe(o.bytes_);
    }
    return *this;
  }
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;

  // Fresh bytes from the system CSPRNG.
  static SecretKey random();
  // Exactly 64 hex digits; nullopt otherwise (the caller words the error).
  static std::optional<SecretKey> from_hex(std::string_view hex) noexcept;
  // For `mdcast secret new` only: the caller prints it, then wipes it.
  [[nodiscard]] std::string to_hex() const;
  [[nodiscard]] wire::AuthKey view() const noexcept { return wire::AuthKey(bytes_); }
  [[nodiscard]] bool all_zero() const noexcept;

 private:
  std::array<std::byte, kSize> bytes_{};
};

struct SecretEntry {
  std::string identity;
  SecretKey key;
  Entitlement entitlement;  // the publisher's file only
};

// The publisher's secrets: identity -> secret + entitlement. Not copyable
// (share it: ControlConfig holds a shared_ptr<const PublisherSecrets>).
class PublisherSecrets {
 public:
  // Checks and parses the file (see the top of this file); at least one identity.
  static PublisherSecrets load(const std::string& path);
  // Parses text as if it were the file `name` (no file checks: tests, tools).
  static PublisherSecrets parse(std::string_view text, const std::string& name);

  PublisherSecrets(PublisherSecrets&&) noexcept = default;
  PublisherSecrets& operator=(PublisherSecrets&&) noexcept = default;
  PublisherSecrets(const PublisherSecrets&) = delete;
  PublisherSecrets& operator=(const PublisherSecrets&) = delete;

  // The entry for an identity, null when it is unknown.
  [[nodiscard]] const SecretEntry* find(std::string_view identity) const noexcept;
  [[nodiscard]] size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] std::span<const SecretEntry> entries() const noexcept { return entries_; }

 private:
  PublisherSecrets() = default;
  std::vector<SecretEntry> entries_;
};

// A subscriber's identity and secret.
class ClientSecret {
 public:
  // The line of `identity` in the file; an empty identity takes the file's
  // only line (an error if it has several: the identity must be named).
  static ClientSecret load(const std::string& path, std::string_view identity = {});
  static ClientSecret parse(std::string_view text, const std::string& name, std::string_view identity = {});
  ClientSecret(std::string identity, SecretKey key);

  ClientSecret(ClientSecret&&) noexcept = default;
  ClientSecret& operator=(ClientSecret&&) noexcept = default;

  [[nodiscard]] const std::string& identity() const noexcept { return identity_; }
  [[nodiscard]] const SecretKey& key() const noexcept { return key_; }

 private:
  std::string identity_;
  SecretKey key_;
};

// Reads a secrets file whole after checking it (regular file, owned by the
// running user, mode without group/other bits, at most 1 MiB). The caller
// wipes the text (wire::wipe) when done. Throws Error naming path and remedy.
std::string read_secret_file(const std::string& path);

// "all" or ids and ranges "0-99,200" (sorted, deduplicated, at most 2^20 ids).
// Throws Error (the text is not echoed: it may be a misplaced secret).
Entitlement parse_entitlement(std::string_view text);
// One line of a secrets file (ends in '\n'); identity and instruments are
// validated as the parser would. Holds the secret: wipe it after use.
std::string format_secret_line(std::string_view identity, const SecretKey& key, std::string_view instruments = "all");

// ---- the handshake's state, kept by ControlService and SubscriberCore -----

// Delay before a failed proof is answered: `min` doubling with every failure
// up to `max`, one doubling forgotten per `decay` without failures. Kept for
// the whole publisher, not per identity (see docs/protocol.md, section 3).
class AuthBackoff {
 public:
  AuthBackoff(uint64_t min_ns, uint64_t max_ns, uint64_t decay_ns) noexcept
      : min_(min_ns), max_(max_ns), decay_(decay_ns ? decay_ns : 1) {}
  // Records a failure at `now`; returns how long it waits.
  uint64_t on_failure(uint64_t now) noexcept;
  // The delay a failure at `now` would get.
  [[nodiscard]] uint64_t current(uint64_t now) const noexcept;

 private:
  [[nodiscard]] uint32_t level_at(uint64_t now) const noexcept;
  uint64_t min_, max_, decay_;
  uint32_t level_ = 0;
  uint64_t last_ = 0;
};

// One client's side of the handshake on the publisher.
struct ServerAuth {
  enum class Stage : uint8_t {
    kNone,        // waiting for AuthHello
    kChallenged,  // challenge sent, waiting for AuthProof
    kParked,      // proof refused: frames ignored until `until`, then the error
    kRefused,     // error sent: the next frame cuts the client off
    kOk,          // proven
  };
  Stage stage = Stage::kNone;
  const SecretEntry* entry = nullptr;  // null: an unknown identity (its challenge used the dummy key)
  std::string identity;
  wire::AuthNonce client_nonce{};
  wire::AuthNonce server_nonce{};
  uint64_t until = 0;
  uint8_t hellos = 0;             // on this connection: a client restarts only on a timeout, so few
  uint32_t rid = 0;               // the proof's request id, echoed by the delayed error
  media::ReplySink* sink = nullptr;  // where that error goes (the transport that carried the proof)
};

// The subscriber's side.
struct ClientAuth {
  enum class Stage : uint8_t {
    kIdle,       // nothing sent on this connection yet
    kHelloSent,  // waiting for the publisher's challenge
    kProven,     // the publisher proved itself; our proof and Subscribe are sent
    kFailed,     // this connection gives up (the reason is in last_error)
  };
  Stage stage = Stage::kIdle;
  uint32_t hello_rid = 0;
  uint32_t proof_rid = 0;
  wire::AuthNonce client_nonce{};
  wire::AuthNonce server_nonce{};  // the challenge's: the data key is wrapped with both
};

}  // namespace mdcast::feed
