// The publisher's end of the stream control transport (Unix or TCP): a
// listening socket, one connection per client, driven by poll(now) from the
// publisher's duty loop. Frames are wire/control.hpp frames, length-prefixed.
//
// What one client may cost the publisher is bounded, whatever it sends:
//   * work: at most `frames_per_poll` frames are handed to the handler per
//     poll, at most `frames_per_client_per_poll` of one client's. What a
//     client sent beyond that stays buffered (a client's socket is read only
//     while it is under its budget and has no whole frame waiting) and is
//     handled in later polls, clients served round robin. A client that is
//     cut off has none of its frames executed from then on.
//   * reply memory: replies queue per client up to `client_reply_bytes`; a
//     client past that share is cut off (slow). All queues together stay
//     under `reply_budget_bytes`: past it, the client holding the most is cut.
//     A cut client's memory is given back at once. queued_bytes(c) tells a
//     handler streaming a long reply how far it may go; once c's queue drains
//     under `writable_low_bytes` and the handler has_pending(c), the server
//     calls on_writable(c) (at most `writable_calls_per_poll` per poll).
//   * who: peers `peers` refuses (another user on a Unix socket, an
//     address outside the allowed networks on TCP: peer.hpp) are closed as
//     they are accepted, before a byte is read. Admitted clients of one
//     peer (a uid, an IPv4 address) are held to `max_clients_per_peer`, so
//     one peer cannot take every slot; the publisher's own user is exempt
//     (it could stop the publisher anyway).
//   * connections: clients the handler has not admitted (not yet
//     authenticated and subscribed) are held to `max_unadmitted`; a new
//     connection over that closes the oldest of them (the oldest that sent
//     nothing, if any: a subscriber authenticates within a round trip, an
//     idle socket had its chance; at the open-files limit, the listener's
//     reserve descriptor takes the new connection and the oldest un-admitted
//     one is closed for it). Admitted clients are held to
//     `max_clients`: past it a connection, or a frame that would admit its
//     client, is answered an Error (kOverloaded, saying so) and closed;
//     while every slot is taken, what the handler replies to an un-admitted
//     client's frame waits until the frame's outcome is known, so a client
//     refused for room never hears its Subscribe acknowledged. Before
//     admission only frames up to
//     `max_frame_unadmitted` are legal, after it `max_frame_admitted`; a
//     longer length prefix cuts the client as soon as it is read.
//   * CPU when idle: a poll asks epoll only when a ReadinessRing (io_uring,
//     core/readiness.hpp) saw the epoll fd wake, or when the last poll left
//     work the kernel will not announce again (see poll()); otherwise it
//     makes no system call. Where io_uring is unavailable or
//     `use_io_uring` is off, every poll makes one epoll_wait, as before.
//   * time: un-admitted longer than `unadmitted_timeout_ns`, a frame begun
//     and not finished for `partial_frame_timeout_ns`, an admitted client
//     silent for `idle_timeout_ns` (subscribers report status every 250 ms):
//     closed. Deadlines are checked in a pass over the clients begun every
//     `sweep_interval_ns` of the `now` given to poll, without a syscall, 128
//     clients a poll (a pass over a thousand does not stall one poll).
// Every refusal and cut is counted (ControlServerStats).
//
// Shared endpoint: given a ConnectionInbox (front_door.hpp), the server has
// no listener of its own; it adopts the connections a ControlFrontDoor on
// another thread routed to its channel (one load per poll to look), and
// serves them exactly as if it had accepted them.
//
// Single-threaded: poll and send run on the publisher's thread. Control
// code: it allocates (reply queues, frame buffers), never blocks.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/readiness.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/stream/front_door.hpp"
#include "mdcast/media/stream/listener.hpp"
#include "mdcast/media/peer.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {

struct StreamServerConfig {
  // Work per poll, in frames handed to the handler.
  size_t frames_per_poll = 64;
  size_t frames_per_client_per_poll = 8;
  // Reply memory.
  size_t reply_budget_bytes = 32u << 20;  // every client's queue together
  size_t client_reply_bytes = 4u << 20;   // one client's share; past it the client is cut off
  size_t writable_low_bytes = 0;          // on_writable below this; 0: half the share
  size_t writable_calls_per_poll = 16;
  // Connections.
  size_t max_clients = 1024;             // admitted clients
  size_t max_clients_per_peer = 256;     // admitted clients of one peer (uid, IPv4 address); 0: no share
  PeerPolicy peers;                      // who may connect at all (peer.hpp)
  size_t max_unadmitted = 64;            // connections not (yet) admitted
  size_t accepts_per_poll = 16;
  // Inbound frames. A Subscribe that lists instruments one by one takes 4
  // bytes each (16 KiB: ~4000 instruments); no client request is larger.
  size_t max_frame_unadmitted = 16u << 10;
  size_t max_frame_admitted = 64u << 10;
  // Time.
  uint64_t unadmitted_timeout_ns = 5 * kNsPerSec;
  uint64_t partial_frame_timeout_ns = 2 * kNsPerSec;
  uint64_t idle_timeout_ns = 30 * kNsPerSec;
  uint64_t sweep_interval_ns = 100 * kNsPerMs;
  // Idle polls without a system call (io_uring readiness). Off: an
  // epoll_wait every poll, for a kernel or sandbox where io_uring misbehaves.
  bool use_io_uring = true;

  // Throws Error naming the setting that cannot work.
  void validate() const;
};

#define MDCAST_STREAM_SERVER_COUNTERS(X)                                                   \
  X(accepted, "control connections accepted")                                             \
  X(disconnected, "control connections closed")                                           \
  X(clients, "control connections open now")                                              \
  X(unadmitted, "control connections not yet admitted now")                               \
  X(refused, "connections refused: every admitted slot (max_clients) is taken")           \
  X(accept_failures, "accept() failed (EMFILE/ENFILE: raise the open-files limit)")       \
  X(refused_admission, "clients cut at admission: max_clients already admitted")          \
  X(refused_peer_share, "clients cut at admission: their peer already holds max_clients_per_peer") \
  X(refused_peers, "connections closed at accept: a peer not admitted (another user, an address outside control.allow)") \
  X(descriptor_evictions, "un-admitted connections closed at the open-files limit for a new one") \
  X(refused_descriptors, "connections turned away at the open-files limit (nothing to close for them)") \
  X(evicted_unadmitted, "un-admitted connections closed to make room for a new one")      \
  X(timeouts_unadmitted, "connections closed: not admitted within the timeout")           \
  X(timeouts_partial_frame, "connections closed: a frame begun and not finished in time") \
  X(timeouts_idle, "admitted clients closed: no frame within the idle timeout")           \
  X(slow_disconnects, "clients cut off: replies beyond their share piled up unread")      \
  X(memory_cutoffs, "clients cut off: all replies together passed the budget, theirs the largest") \
  X(bad_stream_disconnects, "clients cut off: unparseable byte stream (oversize included)") \
  X(oversize_disconnects, "of those: a frame longer than allowed announced")              \
  X(handler_disconnects, "clients the handler gave up on")                                \
  X(peer_disconnects, "clients that closed their end or whose socket failed")             \
  X(budget_deferred, "times a client's buffered frames waited for a later poll (work budget)") \
  X(writable_calls, "on_writable calls (a streamed reply continued)")                     \
  X(replies_dropped, "replies for clients already gone or cut off")                       \
  X(queued_bytes, "reply bytes queued for all clients now")                               \
  X(frames_in, "control frames received")                                                 \
  X(bytes_in, "control bytes received")                                                   \
  X(frames_out, "control frames queued for clients")                                      \
  X(bytes_out, "control bytes written to clients")                                        \
  X(epoll_waits, "epoll_wait calls made by control polls")                                \
  X(idle_polls, "control polls that made no system call for readiness (io_uring said nothing happened)") \
  X(readiness_rearms, "io_uring readiness polls armed again (queue overflow, moved to the polling thread)") \
  X(io_uring, "1: idle control polls make no system call (io_uring readiness); 0: an epoll_wait each")
MDCAST_DEFINE_COUNTER_STRUCT(ControlServerStats, MDCAST_STREAM_SERVER_COUNTERS);

class StreamControlServer final : public ReplySink {
 public:
  // Binds and listens (addresses: see SocketAddress); throws Error naming the
  // address and errno, or the setting that cannot work. With `shared`, it
  // listens on nothing: `address` is the front door's, and the connections
  // come through the inbox.
  explicit StreamControlServer(const std::string& address, const StreamServerConfig& cfg = {},
                               std::shared_ptr<ConnectionInbox> shared = nullptr);
  // Earlier form: one client's reply share and the admitted cap, the rest default.
  StreamControlServer(const std::string& address, size_t client_reply_bytes, size_t max_clients = 1024);
  StreamControlServer(const StreamControlServer&) = delete;
  StreamControlServer& operator=(const StreamControlServer&) = delete;
  ~StreamControlServer() override;

  // Accepts, reads, hands whole frames to the handler (within the budgets),
  // writes queued replies, continues streamed replies, closes what timed out.
  // Returns connections, frames, on_writable calls and disconnects handled.
  size_t poll(ControlHandler& h, uint64_t now);
  // ReplySink. A reply for a client gone or cut off is dropped (counted).
  void send(ClientId c, std::vector<std::byte> frame) override;
  [[nodiscard]] size_t queued_bytes(ClientId c) const noexcept override;

  [[nodiscard]] size_t clients() const noexcept { return conns_.size(); }
  [[nodiscard]] size_t unadmitted() const noexcept { return unadmitted_.size(); }
  // Reply bytes queued for every client together.
  [[nodiscard]] size_t total_queued_bytes() const noexcept { return total_out_; }
  // Inbound bytes buffered (frames waiting for their turn, partial frames),
  // and the memory the frame buffers hold, for every client together.
  [[nodiscard]] size_t buffered_in_bytes() const noexcept;
  [[nodiscard]] size_t buffer_capacity_bytes() const noexcept;
  [[nodiscard]] const std::string& address() const noexcept { return address_; }
  // Whether its connections come from a shared front door.
  [[nodiscard]] bool shared() const noexcept { return inbox_ != nullptr; }
  [[nodiscard]] const StreamServerConfig& config() const noexcept { return cfg_; }
  [[nodiscard]] const ControlServerStats& stats() const noexcept { return stats_; }
  // How the server learns of readiness: "io_uring", or "epoll_wait per poll
  // (why io_uring is not used)".
  [[nodiscard]] std::string readiness_mode() const;
  // Empty, or why the open-files limit leaves room for fewer clients than
  // configured (OpenFilesClaim): for the start-up line.
  [[nodiscard]] const std::string& open_files_shortfall() const noexcept { return files_.shortfall(); }

 private:
  struct Conn {
    UniqueFd fd;
    Peer peer;
    wire::FrameAssembler in;
    std::deque<std::vector<std::byte>> out;
    size_t out_off = 0;
    size_t out_bytes = 0;
    uint64_t connected_ns = 0;
    uint64_t unadmitted_since = 0;
    uint64_t last_frame_ns = 0;
    uint64_t partial_since = 0;   // 0: no frame half-received
    uint64_t frames = 0;          // handled, ever
    uint64_t budget_poll = 0;     // the poll frames_this_poll counts for
    size_t frames_this_poll = 0;
    bool admitted = false;
    bool dead = false;
    bool want_out = false;        // EPOLLOUT registered: replies wait for room in the socket
    bool in_ready = false;        // in ready_: has input to handle (socket or buffered frames)
    bool pending = false;         // the handler has more of a streamed reply
    bool in_writable = false;     // in writable_: on_writable due
    bool holding = false;         // replies go to held (a frame that may not admit it, every slot taken)
    std::vector<std::vector<std::byte>> held;
  };
  enum class Cut { kSlow, kMemory, kBadStream, kOversize, kHandler, kPeer, kEvicted, kRefusedAdmission,
                   kRefusedShare, kEvictedForDescriptor, kTimeoutUnadmitted, kTimeoutPartial, kTimeoutIdle };

  void accept_all(ControlHandler& h, uint64_t now, size_t& work);
  void adopt_all(ControlHandler& h, uint64_t now, size_t& work);
  void add_client(UniqueFd fd, ControlHandler& h, uint64_t now, size_t& work);
  void serve_ready(ControlHandler& h, uint64_t now, size_t& work);
  void serve(ClientId id, Conn& c, ControlHandler& h, uint64_t now, size_t& work);
  void after_frame(ClientId id, Conn& c, ControlHandler& h, uint64_t now, uint32_t rid = 0);
  void set_admitted(ClientId id, Conn& c, bool admitted, uint64_t now, uint32_t rid = 0);
  // Tells a client there is no room (an Error frame written straight to its
  // socket, which holds nothing else yet), before it is closed.
  void say_full(int fd, uint32_t rid);
  void say(int fd, uint32_t rid, const std::string& text);
  // Whether admitting c would pass its peer's share.
  [[nodiscard]] bool over_share(const Conn& c) const;
  void count_admitted(const Conn& c, bool admitted);
  void note_pending(ClientId id, Conn& c, ControlHandler& h);
  void serve_writable(ControlHandler& h, uint64_t now, size_t& work);
  void sweep(ControlHandler& h, uint64_t now);
  void flush(ClientId id, Conn& c);
  void enforce_budget();
  void evict_unadmitted(Cut why = Cut::kEvicted);
  void cut(ClientId id, Conn& c, Cut why);
  void drop(ClientId id, ControlHandler& h);
  [[nodiscard]] size_t writable_low() const noexcept;

  StreamServerConfig cfg_;
  std::string address_;
  OpenFilesClaim files_;
  StreamListener listen_;                  // none when shared
  std::shared_ptr<ConnectionInbox> inbox_;  // shared: where connections come from
  UniqueFd epoll_;
  ReadinessRing ready_ring_;       // after epoll_, so gone before it: its poll holds the epoll file
  bool rescan_ = true;             // the last poll left readiness epoll will not wake for again
  ClientId next_id_ = 1;
  std::unordered_map<ClientId, Conn> conns_;
  std::set<ClientId> unadmitted_;  // live, not admitted; ids grow, so begin() is the oldest
  size_t admitted_count_ = 0;      // live, admitted
  std::unordered_map<uint64_t, size_t> per_peer_;  // live, admitted, by Peer::key (owners not counted)
  std::deque<ClientId> ready_;     // round robin of clients with input to handle
  std::deque<ClientId> writable_;  // clients whose streamed reply may continue
  std::vector<ClientId> dying_;    // cut (possibly inside a handler's send): dropped at the end of poll
  std::vector<std::byte> rbuf_;
  size_t total_out_ = 0;
  size_t frames_left_ = 0;         // of this poll's budget
  uint64_t poll_no_ = 0;
  uint64_t last_sweep_ = 0;
  bool swept_ = false;
  std::vector<ClientId> sweep_ids_;  // every client (0: gone, dropped at the next pass), in the order swept
  size_t sweep_pos_ = 0;             // the next of them the pass in progress looks at
  size_t freed_since_trim_ = 0;
  ControlServerStats stats_;
};

}  // namespace mdcast::media
