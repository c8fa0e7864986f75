// One control endpoint for every channel of a publisher.
//
// Each channel's control service runs on the thread that publishes the
// channel: retransmits and snapshots read that thread's history and books,
// which no other thread may touch. So one listening socket cannot simply be
// polled by every channel; instead a ControlFrontDoor, on a thread of its own
// choosing (mdcast publish: the main thread, which otherwise sleeps), accepts
// each connection, waits for the first 14 bytes of its first frame (Subscribe
// or AuthHello, which name the channel: wire::route_first_frame), and hands
// the socket, with nothing read from it, to that channel's
// StreamControlServer through the channel's ConnectionInbox. The server then
// serves it as if it had accepted it; subscribers need no change, and every
// channel's ring or announcement names the one address.
//
// What a client may cost the door is bounded like everything on the control
// plane: connections that have not named their channel are held to
// `max_pending` (a new one over it closes the oldest) and to
// `first_frame_timeout_ns`; a first frame of another type, another version,
// or an unknown channel is answered with an Error saying why and closed; a
// channel whose inbox is full (its thread has not taken up the last 64) turns
// the connection away with kOverloaded rather than holding it. Peers that
// `peers` refuses (peer.hpp) are closed as they are accepted, before a byte
// is read. At the open-files limit the listener's reserve descriptor takes
// a new connection and the oldest unnamed one is closed for it; with none
// to close, accepting stops for a while instead of spinning on a listener
// that stays readable. Every outcome is counted.
//
// Threads: ControlFrontDoor is single-threaded (its owner's); each inbox has
// one producer (the door) and one consumer (the channel's server), and is
// lock-free. A server checks its inbox with one load per poll.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/stream/listener.hpp"
#include "mdcast/media/peer.hpp"

namespace mdcast::media {

// Connections on their way from the door to one channel's server: a
// single-producer single-consumer ring of socket descriptors.
class ConnectionInbox {
 public:
  static constexpr size_t kCapacity = 64;
  explicit ConnectionInbox(uint16_t channel) noexcept : channel_(channel) {}
  ConnectionInbox(const ConnectionInbox&) = delete;
  ConnectionInbox& operator=(const ConnectionInbox&) = delete;
  ~ConnectionInbox();  // closes what no server took

  // Producer. False when full: the caller keeps the descriptor.
  bool push(UniqueFd& fd) noexcept;
  // Consumer. An invalid UniqueFd when empty.
  UniqueFd pop() noexcept;
  // Consumer: one acquire load (of a line written only when a connection arrives).
  [[nodiscard]] bool empty() const noexcept { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_relaxed); }
  [[nodiscard]] uint16_t channel() const noexcept { return channel_; }

 private:
  const uint16_t channel_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next to pop: the consumer's
  alignas(64) std::atomic<uint64_t> tail_{0};  // next to push: the producer's
  alignas(64) std::array<int, kCapacity> fds_{};
};

struct FrontDoorConfig {
  size_t max_pending = 256;        // connections that have not yet named their channel
  size_t accepts_per_poll = 64;
  uint64_t first_frame_timeout_ns = 5 * kNsPerSec;
  uint64_t accept_pause_ns = 100 * kNsPerMs;  // after accept() failed for want of descriptors or memory
  PeerPolicy peers;                           // who may connect at all
  // Throws Error naming the setting that cannot work.
  void validate() const;
};

#define MDCAST_FRONT_DOOR_COUNTERS(X)                                                                \
  X(accepted, "connections accepted at the shared control endpoint")                                 \
  X(routed, "connections handed to their channel's control server")                                  \
  X(pending, "connections that have not named their channel yet (now)")                             \
  X(unknown_channel, "connections closed: their first frame named a channel this publisher lacks")   \
  X(bad_first_frame, "connections closed: a first frame other than Subscribe or AuthHello")          \
  X(timeouts, "connections closed: no channel named within the timeout")                             \
  X(evicted, "connections closed to make room (max_pending reached): the oldest unnamed")            \
  X(inbox_full, "connections turned away: their channel's thread had not taken up the last 64")      \
  X(peer_closed, "connections that closed before naming a channel")                                  \
  X(refused_peers, "connections closed at accept: a peer not admitted (another user, an address outside control.allow)") \
  X(descriptor_evictions, "unnamed connections closed at the open-files limit for a new one")           \
  X(refused_descriptors, "connections turned away at the open-files limit (nothing to close for them)") \
  X(accept_failures, "accept() failed (EMFILE/ENFILE: raise the open-files limit); accepting paused")
MDCAST_DEFINE_COUNTER_STRUCT(FrontDoorStats, MDCAST_FRONT_DOOR_COUNTERS);

class ControlFrontDoor {
 public:
  // Binds and listens (addresses: see SocketAddress). Throws Error naming the
  // address and errno, or the setting that cannot work.
  explicit ControlFrontDoor(const std::string& address, const FrontDoorConfig& cfg = {});
  ControlFrontDoor(const ControlFrontDoor&) = delete;
  ControlFrontDoor& operator=(const ControlFrontDoor&) = delete;
  ~ControlFrontDoor();

  // The inbox of channel `channel` (a wire channel id), for that channel's
  // StreamControlServer. Throws Error for a channel added twice.
  std::shared_ptr<ConnectionInbox> add_channel(uint16_t channel);

  // Accepts, reads first frames, routes, closes what timed out. Waits up to
  // wait_ns for something to happen (0: never blocks), less when a pending
  // connection's deadline comes first. Returns connections accepted, routed
  // or closed.
  size_t poll(uint64_t now, uint64_t wait_ns = 0);
  // media::ControlDoor: poll at the clock's now.
  size_t wait(uint64_t wait_ns) { return poll(monotonic_ns(), wait_ns); }
  [[nodiscard]] CounterGroup counter_group() const { return media::counter_group("door", stats_); }

  // Where it listens ("tcp:host:port" with the port picked, for port 0).
  [[nodiscard]] const std::string& address() const noexcept { return listener_.address(); }
  [[nodiscard]] size_t pending() const noexcept { return pending_.size(); }
  [[nodiscard]] const FrontDoorStats& stats() const noexcept { return stats_; }
  [[nodiscard]] std::vector<uint16_t> channels() const;

 private:
  struct Pending {
    UniqueFd fd;
    uint64_t since = 0;
  };
  enum class Close { kUnknownChannel, kBadFrame, kTimeout, kEvicted, kEvictedForDescriptor, kInboxFull, kPeer };

  void accept_all(uint64_t now, size_t& work);
  // Looks at what connection id has sent so far; routes or closes it.
  // hung_up: the peer will send nothing more.
  void examine(uint64_t id, bool hung_up, size_t& work);
  void close_pending(std::map<uint64_t, Pending>::iterator it, Close why, uint32_t rid, const std::string& text);
  void watch_listener(bool on);
  [[nodiscard]] std::string channel_list() const;

  FrontDoorConfig cfg_;
  OpenFilesClaim files_;  // connections not yet named (the channels' servers claim the rest)
  StreamListener listener_;
  UniqueFd epoll_;
  bool listening_ = true;       // the listener is in the epoll set (not paused)
  uint64_t resume_at_ = 0;      // paused: when to watch the listener again
  uint64_t next_id_ = 1;        // 0 is the listener
  std::map<uint64_t, Pending> pending_;  // ids grow: begin() is the oldest
  std::map<uint16_t, std::shared_ptr<ConnectionInbox>> inboxes_;
  FrontDoorStats stats_;
};

static_assert(ControlDoor<ControlFrontDoor>);

}  // namespace mdcast::media
