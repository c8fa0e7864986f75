// The in-memory medium: a "multicast group" (Bus) that really copies every
// datagram into a bounded receive queue per subscriber (Endpoint), and an
// in-memory control plane (ControlHub, one ControlLink per subscriber) that
// carries whole frames both ways. A queue overflows when its reader is slow:
// that loss is the medium's own, counted, like a socket buffer's.
//
// Faults are not this medium's business: wrap an Endpoint in
// media::fault::FaultySource (or a SubscriberMedium in FaultyMedium), as for
// any other medium.
//
//   media::mem::PublisherMedium pub;                       // the group and the control hub
//   feed::PublisherAgent pa(pub, publisher_config);
//   media::mem::SubscriberMedium sub(pub);                 // an endpoint and a control link
//   feed::SubscriberAgent sa(sub, subscriber_config, handler);
//
// Single-threaded: publisher and subscribers run on one thread (the tests'),
// which is what keeps it deterministic for a seed. Nothing here reads a clock
// except for receive times, and those come from a clock the owner may inject
// (a component test's virtual clock); the default is CLOCK_MONOTONIC.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::mem {

struct EndpointOptions {
  size_t queue_capacity = 4096;               // datagrams; beyond: dropped (slow reader), counted
  size_t max_datagram = wire::kMaxDatagram;   // a queue slot; a larger datagram is dropped, counted
  const uint64_t* clock = nullptr;            // receive times: this virtual clock; null: CLOCK_MONOTONIC
};

#define MDCAST_MEM_ENDPOINT_COUNTERS(X)                                        \
  X(offered, "datagrams the bus copied towards this endpoint")                \
  X(queued, "datagrams queued for the reader")                                \
  X(overflowed, "datagrams dropped: the queue was full (slow reader)")        \
  X(oversized, "datagrams dropped: larger than a queue slot")                 \
  X(discarded, "queued datagrams dropped when the reader started at the live edge")
MDCAST_DEFINE_COUNTER_STRUCT(EndpointCounters, MDCAST_MEM_ENDPOINT_COUNTERS);

// One receiver's bounded queue; a media::DatagramSource.
class Endpoint {
 public:
  explicit Endpoint(const EndpointOptions& o = {});
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Hands queued datagrams to fn(span, receive_ns), oldest first. All taken
  // in one poll share one receive time: for this medium "arrival" is the
  // reader looking, so the clock is read once per poll.
  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    if (count_ == 0 || budget == 0) return 0;
    const uint64_t rx = clock_ ? *clock_ : monotonic_ns();
    size_t n = 0;
    for (; n < budget && count_ > 0; ++n) {
      hand_datagram(fn, std::span<const std::byte>(slot(head_), len_[head_]), rx, RailId::kA);
      // Freed after the call: the span stays valid even if fn makes the bus send.
      head_ = head_ + 1 == cap_ ? 0 : head_ + 1;
      --count_;
    }
    return n;
  }
  // Nothing to sleep on: whoever would fill the queue runs on this thread.
  bool block(uint64_t) noexcept { return false; }

  void push(std::span<const std::byte> d) noexcept;  // the bus copies in here
  void clear() noexcept;                             // drops what is queued (counted as discarded)
  [[nodiscard]] size_t depth() const noexcept { return count_; }
  [[nodiscard]] size_t capacity() const noexcept { return cap_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return slot_; }
  [[nodiscard]] const EndpointCounters& counters() const noexcept { return counters_; }
  // Lost by the medium itself before any reader saw them.
  [[nodiscard]] uint64_t lost_datagrams() const noexcept {
    return counters_.overflowed.get() + counters_.oversized.get();
  }

 private:
  std::byte* slot(size_t i) noexcept { return mem_.get() + i * slot_; }

  size_t cap_;
  size_t slot_;
  const uint64_t* clock_;
  std::unique_ptr<std::byte[]> mem_;
  std::unique_ptr<uint32_t[]> len_;
  size_t head_ = 0, count_ = 0;
  EndpointCounters counters_;
};
static_assert(DatagramSource<Endpoint>);

#define MDCAST_MEM_BUS_COUNTERS(X)                                  \
  X(datagrams, "sequenced datagrams sent to the group")            \
  X(heartbeats, "unsequenced datagrams (heartbeats) sent to the group")
MDCAST_DEFINE_COUNTER_STRUCT(BusCounters, MDCAST_MEM_BUS_COUNTERS);

// The group: send() copies into every attached endpoint and never pushes
// back (a slow reader overflows its own queue, as on a real network).
class Bus {
 public:
  Bus() = default;
  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;

  Endpoint& attach(const EndpointOptions& o = {});
  void detach(const Endpoint& e) noexcept;
  SendResult send(std::span<const std::byte> d, uint64_t) noexcept {
    counters_.datagrams.add();
    fan_out(d);
    return SendResult::kSent;
  }
  SendResult send_unsequenced(std::span<const std::byte> d) noexcept {
    counters_.heartbeats.add();
    fan_out(d);
    return SendResult::kSent;
  }
  [[nodiscard]] size_t endpoints() const noexcept { return endpoints_.size(); }
  [[nodiscard]] const BusCounters& counters() const noexcept { return counters_; }

 private:
  void fan_out(std::span<const std::byte> d) noexcept {
    for (auto& e : endpoints_) e->push(d);
  }
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  BusCounters counters_;
};
static_assert(DatagramSink<Bus>);

// ----------------------------------------------------------- control plane --

#define MDCAST_MEM_CONTROL_COUNTERS(X)                                       \
  X(connects, "control links the publisher's service learnt of")            \
  X(disconnects, "control links the publisher's service saw go")            \
  X(frames_in, "control frames delivered to the publisher's service")       \
  X(frames_out, "control frames queued for subscribers")                    \
  X(writable_calls, "on_writable calls: a streamed reply continued once a queue was empty") \
  X(requests_dropped, "control frames lost on purpose before the publisher saw them")
MDCAST_DEFINE_COUNTER_STRUCT(ControlCounters, MDCAST_MEM_CONTROL_COUNTERS);

// A control connection between one subscriber and the publisher's service.
class ControlHub;
class ControlLink : public ControlChannel {
 public:
  bool send(std::span<const std::byte> frame) override;
  [[nodiscard]] bool up() const noexcept { return up_; }
  // Changes each time the publisher's end is a new one (a restarted
  // publisher): the subscriber's end sees a reconnect.
  [[nodiscard]] uint64_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] ClientId id() const noexcept { return id_; }
  // Frames the publisher sent to this subscriber, oldest first.
  bool pop_reply(std::vector<std::byte>& out);
  // Reply bytes queued for this subscriber and not yet popped.
  [[nodiscard]] size_t queued_bytes() const noexcept { return queued_; }

 private:
  friend class ControlHub;
  ControlHub* hub_ = nullptr;
  ClientId id_ = 0;
  bool up_ = true;
  bool known_ = false;  // the service was told of this link (on_connect) and not yet of its end
  uint64_t epoch_ = 0;
  double drop_ = 0;     // probability a request is lost before the publisher sees it: exercises timeouts
  std::deque<std::vector<std::byte>> to_pub_, to_sub_;
  size_t queued_ = 0;  // bytes in to_sub_
};

class ControlHub final : public ReplySink {
 public:
  explicit ControlHub(uint64_t seed = 7) : rng_(seed) {}
  ControlHub(const ControlHub&) = delete;
  ControlHub& operator=(const ControlHub&) = delete;

  ControlLink& connect(double drop_probability = 0);
  void disconnect(ControlLink& l) noexcept;  // the service hears of it on the next pump
  // Tells the service of links that came and went, delivers queued
  // requests to it, and continues a streamed reply (on_writable) for a link
  // whose reply queue its subscriber has emptied. Returns the connections,
  // disconnections, frames and on_writable calls handled.
  size_t pump(ControlHandler& svc, uint64_t now);
  void send(ClientId c, std::vector<std::byte> frame) override;
  // Unbounded here (one thread, the test's): the handler's own share is what
  // limits a streamed reply.
  [[nodiscard]] size_t queued_bytes(ClientId c) const noexcept override;
  // A restarted publisher: what was in flight is gone, every live link
  // reconnects to the fresh service.
  void reset_service() noexcept;
  [[nodiscard]] size_t clients() const noexcept;
  [[nodiscard]] const ControlCounters& counters() const noexcept { return counters_; }

 private:
  friend class ControlLink;
  Rng rng_;
  std::vector<std::unique_ptr<ControlLink>> links_;
  ClientId next_ = 1;
  ControlCounters counters_;
};

// -------------------------------------------------------------- a medium --

struct PublisherOptions {
  size_t max_datagram = wire::kMaxDatagram;  // the largest datagram the publisher may send
  uint64_t control_seed = 7;                 // decides which control requests are dropped
};

// The publisher's half: the group and the control hub. Subscriber media
// attach to it, so it outlives them.
class PublisherMedium {
 public:
  using Sink = Bus;

  explicit PublisherMedium(const PublisherOptions& o = {}) : opts_(o), hub_(o.control_seed) {}
  PublisherMedium(const PublisherMedium&) = delete;
  PublisherMedium& operator=(const PublisherMedium&) = delete;

  Sink& sink() noexcept { return bus_; }
  std::span<std::byte> ring_memory() noexcept { return {}; }  // the engine keeps its own retransmit ring
  // max_datagram: 0 = the medium's; more than the medium's is an Error.
  [[nodiscard]] PublisherFit configure(PublisherFit c) const;
  size_t poll_control(ControlHandler& h, uint64_t now) { return hub_.pump(h, now); }
  [[nodiscard]] size_t clients() const noexcept { return hub_.clients(); }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  [[nodiscard]] Bus& bus() noexcept { return bus_; }
  [[nodiscard]] ControlHub& hub() noexcept { return hub_; }
  [[nodiscard]] const PublisherOptions& options() const noexcept { return opts_; }

 private:
  PublisherOptions opts_;
  Bus bus_;
  ControlHub hub_;
};

struct SubscriberOptions {
  EndpointOptions endpoint;
  double control_drop = 0;  // probability each request to the publisher is lost
};

// The subscriber's half: an endpoint on the publisher's bus and a control
// link to its hub; both go when this does.
class SubscriberMedium {
 public:
  using Source = Endpoint;

  explicit SubscriberMedium(PublisherMedium& pub, const SubscriberOptions& o = {});
  SubscriberMedium(const SubscriberMedium&) = delete;
  SubscriberMedium& operator=(const SubscriberMedium&) = delete;
  ~SubscriberMedium();

  Source& source() noexcept { return *endpoint_; }
  ControlChannel& control() noexcept { return *link_; }
  // max_datagram: 0 = what a queue slot holds.
  [[nodiscard]] SubscriberFit configure(SubscriberFit c) const;
  // At the live edge: what queued up before the loop began is dropped (the
  // engine recovers history through the control plane, as on every medium).
  void start() noexcept { endpoint_->clear(); }
  // Reports the link coming up or going (or a restarted publisher), then
  // delivers the replies queued for this subscriber. Returns events handled.
  size_t poll_control(ControlEvents& e, uint64_t now);
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  [[nodiscard]] const Endpoint& endpoint() const noexcept { return *endpoint_; }
  [[nodiscard]] ControlLink& link() noexcept { return *link_; }
  [[nodiscard]] uint64_t lost_datagrams() const noexcept { return endpoint_->lost_datagrams(); }

 private:
  PublisherMedium& pub_;
  Endpoint* endpoint_;
  ControlLink* link_;
  bool reported_up_ = false;
  uint64_t epoch_ = 0;
  std::vector<std::byte> frame_;
};

static_assert(media::PublisherMedium<mem::PublisherMedium>);
static_assert(media::SubscriberMedium<mem::SubscriberMedium>);

}  // namespace mdcast::media::mem
