// Control-plane transport over stream sockets: a Unix-domain socket for the
// shm medium (one host), TCP for UDP hosts. Frames (wire/control.hpp) travel
// length-prefixed on the stream.
//
// Both ends are non-blocking and driven by poll() from their owner's duty
// loop; nothing here ever blocks the feed. The server learns which sockets
// have work from epoll: an idle poll is one epoll_wait, whatever the number
// of clients. The server bounds what each client
// may cost: a client whose replies pile up beyond `max_out_bytes` (too slow
// to read its snapshot), or whose byte stream stops making sense, is
// disconnected; the others never notice.
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

#define MDCAST_STREAM_SERVER_COUNTERS(X)                                        \
  X(accepted, "control connections accepted")                                  \
  X(disconnected, "control connections closed")                                \
  X(slow_disconnects, "clients cut off: replies piled up unread")              \
  X(bad_stream_disconnects, "clients cut off: unparseable byte stream")        \
  X(refused, "connections refused: too many clients")                          \
  X(frames_in, "control frames received")                                      \
  X(bytes_in, "control bytes received")                                        \
  X(frames_out, "control frames queued for clients")                           \
  X(bytes_out, "control bytes written to clients")
MDCAST_DEFINE_COUNTER_STRUCT(ControlServerStats, MDCAST_STREAM_SERVER_COUNTERS);

class StreamControlServer final : public ReplySink {
 public:
  explicit StreamControlServer(const std::string& address, size_t max_out_bytes = 256u << 20,
                               size_t max_clients = 1024);
  StreamControlServer(const StreamControlServer&) = delete;
  StreamControlServer& operator=(const StreamControlServer&) = delete;
  ~StreamControlServer() override;

  // Accepts, reads, hands whole frames to the handler, writes queued
  // replies. Returns the number of connections, frames and disconnects handled.
  size_t poll(ControlHandler& h, uint64_t now);
  void send(ClientId c, std::vector<std::byte> frame) override;

  [[nodiscard]] size_t clients() const noexcept { return conns_.size(); }
  [[nodiscard]] const std::string& address() const noexcept { return address_; }
  [[nodiscard]] const ControlServerStats& stats() const noexcept { return stats_; }

 private:
  struct Conn {
    UniqueFd fd;
    wire::FrameAssembler in;
    std::deque<std::vector<std::byte>> out;
    size_t out_off = 0;
    size_t out_bytes = 0;
    bool dead = false;
    bool want_out = false;  // EPOLLOUT registered: replies wait for room in the socket
  };
  void accept_all(ControlHandler& h, uint64_t now, size_t& work);
  void serve(ClientId id, Conn& c, ControlHandler& h, uint64_t now, size_t& work);
  void flush(ClientId id, Conn& c);
  void mark_dead(ClientId id, Conn& c);
  void drop(ClientId id, ControlHandler& h);

  std::string address_;
  std::string unlink_path_;
  UniqueFd listen_;
  UniqueFd epoll_;
  int family_ = 0;
  size_t max_out_;
  size_t max_clients_;
  ClientId next_id_ = 1;
  std::unordered_map<ClientId, Conn> conns_;
  std::vector<ClientId> dying_;  // marked dead (possibly inside a handler's send): dropped at the end of poll
  std::vector<std::byte> rbuf_;
  ControlServerStats stats_;
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
