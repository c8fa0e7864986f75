// A control-plane load client: in one process, on one thread, N real
// control connections to a publisher's control endpoint (the shm medium's
// Unix socket, UDP's TCP port), each speaking the protocol of
// wire/control.hpp as a subscriber does: Subscribe (channel and an
// instrument filter), a StatusReport every status interval, and, at low
// rates over all clients together, RetransmitRequests, SnapshotRequests and
// SessionQueries. Replies are read and counted, never interpreted beyond
// that (the clients read no data). Non-blocking sockets in one epoll set.
//
// A client the publisher refused (an Error for its Subscribe, or its
// connection closed before the acknowledgement) or cut (closed after it)
// stays refused or cut: it is counted, never reconnected behind the
// caller's back. `mdcast bench --control-clients N` runs one of these
// against its publisher (docs/performance.md).
//
// Control code: it allocates and may throw Error at setup.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::app::bench {

struct ControlLoadConfig {
  std::string address;                 // "unix:@name", "unix:/path" or "tcp:host:port"
  uint32_t clients = 1024;
  uint16_t channel = 1;
  uint32_t instruments = 1;            // the feed's: client i takes a slice of them
  uint32_t instruments_per_client = 4;
  uint64_t status_interval_ns = 100 * kNsPerMs;  // per client
  // All clients together, requests per second.
  double retransmits_per_s = 20;
  uint32_t retransmit_count = 8;       // datagrams asked for in each
  double snapshots_per_s = 2;
  double session_queries_per_s = 10;
  // Connections opened and not yet acknowledged, at most: a publisher holds
  // few un-admitted connections (control.max_unadmitted, 64) and closes the
  // oldest past that, as it should against a flood.
  uint32_t max_handshakes = 32;
};

// Plain numbers (they travel through the bench's shared board).
struct ControlLoadStats {
  uint64_t clients = 0;           // asked for
  uint64_t connects = 0;          // connections the kernel accepted
  uint64_t connect_failures = 0;  // connect() failed for good (problems() says why)
  uint64_t connect_retries = 0;   // connect() said try again (listen backlog full)
  uint64_t subscribed = 0;        // Subscribe acknowledged
  uint64_t refused = 0;           // an Error for the Subscribe, or closed before its acknowledgement
  uint64_t cut = 0;               // closed by the publisher after the acknowledgement
  uint64_t active = 0;            // subscribed and connected now
  uint64_t pending = 0;           // not settled yet: not opened, connecting or waiting for the acknowledgement
  uint64_t sent_subscribe = 0, sent_status = 0, sent_retransmit = 0, sent_snapshot = 0, sent_session_query = 0;
  uint64_t sent_bytes = 0;
  uint64_t send_dropped = 0;      // frames not sent: the client's socket and buffer were full
  uint64_t replies = 0, reply_bytes = 0;
  uint64_t acks = 0, retransmit_replies = 0, retransmitted_datagrams = 0, snapshot_data = 0, snapshot_done = 0;
  uint64_t session_status = 0, errors = 0, overloaded = 0, unexpected = 0, malformed = 0;
  [[nodiscard]] uint64_t requests_sent() const noexcept {
    return sent_subscribe + sent_status + sent_retransmit + sent_snapshot + sent_session_query;
  }
};

class ControlLoad {
 public:
  // Throws Error for an address it cannot parse or no epoll.
  explicit ControlLoad(ControlLoadConfig cfg);
  ControlLoad(const ControlLoad&) = delete;
  ControlLoad& operator=(const ControlLoad&) = delete;

  // One round: opens connections (while under max_handshakes), waits up to
  // timeout_ms for the sockets, reads and counts replies, sends what is due.
  void poll(uint64_t now, int timeout_ms);
  // Every client is subscribed, or refused or failed for good.
  [[nodiscard]] bool settled() const noexcept;
  // Closes every connection (the publisher sees them leave).
  void close_all() noexcept;

  [[nodiscard]] const ControlLoadStats& stats() const noexcept { return stats_; }
  [[nodiscard]] const ControlLoadConfig& config() const noexcept { return cfg_; }
  // What went wrong, the first few times, in words (refusals carry the
  // publisher's text).
  [[nodiscard]] const std::vector<std::string>& problems() const noexcept { return problems_; }

 private:
  enum class State : uint8_t { kIdle, kConnecting, kSubscribing, kActive, kRefused, kCut, kFailed };
  struct Client {
    UniqueFd fd;
    State state = State::kIdle;
    bool want_out = false;
    uint32_t next_rid = 1;
    uint32_t subscribe_rid = 0;
    uint64_t retry_at = 0;       // kIdle after a connect that said try again
    wire::FrameAssembler in;
    std::vector<std::byte> out;  // what the socket did not take yet
    size_t out_off = 0;
  };

  void open_more(uint64_t now);
  void open(uint32_t i, uint64_t now);
  void connected(uint32_t i);
  void on_readable(uint32_t i);
  void on_writable(uint32_t i);
  void on_frame(uint32_t i, std::span<const std::byte> frame);
  void send(uint32_t i, std::vector<std::byte> frame, uint64_t& counter);
  void flush(uint32_t i);
  void watch(uint32_t i, bool out);
  void finish(uint32_t i, State why, std::string what);
  void send_due(uint64_t now);
  // The next active client from the cursor on, or clients (none active).
  uint32_t next_active(uint32_t& cursor, uint32_t stride) const noexcept;
  void note(std::string what);

  ControlLoadConfig cfg_;
  media::SocketAddress addr_;
  std::vector<Client> c_;
  UniqueFd epoll_;
  uint32_t next_open_ = 0;
  uint32_t handshakes_ = 0;   // kConnecting + kSubscribing
  uint32_t idle_retry_ = 0;   // clients back in kIdle waiting to retry
  uint64_t start_ = 0;        // the schedules' origin (first poll)
  uint64_t statuses_ = 0, retransmits_ = 0, snapshots_ = 0, queries_ = 0;  // due so far
  uint32_t retransmit_cursor_ = 0, snapshot_cursor_ = 0, query_cursor_ = 0;
  uint64_t session_ = 0, newest_ = 0;  // what the publisher last said of its session
  std::vector<std::byte> rbuf_;
  std::vector<std::string> problems_;
  ControlLoadStats stats_;
};

// Raises this process's soft RLIMIT_NOFILE to `needed` descriptors (within
// the hard limit). "" when the limit is enough now; else why not, with the
// numbers and what to change.
[[nodiscard]] std::string raise_open_files(uint64_t needed);

}  // namespace mdcast::app::bench
