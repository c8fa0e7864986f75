// The publisher's control plane, independent of how frames travel: subscribe
// with entitlements, retransmit from the ring, snapshots from the book, status
// reports that drive slowest-subscriber pacing.
//
// It runs on the publisher's thread (it reads the ring and the books, which
// that thread owns), called by a transport (Unix socket, TCP, RC QPs, or the
// in-memory medium) with whole frames. Every request gets an answer or a clear
// error; a client that keeps sending garbage is cut off; nothing a client
// sends can disturb another client or the feed.
//
// What one client may cost is bounded (ControlConfig):
//  * retransmits and snapshots draw on per-client token buckets (datagrams,
//    bytes served); over budget a request is answered kOverloaded with
//    "retry after N ms", counted, never dropped in silence;
//  * snapshots come from one shared copy of the books serialized at most
//    once per snapshot_interval (SnapshotCache), and are streamed: a client
//    is sent more only while its queued replies stay under its share
//    (ReplySink::queued_bytes), and per poll only so much, the rest follows
//    in on_writable and tick();
//  * one snapshot streams per client at a time, a few more wait in a short
//    queue; whatever is held for a client goes when it disconnects.
//
// Snapshot streams continue from tick() through the ReplySink the client's
// last frame came with: every transport is itself that sink and outlives its
// clients, and the publisher agent calls tick() without a sink of its own.
// A sink handed to on_frame must therefore outlive the service or the client.
#pragma once

#include <array>
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
#include "mdcast/feed/snapshot_cache.hpp"
#include "mdcast/feed/subscriber_table.hpp"
#include "mdcast/feed/token_bucket.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::feed {

using media::ClientId;
using media::ReplySink;

class ControlService final : public media::ControlHandler {
 public:
  // Throws Error naming the field for an invalid configuration.
  ControlService(const ControlConfig& cfg, PublisherCore& core, ControlCounters* counters = nullptr);
  ControlService(const ControlService&) = delete;
  ControlService& operator=(const ControlService&) = delete;

  void on_connect(ClientId c, uint64_t now) override;
  void on_disconnect(ClientId c) override;
  void on_peer(ClientId c, const media::PeerInfo& peer) override;
  // Rows to show subscribers in (a counters file's, for `mdcast stat
  // --subscribers`); null: none. Must outlive the service; set before the
  // first client.
  void show_subscribers(SubscriberTable* table);
  // A snapshot drill (core/drill.hpp) dies right after a snapshot frame with
  // more of that snapshot to come; any other drill is not this service's.
  void use_drill(const CrashDrill* d) noexcept { drill_ = d && d->point() == DrillPoint::kSnapshot ? d : nullptr; }
  // Handles one frame. Returns false when the client should be disconnected.
  // With secrets configured, a client must authenticate (AuthHello,
  // AuthProof: feed/auth.hpp, wire/auth.hpp) before anything else is served;
  // a refused proof is answered after a delay, through the ReplySink that
  // carried the proof, which must stay valid while that client is connected.
  bool on_frame(ClientId c, std::span<const std::byte> frame, uint64_t now, ReplySink& out) override;
  // Authenticated (when secrets are configured) and granted a subscription.
  [[nodiscard]] bool admitted(ClientId c) const noexcept override;
  // A snapshot is streaming or queued for c.
  [[nodiscard]] bool has_pending(ClientId c) const noexcept override;
  // c's queue has room: the next frames of its snapshot.
  void on_writable(ClientId c, uint64_t now, ReplySink& out) override;
  // Periodic upkeep, once per control poll: writes a few subscriber rows
  // (SubscriberTable::kRowsPerPoll, each at most every kRefreshNs), updates
  // slowest-subscriber pacing, answers refused proofs whose delay has passed,
  // continues snapshot streams (within the poll's budget, clients in turn).
  // What needs a pass over clients runs only when it can change something:
  // pacing over the clients that report a capacity, every kPacingScanNs
  // (reports age out within it) or at the next tick after a client left,
  // subscribed, or the slowest raised its report (a lower report acts at
  // once); the refusals when the earliest is due. A poll costs the same for
  // one client or a thousand (10 000 polls a second made that a pass over
  // 1024 clients each, 3.5 us, in every poll).
  void tick(uint64_t now);
  static constexpr uint64_t kPacingScanNs = 100 * kNsPerMs;

  // What the last on_frame or on_writable call did, for a transport that
  // counts requests as well as frames.
  using Work = media::HandlerWork;
  [[nodiscard]] Work last_work() const noexcept override { return work_; }

  [[nodiscard]] size_t clients() const noexcept { return clients_.size(); }
  // Subscriptions that take at least one instrument: what a publisher
  // waiting for its subscribers counts. One that takes none watches the
  // session (a relay's probe of its upstream, runtime::upstream_session)
  // and may leave once it has the answer.
  [[nodiscard]] size_t subscribed_clients() const noexcept;
  [[nodiscard]] const ControlCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] ControlCounters& mutable_counters() noexcept { return *counters_; }
  // Memory the service holds for c alone (its state, queued snapshot
  // requests, a one-instrument snapshot it pins); 0 for an unknown client.
  // Bounded by max_snapshot_requests x 4 x max_instruments plus one book.
  [[nodiscard]] size_t client_bytes(ClientId c) const noexcept;
  // Memory of the shared snapshot copies alive (at most max_snapshot_generations).
  [[nodiscard]] size_t snapshot_cache_bytes() const noexcept;

  struct ClientView {
    ClientId id;
    bool subscribed;
    uint32_t sender_id;
    uint64_t position, lag, drops, capacity, report_time;
  };
  [[nodiscard]] std::vector<ClientView> client_views() const;
  // Client c's row as the subscriber table shows it (written_ns = now);
  // nullopt for an unknown client.
  [[nodiscard]] std::optional<SubscriberRow> subscriber_row(ClientId c, uint64_t now) const;

 private:
  // One snapshot request of a client, queued or streaming.
  struct SnapshotJob {
    uint32_t rid = 0;
    bool all = true;                             // everything the client subscribed to
    std::vector<uint32_t> ids;                   // otherwise these, deduplicated
    uint64_t newer_than = 0;                     // the client already has this snapshot sequence: wait for a later one
    std::shared_ptr<const SnapshotCache> cache;  // bound when it starts streaming
    uint32_t pos = 0;                            // instrument id (all) or index into ids
    size_t offset = 0;                           // into the current instrument's run
    uint32_t served = 0;                         // instruments sent whole
    // A full snapshot (everything, or a subscriber's filter) reconciles with
    // the stream by its sequence; one instrument alone (a subscriber
    // recovering it) by the instrument's sequence, from the time it asked.
    [[nodiscard]] bool full() const noexcept { return all || ids.size() != 1; }
  };

  struct Client {
    bool subscribed = false;
    uint32_t sender_id = 0;
    const Entitlement* entitlement = nullptr;  // null: entitled to all
    std::vector<bool> subscribed_set;          // by instrument id
    uint32_t n_subscribed = 0;                 // true entries in subscribed_set
    uint32_t errors = 0;
    wire::StatusReport last_report{};
    uint64_t report_time = 0;
    wire::LatencyReport last_latency{};  // what its application measured, as it last said
    bool capacity_listed = false;  // in capacity_reporters_
    ServerAuth auth;  // control_auth.cpp

    // What the subscriber table shows of it (control_view.cpp).
    media::PeerInfo peer;
    uint64_t connected_ns = 0;
    uint64_t retransmit_requests = 0, datagrams_retransmitted = 0, snapshot_requests = 0, recoveries = 0,
             refused = 0;
    size_t row = SubscriberTable::kNone;  // its row, once subscribed (kNone: none, or none free)

    ReplySink* sink = nullptr;  // of the last frame: where tick() continues its stream
    TokenBucket retransmit_budget;
    TokenBucket snapshot_budget;
    std::vector<SnapshotJob> jobs;  // front: the one streaming
    bool listed = false;            // in streaming_
    uint32_t last_rid = 0;          // the last snapshot completed, and its sequence: the same
    uint64_t last_seq = 0;          // request again means that one was too old for the client
    uint64_t poll_epoch = 0;        // snapshot bytes produced for it in that poll
    size_t poll_bytes = 0;
  };

  // Counts what is sent, for last_work(); forwards to the transport's sink.
  class CountingSink final : public ReplySink {
   public:
    CountingSink(ReplySink& to, Work& w) : to_(to), w_(w) {}
    void send(ClientId c, std::vector<std::byte> frame) override;
    [[nodiscard]] size_t queued_bytes(ClientId c) const noexcept override { return to_.queued_bytes(c); }

   private:
    ReplySink& to_;
    Work& w_;
  };

  bool reject(ClientId c, Client& cl, uint32_t rid, wire::ErrorCode code, std::string text, ReplySink& out);
  // kOverloaded: not the client's fault, so not counted towards max_errors_per_client.
  bool overloaded(ClientId c, uint32_t rid, std::string_view what, uint64_t retry_ns, ReplySink& out);
  bool entitled(const Client& cl, uint32_t inst) const noexcept;
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::Subscribe& s, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::Unsubscribe& s, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::RetransmitRequest& r, uint64_t now, ReplySink& out);
  bool handle(ClientId c, Client& cl, uint32_t rid, const wire::SnapshotRequest& r, uint64_t now, ReplySink& out);
  bool handle(ClientId c, Client& cl, const wire::StatusReport& r, uint64_t now);
  std::span<const std::byte> filter_datagram(std::span<const std::byte> d, const Client& cl);
  void update_pacing(uint64_t now);

  // ---- the subscriber table (control_view.cpp)
  [[nodiscard]] SubscriberRow row_of(ClientId c, const Client& cl, uint64_t now) const noexcept;
  // A subscribed client takes a row (or is counted unlisted); a leaving one gives it back.
  void list_subscriber(ClientId c, Client& cl, uint64_t now) noexcept;
  void unlist_subscriber(Client& cl) noexcept;
  void refresh_rows(uint64_t now) noexcept;

  // ---- snapshots (control_snapshot.cpp)
  // A new poll (a new `now`, or tick): the per-poll budgets start again.
  void begin_poll(uint64_t now) noexcept;
  void new_poll(uint64_t now) noexcept;
  // Whether a copy may still answer requests: nothing changed since, or it
  // is younger than the interval and its sequence well inside the ring.
  [[nodiscard]] bool reusable(const SnapshotCache& k, uint64_t now) const noexcept;
  // The shared copy a full request is served from; null: wait (the client
  // needs one newer than newer_than, and the interval is not over).
  std::shared_ptr<const SnapshotCache> full_cache(uint64_t now, uint64_t newer_than);
  void rebuild(uint64_t now);
  bool bind(SnapshotJob& j, uint64_t now);
  size_t snapshot_cost(const Client& cl, const SnapshotJob& j, uint64_t now);
  // Produces c's snapshot frames while its share and the poll's budget last.
  void produce(ClientId c, Client& cl, uint64_t now, ReplySink& out);
  // Fills one frame from the job; true when the job has nothing more to send.
  bool fill(SnapshotJob& j, const Client& cl, wire::SnapshotDataBuilder& b) const;
  void finish_job(ClientId c, Client& cl, ReplySink& out);
  void drop_job(ClientId c, Client& cl, size_t index, std::string_view why, ReplySink& out);
  void list_streaming(ClientId c, Client& cl);
  void update_cache_counters() noexcept;

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
  const CrashDrill* drill_ = nullptr;
  std::unordered_map<ClientId, Client> clients_;
  std::vector<std::byte> filter_buf_;
  // Unknown identities are challenged with this per-process random key, so a
  // challenge never tells whether an identity exists; their proof then fails
  // like a wrong secret.
  SecretKey dummy_key_;
  AuthBackoff backoff_;
  Work work_;
  uint64_t slowest_ = 0;  // lowest live capacity report, as of the last scan or a lower report since
  uint64_t last_pacing_scan_ = 0;
  bool pacing_dirty_ = true;            // a client left or (un)subscribed since the last scan
  std::vector<ClientId> capacity_reporters_;  // clients whose last report said a capacity: all pacing looks at
  uint64_t next_refusal_ = UINT64_MAX;  // the earliest parked client's answer is due then

  SubscriberTable* table_ = nullptr;
  std::vector<ClientId> row_client_;  // by row: whose it is (valid where row_used_)
  std::vector<bool> row_used_;
  size_t next_row_ = 0;               // the refresh's cursor over rows
  uint64_t sweep_started_ = 0;        // the refresh's last pass over every row began then
  uint64_t unlisted_ = 0;             // subscribed clients without a row

  // Snapshot copies: the current one, and the ones streams still read (oldest first).
  std::shared_ptr<const SnapshotCache> current_;
  std::vector<std::weak_ptr<const SnapshotCache>> generations_;
  uint64_t last_build_ = 0;
  std::vector<ClientId> streaming_;  // clients with snapshot jobs, served in turn by tick()
  size_t jobs_total_ = 0;            // snapshot jobs of all clients
  size_t turn_ = 0;
  uint64_t poll_epoch_ = 1;
  uint64_t poll_now_ = 0;
  size_t poll_left_ = 0;

  // Recent retransmit replies, to copy for an identical request in the same
  // poll (one per entitlement a storm mixes; at most kReplyCopies x max_reply_bytes).
  struct ReplyKey {
    uint64_t now = 0, from = 0, last = 0, oldest = 0, newest = 0;
    const Entitlement* filter = nullptr;
    bool operator==(const ReplyKey&) const = default;
  };
  struct ReplyCopy {
    ReplyKey key;
    bool kept = false;  // false: the key was seen once only, no copy made
    uint32_t served = 0;
    std::vector<std::byte> frame;
  };
  static constexpr size_t kReplyCopies = 4;
  std::array<ReplyCopy, kReplyCopies> reply_copies_{};
  size_t next_copy_ = 0;
};

}  // namespace mdcast::feed
