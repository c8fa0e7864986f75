// The control plane over RC queue pairs, connected through rdma_cm.
//
// Frames (mdcast/wire/control.hpp) travel as a byte stream: the sender packs
// queued frames into SENDs of at most `send_chunk` bytes (64 KiB), the
// receiver keeps `recv_slots` buffers of that size posted and reassembles with
// wire::FrameAssembler. RNR retry is unlimited, so a receiver that is slow to
// re-post only delays its own connection.
//
// VerbsControlServer (publisher): listens on control_ip:control_port, one RC
// QP per client, all on one CQ per device; hands whole frames to the
// ControlService and queues its replies per client. A client whose queued
// replies pass `max_client_backlog` is cut off (the publisher never waits for
// anyone); a client whose stream is malformed, or that the service gives up
// on, gets an error frame and is cut after a short grace. Nothing a client
// does reaches another client. The accept's private data carries the
// retransmit ring's {addr, rkey, slot_size, slots} (RingAdvert) unless
// rdma_read is off. What one client may cost is bounded as on the stream
// server (ServerLimits): frames per poll (a client's receive buffers are
// re-posted only once the frames they brought are handled, so a client
// that sends faster than its budget waits on RNR, itself), all reply
// queues together, un-admitted connections (the oldest evicted) and
// admitted ones, inbound frame size by admission, and timeouts.
//
// VerbsControlClient (subscriber, a ControlChannel): connects and
// reconnects on its own (non-blocking, paced by reconnect_interval). It
// serves the engine's retransmit requests (request_retransmit), when the
// publisher advertised its ring, with RDMA READ - no publisher CPU:
//   READ the requested slots (contiguous slots in one READ, two where the
//   range wraps), then, fenced behind them, READ the ring's reserved_seq word.
//   Slot s is valid iff its slot header says s, its datagram header says s
//   and the request's session, and reserved_seq < s + slots (the publisher
//   had not started to overwrite it when the READ finished).
// The valid prefix goes to the engine's recovery path as it lies in the READ
// buffer (ControlEvents::on_retransmitted): no frame is built or parsed.
// Anything else - nothing valid, no ring, no READ buffer free - asks the
// publisher over RC. A READ error means the connection is going down: the
// engine re-sends its requests once it is subscribed again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs {

// The retransmit ring as a remote reader sees it. Travels in the accept's
// private data (at most 196 bytes on IB/RoCE), little-endian:
//   u32 magic "MDRR", u16 version, u16 flags, u64 addr, u32 rkey, u32 slot_size, u64 slots
struct RingAdvert {
  static constexpr uint32_t kMagic = 0x5252444d;
  static constexpr uint16_t kVersion = 1;
  static constexpr size_t kSize = 32;
  uint64_t addr = 0;
  uint32_t rkey = 0;
  uint32_t slot_size = 0;
  uint64_t slots = 0;

  void encode(std::byte* out) const noexcept;
  [[nodiscard]] static std::optional<RingAdvert> decode(std::span<const std::byte> in) noexcept;
};

// The client's hello in the connect's private data: u32 magic "MDCC", u16
// version, u16 channel (version 2; version 1 left it zero and named none).
// A connection request without it is rejected (not an mdcast client); a
// shared endpoint (verbs_front_door.hpp) routes by the channel.
inline constexpr uint32_t kHelloMagic = 0x4343444d;
inline constexpr uint16_t kHelloVersion = 2;
inline constexpr size_t kHelloSize = 8;
struct Hello {
  uint16_t version = kHelloVersion;
  std::optional<uint16_t> channel;  // none in version 1
  void encode(std::byte* out) const noexcept;  // kHelloSize bytes
};
// nullopt unless the magic and a known version (1 or 2) are there.
[[nodiscard]] std::optional<Hello> parse_hello(std::span<const std::byte> in) noexcept;


class VerbsControlServer final : public ReplySink {
 public:
  // The retransmit ring as the sink registered it. The control QPs of clients
  // on the same device share its PD, so the rkey is valid for them; clients on
  // another device get the ring registered in a PD of that device.
  struct Ring {
    ibv_context* context = nullptr;
    ibv_pd* pd = nullptr;
    ibv_mr* mr = nullptr;
    std::span<std::byte> memory;
  };

  // Binds and listens; throws Error naming the address and errno.
  VerbsControlServer(const Options& opts, const Ring& ring, const ServerLimits& limits = {});
  ~VerbsControlServer() override;
  VerbsControlServer(const VerbsControlServer&) = delete;
  VerbsControlServer& operator=(const VerbsControlServer&) = delete;

  // Accepts, receives, serves, sends, cuts. Never blocks. Returns the
  // number of events, completions and frames handled (0: idle).
  size_t poll(ControlHandler& svc, uint64_t now);
  // While held (the port is down: PublisherMedium's LinkWatch says so), a
  // client cut is forgotten but its connection is not closed: closing sends
  // a disconnect request, and on Soft-RoCE a CM message sent through a port
  // that is down was seen to leave the device's RDMA CM unable to connect
  // anyone afterwards. Closed once released.
  void hold_closing(bool hold) noexcept { hold_ = hold; }

  // ReplySink: queues a frame for a client (the service calls this).
  void send(ClientId client, std::vector<std::byte> frame) override;
  // Reply bytes queued for the client and not yet posted.
  [[nodiscard]] size_t queued_bytes(ClientId client) const noexcept override;

  [[nodiscard]] size_t clients() const noexcept { return conns_.size(); }
  [[nodiscard]] const ServerCounters& counters() const noexcept { return counters_; }
  [[nodiscard]] uint16_t port() const noexcept;

  class Connection;  // one client (src/media/verbs/verbs_control_server.cpp)
  struct DeviceCtx;

 private:
  void on_cm_event(ControlHandler& svc, uint64_t now);
  void accept(ControlHandler& svc, rdma_cm_id* id, std::span<const std::byte> private_data, uint64_t now);
  size_t poll_cq(DeviceCtx& d);
  void cut(ClientId c, ControlHandler& svc, const char* why, Counter& reason);
  void mark_cut(ClientId c, Connection& conn, Counter& reason, std::string_view why);
  void serve_ready(ControlHandler& svc, uint64_t now);
  void serve(ClientId c, Connection& conn, ControlHandler& svc, uint64_t now);
  void serve_writable(ControlHandler& svc, uint64_t now);
  void set_admitted(ClientId c, Connection& conn, bool admitted, uint64_t now);
  void note_pending(ClientId c, Connection& conn, ControlHandler& svc);
  void evict_unadmitted(ClientId newcomer);
  void enforce_budget();
  void sweep(ControlHandler& svc, uint64_t now);
  [[nodiscard]] size_t live_count(bool admitted) const noexcept;
  [[nodiscard]] size_t peer_count(uint64_t peer) const noexcept;  // admitted clients from that address
  DeviceCtx& device_for(ibv_context* ctx);
  void log(std::string_view s) const;

  void adopt(ControlHandler& svc, uint64_t now);

  Options opts_;
  Ring ring_;
  ServerCounters counters_;
  EventChannel channel_;
  CmId listen_;  // none when the connections come from a shared endpoint (opts_.control_inbox)
  std::vector<std::unique_ptr<DeviceCtx>> devices_;
  std::unordered_map<ClientId, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> parked_;  // cut while held: closed once released
  bool hold_ = false;
  std::vector<ClientId> to_cut_;  // decided inside service callbacks, acted on after them
  uint64_t last_cm_check_ = 0;
  ClientId next_id_ = 1;
  ServerLimits limits_;
  std::deque<ClientId> ready_;     // clients with frames to handle, round robin
  std::deque<ClientId> writable_;  // clients whose streamed reply may continue
  size_t total_backlog_ = 0;       // every client's queued reply bytes
  size_t frames_left_ = 0;         // of this poll's budget
  uint64_t poll_no_ = 0;
  uint64_t last_sweep_ = 0;
  bool swept_ = false;
};

class VerbsControlClient final : public ControlChannel {
 public:
  // Starts connecting to control_ip:control_port; never throws for an absent
  // publisher (it retries), only for bad options.
  explicit VerbsControlClient(const Options& opts);
  ~VerbsControlClient() override;
  VerbsControlClient(const VerbsControlClient&) = delete;
  VerbsControlClient& operator=(const VerbsControlClient&) = delete;

  // ControlChannel: queues one frame (false while disconnected).
  bool send(std::span<const std::byte> frame) override;
  // By RDMA READ where the ring allows (see above), else over RC.
  bool request_retransmit(uint32_t rid, uint64_t session, uint64_t from, uint32_t count) override;

  // Progresses connection setup, sends, receives and READs. Never blocks.
  size_t poll(uint64_t now);
  // The same, then hands everything that arrived to the engine, in order.
  size_t poll(ControlEvents& e, uint64_t now);

  // What the engine must see, in order (poll(e, now) delivers them; tests
  // may take them with next(), which gives up READ answers).
  struct Inbound {
    enum class Kind : uint8_t { kConnected, kDisconnected, kFrame, kRetransmitted } kind;
    std::vector<std::byte> frame;  // kFrame only
    uint32_t read = 0;             // kRetransmitted: the READ slot whose validated datagrams are the answer
  };
  bool next(Inbound& out);

  // fds to sleep on in adaptive mode (cm events, control completions); -1 if none.
  [[nodiscard]] int cm_fd() const noexcept;
  [[nodiscard]] int completion_fd() const noexcept;
  // Arms the control CQ's completion event; false if work is already waiting.
  bool arm() noexcept;

  [[nodiscard]] bool connected() const noexcept;
  // While held (the port is down: SubscriberMedium's LinkWatch says so), no
  // connection is attempted, and an attempt under way is dropped: nothing
  // can connect, and on Soft-RoCE connection requests sent through a port
  // that is down were seen to leave the device's RDMA CM unable to connect
  // anyone afterwards. Attempts resume when released.
  void hold_connecting(bool hold) noexcept { hold_ = hold; }
  // Request bytes queued but not yet posted (they leave as SENDs complete).
  [[nodiscard]] size_t outbound_backlog() const noexcept;
  [[nodiscard]] std::optional<RingAdvert> ring() const noexcept;
  [[nodiscard]] const ClientCounters& counters() const noexcept { return counters_; }
  [[nodiscard]] const std::string& last_error() const noexcept { return last_error_; }

  struct Conn;  // one connection attempt/lifetime (src/media/verbs/verbs_control_client.cpp)

 private:
  void start_connect(uint64_t now);
  void on_cm_event(uint64_t now);
  void drop_connection(const std::string& why, uint64_t now);
  size_t poll_cq(uint64_t now);
  bool try_read(uint32_t rid, uint64_t session, uint64_t from, uint32_t count);
  void finish_read(uint32_t idx, bool ok);
  void release_read(uint32_t idx) noexcept;
  bool queue_rc(std::span<const std::byte> frame);
  void log(std::string_view s) const;

  Options opts_;
  ClientCounters counters_;
  std::unique_ptr<Conn> conn_;
  std::unique_ptr<Conn> parked_;  // lost with its port: closed once the port is back
  uint64_t next_attempt_ = 0;
  std::deque<Inbound> inbound_;
  std::string last_error_;
  uint64_t connection_gen_ = 0;
  uint64_t last_cm_check_ = 0;
  bool armed_ = false;
  bool hold_ = false;
};

}  // namespace mdcast::media::verbs
