// The publisher's control plane, independent of how frames travel: subscribe
// with entitlements, retransmit from the ring, snapshots from the book, status
// reports that drive slowest-subscriber pacing.
//
// It runs on the publisher's thread (it reads the ring and the books, which
// that thread owns), called by a transport (Unix socket, TCP, RC QPs, or the
// in-memory medium) with whole frames. Every request gets an answer or a clear
// error; a client that keeps sending garbage is cut off; nothing a client
// sends can disturb another client or the feed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "mdcast/feed/auth.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::feed {

using media::ClientId;
using media::ReplySink;

class ControlService final : public media::ControlHandler {
 public:
  ControlService(const ControlConfig& cfg, PublisherCore& core, ControlCounters* counters = nullptr);
  ControlService(const ControlService&) = delete;
  ControlService& operator=(const ControlService&) = delete;

  void on_connect(ClientId c, uint64_t now) override;
  void on_disconnect(ClientId c) override;
  // Handles one frame. Returns false when the client should be disconnected.
  // With secrets configured, a client must authenticate (AuthHello,
  // AuthProof: feed/auth.hpp, wire/auth.hpp) before anything else is served;
  // a refused proof is answered after a delay, through the ReplySink that
  // carried the proof, which must stay valid while that client is connected.
  bool on_frame(ClientId c, std::span<const std::byte> frame, uint64_t now, ReplySink& out) override;
  // Authenticated (when secrets are configured) and granted a subscription.
  [[nodiscard]] bool admitted(ClientId c) const noexcept override;
  // Periodic upkeep: ages status reports, updates slowest-subscriber pacing,
  // answers refused proofs whose delay has passed.
  void tick(uint64_t now);

  [[nodiscard]] size_t clients() const noexcept { return clients_.size(); }
  [[nodiscard]] size_t subscribed_clients() const noexcept;
  [[nodiscard]] const ControlCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] ControlCounters& mutable_counters() noexcept { return *counters_; }

  struct ClientView {
    ClientId id;
    bool subscribed;
    uint32_t sender_id;
    uint64_t position, lag, drops, capacity, report_time;
  };
  [[nodiscard]] std::vector<ClientView> client_views() const;

 private:
  struct Client {
    bool subscribed = false;
    uint32_t sender_id = 0;
    const Entitlement* entitlement = nullptr;  // null: entitled to all
    std::vector<bool> subscribed_set;          // by instrument id
    uint32_t errors = 0;
    wire::StatusReport last_report{};
    uint64_t report_time = 0;
    ServerAuth auth;  // control_auth.cpp
  };

  bool reject(ClientId c, Client& cl, uint32_t rid, wire::ErrorCode code, std::string text, ReplySink& out);
  bool entitled(const Client& cl, uint32_t inst) const noexcept;
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::Subscribe& s, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::Unsubscribe& s, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::RetransmitRequest& r, uint64_t now, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::SnapshotRequest& r, uint64_t now, ReplySink& out);
  bool handle(ClientId c, Client& cl, const wire::StatusReport& r, uint64_t now);
  std::span<const std::byte> filter_datagram(std::span<const std::byte> d, const Client& cl);

  // control_auth.cpp. gate: what authentication decides about a frame before
  // it is parsed as a request (nullopt: go on; else on_frame's answer).
  std::optional<bool> gate(ClientId c, Client& cl, std::span<const std::byte> frame, uint64_t now, ReplySink& out);
  bool handle_auth(ClientId c, Client& cl, std::span<const std::byte> frame, uint64_t now, ReplySink& out);
  void send_refusal(ClientId c, Client& cl);
  void tick_auth(uint64_t now);

  ControlConfig cfg_;
  PublisherCore& core_;
  std::unique_ptr<ControlCounters> owned_counters_;
  ControlCounters* counters_;
  std::unordered_map<ClientId, Client> clients_;
  std::vector<std::byte> filter_buf_;
  // Unknown identities are challenged with this per-process random key, so a
  // challenge never tells whether an identity exists; their proof then fails
  // like a wrong secret.
  SecretKey dummy_key_;
  AuthBackoff backoff_;
};

}  // namespace mdcast::feed
