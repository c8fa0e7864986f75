// Options of the verbs medium: one struct for both sides, so a command line or
// a TOML table maps onto it one to one. Every field has a default that works
// on Soft-RoCE and on a real HCA; only group/control addresses usually change.
//
// Addresses: rdma_cm picks the device from the local IP address. Give
// `local_ip`, or give `device` (+ `port`, `gid_index`) and the IPv4 address of
// that GID is used (RoCE). On InfiniBand give `local_ip` (the IPoIB address).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/peer.hpp"

namespace mdcast::media::verbs {

class RequestInbox;  // verbs_front_door.hpp

// Where setup and control messages go (never called on the data path).
using LogFn = std::function<void(std::string_view)>;

enum class JoinMode : uint8_t {
  kSendOnly,  // publisher default: send-only full member, never hears itself (falls back to kFull, logged)
  kFull,      // full member with the QP attached: hears every datagram, its own included
};

// rdma_cm's RDMA_UDP_QKEY (docs/protocol.md 1.4).
inline constexpr uint32_t kDefaultQKey = 0x01234567;

// What one client may cost the publisher over RC; see
// media/stream/stream_server.hpp for the reasoning behind each. One client's
// reply share is Options::max_client_backlog; on_writable comes once its
// queue is under half of it.
struct ServerLimits {
  size_t frames_per_poll = 64;
  size_t frames_per_client_per_poll = 8;
  size_t reply_budget_bytes = 32u << 20;  // every client's queue together
  size_t writable_calls_per_poll = 16;
  size_t max_clients = 1024;              // admitted
  size_t max_clients_per_peer = 256;      // admitted from one IPv4 address; 0: no share
  std::vector<Ipv4Network> allow;         // addresses that may connect; empty: any
  size_t max_unadmitted = 64;
  size_t max_frame_unadmitted = 16u << 10;
  size_t max_frame_admitted = 64u << 10;
  uint64_t unadmitted_timeout_ns = 5 * kNsPerSec;
  uint64_t partial_frame_timeout_ns = 2 * kNsPerSec;
  uint64_t idle_timeout_ns = 30 * kNsPerSec;
  uint64_t sweep_interval_ns = 100 * kNsPerMs;
};

struct Options {
  // ---- where (both sides)
  std::string device;                  // "" = the device that owns local_ip; else checked against it
  uint8_t port = 1;                    // with device: the port whose GID gives local_ip
  int gid_index = 1;                   // RoCE v2 + IPv4 is GID index 1 on rxe and mlx5 default tables
  std::string local_ip;                // "" = the IPv4 address of (device, port, gid_index)
  std::string group_ip = "239.77.0.1"; // the channel's multicast group
  // Shared by every member; below 0x80000000 (no controlled QKey). rdma_cm's
  // RDMA_UDP_QKEY, the one its SA join records and rdma-core tools (mckey)
  // use: see docs/protocol.md 1.4 for why not a project-specific one.
  uint32_t qkey = kDefaultQKey;
  std::string control_ip;              // publisher: listen address ("" = local_ip); subscriber: the publisher's
  uint16_t control_port = 7471;
  uint16_t channel = 1;                // the wire channel: a subscriber's hello names it (a shared endpoint routes by it)
  // Publisher of one channel of several: connection requests come from a
  // VerbsFrontDoor listening at control_ip:control_port; null: the server
  // listens there itself.
  std::shared_ptr<RequestInbox> control_inbox;
  // Publisher: what one control client may cost, and who may connect.
  ServerLimits control_limits;
  int setup_timeout_ms = 5000;         // each rdma_cm step (address, route, join, connect)

  // ---- publisher data path
  JoinMode join = JoinMode::kSendOnly;
  size_t max_datagram = 0;             // 0: the port's active MTU (at most 4096); else at most that
  size_t retransmit_bytes = 64u << 20; // the retransmit ring, registered once for sends and RDMA READ
  uint32_t send_queue_depth = 512;
  uint32_t signal_every = 32;          // one signaled send per this many (at most send_queue_depth / 4)
  uint32_t max_inline = 256;           // asked of the device; smaller datagrams are sent inline

  // ---- subscriber data path
  double rate = 100'000;               // peak datagrams/s: the receive ring holds ~100 ms of it
  uint32_t min_ring = 256;             // receive ring bounds (also capped by the device's max_qp_wr)
  uint32_t max_ring = 16384;
  bool adaptive = false;               // block on a completion channel after an idle spell
  uint64_t idle_before_blocking_ns = kNsPerMs;
  int blocking_timeout_ms = 10;        // one wait; control work is checked at least this often
  JoinMode subscriber_join = JoinMode::kFull;

  // ---- control plane (RC)
  size_t send_chunk = 64u << 10;       // largest RC SEND; the peer's receive buffers are this size
  uint32_t send_slots = 4;             // SENDs in flight per connection
  uint32_t recv_slots = 8;             // receive buffers posted per connection
  size_t max_client_backlog = 8u << 20;// replies queued for one client before it is cut off (publisher)
  uint64_t malformed_grace_ns = 100 * kNsPerMs;  // a cut client gets this long to receive its error
  bool rdma_read = true;               // publisher: advertise the ring; subscriber: fetch retransmits by READ.
                                       // Publisher: set false when the feed has secrets (the ring's key is
                                       // advertised at accept, before any handshake, and the ring holds
                                       // unfiltered datagrams: READ would bypass authentication and entitlements).
  uint32_t read_max_slots = 64;        // slots fetched per retransmit request by READ (the rest: asked again)
  uint32_t read_in_flight = 4;         // READ-served requests outstanding at once
  uint64_t reconnect_interval_ns = 200 * kNsPerMs;
  size_t max_outbound_backlog = 1u << 20;  // subscriber: request bytes queued before send() says no

  LogFn log;                           // null: stderr, prefixed "mdcast-verbs: "
};

}  // namespace mdcast::media::verbs
