// Configuration of the feed engines. Plain values with defaults that suit a
// busy feed on one host; `validate()` rejects inconsistent settings with a
// message naming the field. The command line and TOML loader (apps/) map onto
// these one to one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/drill.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::feed {

enum class PacingMode : uint8_t {
  kNone,     // send as fast as the application publishes
  kFixed,    // token bucket at `rate` messages/s
  kSlowest,  // token bucket at the lowest capacity live subscribers report (not below `min_rate`)
};

struct PacingConfig {
  PacingMode mode = PacingMode::kNone;
  double rate = 1e6;           // messages/s (kFixed)
  double burst = 1000;         // bucket depth, messages
  double min_rate = 10'000;    // kSlowest never goes below this: one hostile report cannot stall the feed
                               // (validate() refuses less than kMinPacingFloor)
  uint64_t report_ttl_ns = 2 * kNsPerSec;  // kSlowest ignores reports older than this
};

// The lowest pacing.min_rate accepted: below it one subscriber's report
// (hostile, or simply wrong) could all but stop the feed for everyone.
inline constexpr double kMinPacingFloor = 1'000;  // messages/s

// Where a datagram ends. A publisher pair (docs/architecture.md, "Publisher
// pairs") needs both members to cut the same input into the same datagrams,
// so that sequence n carries the same messages whoever sent it: a timer, a
// heartbeat or a snapshot being built must then never end a datagram.
enum class Boundaries : uint8_t {
  kTimer,  // full, flush_interval_ns after its first message (0: each message), or flush()
  kInput,  // full, or the application's flush() (the end of an upstream packet); nothing else
};

struct PublisherConfig {
  uint16_t channel = 1;
  uint64_t session = 0;         // 0: 64 random bits at start (new_session_id)
  uint32_t sender_id = 1;       // goes in every datagram; subscribers drop their own
  size_t max_datagram = 1472;   // medium payload limit (UDP 1472, verbs active MTU, shm slot)
  size_t max_message = 16384;   // larger messages are refused; messages above a datagram are fragmented
  uint64_t flush_interval_ns = 0;  // a partly filled datagram leaves after at most this long (0: at once)
  Boundaries boundaries = Boundaries::kTimer;  // kInput: flush_interval_ns must be 0
  uint64_t heartbeat_interval_ns = 100 * kNsPerMs;  // between heartbeats (tail, checksums), busy or idle
  uint16_t heartbeat_entries = 16;                  // per-instrument checksums per heartbeat (rotating)
  size_t retransmit_bytes = 64u << 20;              // retransmit ring size
  uint32_t max_unsent = 256;    // committed datagrams the medium may hold back before publish() back-pressures
  bool crc = false;             // CRC-32C in every datagram (media that can corrupt bytes)
  // With secrets (ControlConfig::secrets) every datagram and heartbeat
  // carries a tag only subscribers that proved an identity can check
  // (docs/security.md), instead of the CRC. Off where the medium says no one
  // else can write its data (the shm ring's owner): fit_to_medium.
  bool authenticate_data = true;
  PacingConfig pacing;
  book::BookConfig books;
  // A crash drill (core/drill.hpp) the engine looks for where its point
  // passes: between a fragmented message's datagrams, in a snapshot's
  // stream. Null: none, and nothing is looked at.
  const CrashDrill* drill = nullptr;

  void validate() const;        // throws mdcast::Error naming the bad field
};

struct Entitlement {
  bool all = true;
  std::vector<uint32_t> instruments;  // when !all: sorted, no repeats
};

class PublisherSecrets;  // feed/auth.hpp
class ClientSecret;

// What the publisher's control service may spend on each client. The
// defaults never hold back a well-behaved subscriber (at most 8 retransmit
// requests and 8 single-instrument snapshots in flight, one full snapshot at
// a time, each retried after 200 ms) and bound what a hostile one costs the
// publishing thread per poll.
struct ControlConfig {
  // Null: an open feed, every client entitled to every instrument. Otherwise
  // a client must prove it knows the secret of one of these identities
  // (mutual challenge-response, feed/auth.hpp) before it may subscribe, and
  // gets what that identity's entitlement allows.
  std::shared_ptr<const PublisherSecrets> secrets;
  // The session's data key (PublisherConfig::authenticate_data) is derived
  // from this secret when set, so both members of a publisher pair tag
  // their datagrams alike; null: a random key per run.
  std::shared_ptr<const ClientSecret> data_secret;
  // A refused proof is answered after this delay, doubling per failure (for
  // the whole publisher) up to the max, one doubling forgotten per decay.
  // Keep the max below the transport's un-admitted timeout (5 s), or a
  // refused client is closed before it hears why.
  uint64_t auth_delay_min_ns = 100 * kNsPerMs;
  uint64_t auth_delay_max_ns = 3 * kNsPerSec;
  uint64_t auth_delay_decay_ns = 10 * kNsPerSec;
  size_t max_reply_bytes = 256u << 10;     // one retransmit reply frame (it always carries one datagram)
  size_t snapshot_frame_bytes = 64u << 10; // one snapshot-data frame
  uint32_t max_errors_per_client = 32;     // then the transport disconnects it

  // Per-client token buckets. Over budget a request is answered kOverloaded
  // with the time to retry after; it never counts towards max_errors_per_client.
  double retransmit_rate = 65'536;         // datagrams/s a client may be sent in retransmit replies
  double retransmit_burst = 8'192;         // datagrams; one request costs at least one
  double snapshot_rate = 64.0 * (1u << 20);   // snapshot bytes/s a client may be served
  double snapshot_burst = 64.0 * (1u << 20);  // bytes; a snapshot larger than this is served when the bucket is full
  size_t snapshot_min_cost = 64u << 10;    // bytes charged per snapshot request at least (the lookup is not free)

  // Snapshots are served from a copy of the books serialized at most once
  // per interval (and whenever the copy's sequence is leaving the
  // retransmit ring, so subscribers can still reconcile with the stream).
  uint64_t snapshot_interval_ns = 50 * kNsPerMs;
  uint32_t max_snapshot_generations = 4;   // copies kept alive for streams in progress; the oldest's streams are cut
  // Streaming: a client's snapshot is produced as it reads, while its queued
  // reply bytes stay under snapshot_share_bytes, and per poll at most
  // snapshot_client_poll_bytes for one client and snapshot_poll_bytes for all.
  size_t snapshot_share_bytes = 1u << 20;
  size_t snapshot_client_poll_bytes = 256u << 10;
  size_t snapshot_poll_bytes = 4u << 20;
  uint32_t max_snapshot_requests = 16;     // queued per client (a subscriber has at most 9 in flight)

  void validate() const;  // throws mdcast::Error naming the bad field
};

struct SubscriberConfig {
  uint16_t channel = 1;
  uint32_t sender_id = 0;          // own sender id (0: none): datagrams carrying it are own loopback
  // Set: authenticate (mutually) before subscribing, and never subscribe to a
  // publisher that cannot prove it knows this secret. Null: an open feed.
  std::shared_ptr<const ClientSecret> secret;
  bool all_instruments = true;
  std::vector<uint32_t> instruments;  // the filter when !all_instruments
  size_t max_datagram = wire::kMaxDatagram;  // largest datagram accepted (window slot size)
  size_t window_bytes = 16u << 20; // out-of-order / recovery buffer
  bool maintain_books = true;      // apply messages to local books (needed for checksum checks)
  book::BookConfig books;
  uint64_t reorder_wait_ns = 0;    // how long a gap may be reordering before a retransmit request
  uint64_t request_timeout_ns = 200 * kNsPerMs;
  uint32_t max_retries = 3;        // per request, then a snapshot
  uint32_t max_retransmit_span = 65536;  // larger gaps go straight to a snapshot
  uint32_t max_outstanding = 8;    // retransmit requests in flight
  uint64_t publisher_timeout_ns = kNsPerSec;
  uint64_t status_interval_ns = 250 * kNsPerMs;
  uint64_t capacity = 0;           // messages/s reported to the publisher (0: unknown)
  size_t max_message = 16384;
  uint32_t max_reassemblies = 4;
  uint32_t max_instrument_recoveries = 8;
  size_t instrument_hold_bytes = 256u << 10;
  bool verify_checksums = true;
  // Least time between two full snapshots a global checksum mismatch starts.
  // Heartbeats are not authenticated: a forged one may claim a divergence,
  // and this bounds what that can cost (a real divergence is recovered at
  // the next heartbeat after it, and per-instrument checksums recover single
  // instruments meanwhile).
  uint64_t checksum_snapshot_interval_ns = kNsPerSec;
  // A publisher pair (docs/architecture.md): the member this subscriber's
  // control connection moved to may not yet have published what the other
  // one sent, and will send it. A publisher of our session at most this many
  // datagrams behind what we delivered is such a member; further behind, the
  // id was reused by a new run and the subscriber starts over. 0: no pair.
  uint64_t pair_lag = 0;
  // Datagrams more than a window (plus pair_lag) beyond the publisher's
  // last confirmed sequence are claims the control plane confirms first,
  // however gaplessly they follow each other: without it a forger on an
  // open group walks the sequence space one datagram at a time and every
  // real datagram is dropped as a duplicate. The subscriber asks for a new
  // confirmation each half window, so a real feed is never held. Off where
  // the medium says no one else can write its data (the shm ring's owner).
  bool confirm_ahead = true;
  // With a secret: accept only datagrams tagged with the data key the
  // publisher sent over the authenticated control plane; anything else is
  // dropped and counted before its sequence is looked at. Off where the
  // medium says no one else can write its data (fit_to_medium).
  bool authenticate_data = true;

  void validate() const;
};

}  // namespace mdcast::feed
