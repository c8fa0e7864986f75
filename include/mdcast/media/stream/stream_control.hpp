// Control-plane transport over stream sockets: a Unix-domain socket for the
// shm medium (one host), TCP for UDP hosts. Frames (wire/control.hpp) travel
// length-prefixed on the stream.
//
// Both ends are non-blocking and driven by poll() from their owner's duty
// loop; nothing here ever blocks the feed. The server (stream_server.hpp)
// learns which sockets have work from epoll, and whether to ask epoll at all
// from a ReadinessRing (io_uring): an idle poll makes no system call, whatever
// the number of clients (one epoll_wait where io_uring is unavailable); it bounds what each client may cost in
// work, reply memory, connections and time, and cuts a client past a bound
// without the others noticing.
//
// Addresses: see listener.hpp.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "mdcast/core/fd.hpp"
#include "mdcast/core/readiness.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/stream/listener.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {

// The subscriber's end. Reconnects with backoff when the publisher goes away.
// Its socket sits in a private epoll set watched by a ReadinessRing, so a
// poll with nothing to read or write makes no system call (a recv each
// where io_uring is unavailable or use_io_uring is false).
class StreamControlClient final : public ControlChannel {
 public:
  explicit StreamControlClient(std::string address, bool use_io_uring = true);
  bool send(std::span<const std::byte> frame) override;

  struct Events {
    bool connected = false;     // (re)connected: the subscriber should (re)subscribe
    bool disconnected = false;  // lost the connection
  };
  // Connects if needed, writes pending frames, hands received frames to on_frame.
  Events poll(uint64_t now, const std::function<void(std::span<const std::byte>)>& on_frame);

  // The same, reported to a subscriber's engine. Returns frames and
  // connection changes handled.
  size_t poll(ControlEvents& e, uint64_t now) {
    size_t frames = 0;
    const Events ev = poll(now, [&](std::span<const std::byte> f) {
      ++frames;
      e.on_control_frame(f, now);
    });
    if (ev.disconnected) e.on_control_disconnected();
    if (ev.connected) e.on_control_connected(now);
    return frames + ev.disconnected + ev.connected;
  }

  [[nodiscard]] bool connected() const noexcept { return connected_; }
  // Who listens at the other end of a connected Unix socket (SO_PEERCRED:
  // pid, uid, gid of the process as of its listen()), so a caller can check
  // it is who it expects before it sends anything. nullopt over TCP or while
  // not connected.
  [[nodiscard]] std::optional<ucred> peer() const noexcept;
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }
  // recv calls made, and connected polls that made none (nothing woke the socket).
  [[nodiscard]] uint64_t recvs() const noexcept { return recvs_; }
  [[nodiscard]] uint64_t idle_polls() const noexcept { return idle_polls_; }
  // "io_uring", or "recv per poll (why io_uring is not used)".
  [[nodiscard]] std::string readiness_mode() const;
  void set_address(std::string a) {
    address_ = std::move(a);
    close();
  }

 private:
  void close() noexcept;
  bool flush() noexcept;

  std::string address_;
  UniqueFd epoll_;                 // holds fd_ only: the ring polls this, never the socket (whose close must reach the peer)
  ReadinessRing ready_ring_;       // after epoll_, so gone before it
  bool watched_ = false;           // fd_ is in epoll_
  bool rescan_ = false;            // bytes may be left in fd_ that wake nobody again
  uint64_t recvs_ = 0;
  uint64_t idle_polls_ = 0;
  UniqueFd fd_;
  bool connected_ = false;
  bool connecting_ = false;
  uint64_t next_attempt_ = 0;
  uint64_t backoff_ns_ = 0;
  wire::FrameAssembler in_;
  std::vector<std::byte> out_;
  size_t out_off_ = 0;
  std::vector<std::byte> rbuf_;
  std::string last_error_;
};

}  // namespace mdcast::media
