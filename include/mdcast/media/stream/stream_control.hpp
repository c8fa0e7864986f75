// Control-plane transport over stream sockets: a Unix-domain socket for the
// shm medium (one host), TCP for UDP hosts. Frames (wire/control.hpp) travel
// length-prefixed on the stream.
//
// Both ends are non-blocking and driven by poll() from their owner's duty
// loop; nothing here ever blocks the feed. The server (stream_server.hpp)
// learns which sockets have work from epoll: an idle poll is one epoll_wait,
// whatever the number of clients; it bounds what each client may cost in
// work, reply memory, connections and time, and cuts a client past a bound
// without the others noticing.
//
// Addresses: "unix:@name" (abstract namespace: nothing left behind by a
// crash), "unix:/path/to/socket", "tcp:host:port" (host may be an IPv4 literal
// or a name; port 0 on a server picks a free one, see address()).
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
#include "mdcast/media/medium.hpp"
#include "mdcast/media/stream/stream_server.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  std::string text;
  // Throws Error naming the address and what is wrong with it.
  static SocketAddress parse(const std::string& address);
};

// The subscriber's end. Reconnects with backoff when the publisher goes away.
class StreamControlClient final : public ControlChannel {
 public:
  explicit StreamControlClient(std::string address);
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
  void set_address(std::string a) {
    address_ = std::move(a);
    close();
  }

 private:
  void close() noexcept;
  bool flush() noexcept;

  std::string address_;
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
