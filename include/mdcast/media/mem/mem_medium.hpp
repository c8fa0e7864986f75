// The in-memory medium: a "multicast group" that really copies bytes into a
// bounded receive queue per subscriber, with injectable faults per receiver -
// random and burst loss, reordering, duplication, truncation, corruption, and
// a queue that overflows when its reader is slow. Plus an in-memory control
// link that carries whole frames both ways.
//
// Everything is single-threaded and deterministic for a given seed: component
// tests drive it with a virtual clock.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "mdcast/core/rng.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::mem {

struct FaultProfile {
  uint64_t seed = 1;
  double loss = 0;              // probability each datagram is lost
  uint64_t burst_every = 0;     // every this many datagrams ...
  uint32_t burst_length = 0;    // ... this many in a row are lost
  uint64_t burst_start = 0;     // first burst after this many datagrams
  double reorder = 0;           // probability a datagram is held back ...
  uint32_t reorder_depth = 4;   // ... until this many later ones passed it
  double duplicate = 0;         // probability of a second copy
  double truncate = 0;          // probability of losing a random tail
  double corrupt = 0;           // probability of one flipped byte
  size_t queue_capacity = 4096; // datagrams; beyond: dropped (slow reader)
};

struct EndpointStats {
  uint64_t offered = 0, queued = 0, lost = 0, burst_lost = 0, overflowed = 0, duplicated = 0, reordered = 0,
           truncated = 0, corrupted = 0;
};

// One receiver's queue.
class Endpoint {
 public:
  explicit Endpoint(const FaultProfile& f);
  // Next datagram, valid until the next pop(). False when empty.
  bool pop(std::span<const std::byte>& out) noexcept;
  [[nodiscard]] size_t depth() const noexcept { return count_; }
  [[nodiscard]] const EndpointStats& stats() const noexcept { return stats_; }
  void set_profile(const FaultProfile& f) noexcept { f_ = f; }
  void offer(std::span<const std::byte> d) noexcept;  // the bus calls this
  void flush_held() noexcept;                         // release reordered datagrams now

 private:
  void push(std::span<const std::byte> d) noexcept;
  FaultProfile f_;
  Rng rng_;
  EndpointStats stats_;
  size_t cap_;
  std::unique_ptr<std::byte[]> mem_;
  std::unique_ptr<uint16_t[]> len_;
  size_t head_ = 0, count_ = 0;
  std::vector<std::byte> scratch_;
  struct Held {
    std::vector<std::byte> bytes;
    uint32_t release_after;
  };
  std::deque<Held> held_;
  uint64_t burst_left_ = 0;
};

// The group: send() copies into every attached endpoint. Satisfies DatagramSink.
class Bus {
 public:
  Endpoint& attach(const FaultProfile& f);
  void detach(const Endpoint& e);
  SendResult send(std::span<const std::byte> d, uint64_t) noexcept {
    for (auto& e : endpoints_) e->offer(d);
    return SendResult::kSent;
  }
  SendResult send_unsequenced(std::span<const std::byte> d) noexcept { return send(d, 0); }

 private:
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
};
static_assert(DatagramSink<Bus>);

// A control connection between one subscriber and the publisher's service.
class ControlHub;
class ControlLink : public ControlChannel {
 public:
  bool send(std::span<const std::byte> frame) override;
  [[nodiscard]] bool up() const noexcept { return up_; }
  // Frames the publisher sent to this subscriber, oldest first.
  bool pop_reply(std::vector<std::byte>& out);

 private:
  friend class ControlHub;
  ControlHub* hub_ = nullptr;
  ClientId id_ = 0;
  bool up_ = true;
  double drop_ = 0;  // probability a request is lost before the publisher sees it: exercises timeouts
  std::deque<std::vector<std::byte>> to_pub_, to_sub_;
};

class ControlHub : public ReplySink {
 public:
  explicit ControlHub(uint64_t seed = 7) : rng_(seed) {}
  ControlLink& connect(double drop_probability = 0);
  void disconnect(ControlLink& l);  // the publisher sees a disconnect
  // Delivers queued requests to the service.
  void pump(ControlHandler& svc, uint64_t now);
  void send(ClientId c, std::vector<std::byte> frame) override;
  // A restarted publisher: every link reconnects to a fresh service.
  void reset_service() noexcept { for (auto& l : links_) l->to_pub_.clear(), l->up_ = true; }

 private:
  friend class ControlLink;
  Rng rng_;
  std::vector<std::unique_ptr<ControlLink>> links_;
  ClientId next_ = 1;
};

}  // namespace mdcast::media::mem
