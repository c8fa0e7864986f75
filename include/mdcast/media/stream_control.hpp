// Control-plane transport over stream sockets: a Unix-domain socket for the
// shm medium (one host), TCP for UDP hosts. Frames (wire/control.hpp) travel
// length-prefixed on the stream.
//
// Both ends are non-blocking and driven by poll() from their owner's duty
// loop; nothing here ever blocks the feed. The server bounds what each client
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
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "mdcast/core/fd.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/subscriber.hpp"
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

struct ControlServerStats {
  uint64_t accepted = 0, disconnected = 0, slow_disconnects = 0, bad_stream_disconnects = 0, refused = 0;
  uint64_t frames_in = 0, bytes_in = 0, frames_out = 0, bytes_out = 0;
};

class StreamControlServer : public feed::ReplySink {
 public:
  explicit StreamControlServer(const std::string& address, size_t max_out_bytes = 256u << 20,
                               size_t max_clients = 1024);
  StreamControlServer(const StreamControlServer&) = delete;
  StreamControlServer& operator=(const StreamControlServer&) = delete;
  ~StreamControlServer() override;

  // Accepts, reads, hands whole frames to svc, writes queued replies.
  void poll(feed::ControlService& svc, uint64_t now);
  void send(feed::ClientId c, std::vector<std::byte> frame) override;

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
  };
  void flush(Conn& c);
  void drop(feed::ClientId id, feed::ControlService& svc);

  std::string address_;
  std::string unlink_path_;
  UniqueFd listen_;
  int family_ = 0;
  size_t max_out_;
  size_t max_clients_;
  feed::ClientId next_id_ = 1;
  std::unordered_map<feed::ClientId, Conn> conns_;
  std::vector<std::byte> rbuf_;
  ControlServerStats stats_;
};

// The subscriber's end. Reconnects with backoff when the publisher goes away.
class StreamControlClient : public feed::ControlChannel {
 public:
  explicit StreamControlClient(std::string address);
  bool send(std::span<const std::byte> frame) override;

  struct Events {
    bool connected = false;     // (re)connected: the subscriber should (re)subscribe
    bool disconnected = false;  // lost the connection
  };
  // Connects if needed, writes pending frames, hands received frames to on_frame.
  Events poll(uint64_t now, const std::function<void(std::span<const std::byte>)>& on_frame);

  // Convenience for a Subscriber<H>.
  template <class Sub>
  void poll(Sub& sub, uint64_t now) {
    const Events ev = poll(now, [&](std::span<const std::byte> f) { sub.on_control_frame(f, now); });
    if (ev.disconnected) sub.on_control_disconnected();
    if (ev.connected) sub.on_control_connected(now);
  }

  [[nodiscard]] bool connected() const noexcept { return connected_; }
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
