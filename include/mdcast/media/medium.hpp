// The seam between the feed engines and a medium. Everything a medium must
// offer, and everything it may assume of the engines, is in this file.
//
//   publisher side                              subscriber side
//   PublisherAgent<M: PublisherMedium>          SubscriberAgent<M: SubscriberMedium, Handler>
//     M::Sink        DatagramSink                 M::Source      DatagramSource
//     poll_control(ControlHandler&)               control()      ControlChannel   (engine -> publisher)
//                    ReplySink (medium -> client) poll_control(ControlEvents&)     (medium -> engine)
//
// Data path: a sink's send and a source's poll are templates or concrete
// member functions, chosen once at setup: no virtual call per datagram. They
// are noexcept and allocation-free; "not now" (kBackPressured, nothing to
// read) is an ordinary result. Control traffic is rare and goes through the
// small virtual interfaces below.
//
// Adding a medium: a folder media/<name>/ with a PublisherMedium and a
// SubscriberMedium that satisfy the concepts at the end of this file
// (static_assert them there) and its counter sections (catalogue.hpp), its
// entry in the list of media (settings/media.hpp), and its tests.
// docs/architecture.md walks through it.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {

// ------------------------------------------------------------- data path --

enum class SendResult : uint8_t {
  kSent,
  kBackPressured,  // not now: the engine keeps the datagram and offers it again, in order
};

// One datagram of a batch handed to a sink.
struct Outgoing {
  std::span<const std::byte> bytes;
  uint64_t sequence;  // 0: unsequenced (a heartbeat)
};

// The publisher's side of a medium. `send` gets sequenced datagrams in order
// (each exactly once unless it answered kBackPressured); the bytes stay valid
// and unchanged until the engine's retransmit ring reuses their slot, so a
// medium may send from them in place (verbs does). `send_unsequenced` gets
// heartbeats, whose bytes are valid during the call only.
template <class S>
concept DatagramSink = requires(S& s, std::span<const std::byte> d, uint64_t seq) {
  { s.send(d, seq) } noexcept -> std::same_as<SendResult>;
  { s.send_unsequenced(d) } noexcept -> std::same_as<SendResult>;
};

// A sink that takes several datagrams at once (sendmmsg, chained work
// requests): returns how many of the batch it took, a prefix, in order.
template <class S>
concept BatchSink = DatagramSink<S> && requires(S& s, std::span<const Outgoing> batch) {
  { s.send_batch(batch) } noexcept -> std::same_as<size_t>;
};

// Which copy of an A/B feed a datagram is (a medium with one rail: kA). The
// engine takes the first copy of each sequence and counts which rail gave it,
// so every source says it, and whatever wraps a source passes it on.
enum class RailId : uint8_t { kA = 0, kB = 1 };

// How a source hands one datagram over: fn(datagram, receive_ns, rail), or
// fn(datagram, receive_ns) to a consumer that has no use for the rail (a
// test, a probe). Resolved at compile time.
template <class Fn>
inline void hand_datagram(Fn& fn, std::span<const std::byte> d, uint64_t receive_ns, RailId rail) noexcept {
  if constexpr (std::is_invocable_v<Fn&, std::span<const std::byte>, uint64_t, RailId>)
    fn(d, receive_ns, rail);
  else
    fn(d, receive_ns);
}

namespace detail {
// What a DatagramSource hands each datagram to (the concept checks against it).
struct DatagramFnArchetype {
  void operator()(std::span<const std::byte> /*datagram*/, uint64_t /*receive_ns*/, RailId /*rail*/) const noexcept {}
};
}  // namespace detail

// The subscriber's side of a medium:
//   size_t poll(Fn&& fn, size_t budget) noexcept
//     hands up to `budget` datagrams to fn(std::span<const std::byte>, uint64_t receive_ns,
//     RailId) through hand_datagram, each valid only during the call (zero copy where the
//     medium allows);
//     returns how many it took off the medium (0: nothing there). A datagram
//     the medium lost on its own (a lapped ring) is counted by the medium.
//   bool block(uint64_t timeout_ns) noexcept
//     sleeps until data may be there or the timeout passed; false when this
//     medium cannot sleep (the caller backs off instead).
template <class S>
concept DatagramSource = requires(S& s, detail::DatagramFnArchetype fn, size_t budget, uint64_t timeout_ns) {
  { s.poll(fn, budget) } noexcept -> std::same_as<size_t>;
  { s.block(timeout_ns) } noexcept -> std::same_as<bool>;
};

// ----------------------------------------------------------- control plane --

using ClientId = uint64_t;

// Where the publisher's control service sends replies to one client. A
// transport that cannot queue a reply (client too slow, buffer limit) cuts
// that client off rather than blocking.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  virtual void send(ClientId client, std::vector<std::byte> frame) = 0;
  // Reply bytes queued for `client` and not yet taken by it. A handler that
  // streams a long reply (a snapshot) produces more only while this stays
  // under its share; a transport without a queue of its own reports 0.
  [[nodiscard]] virtual size_t queued_bytes(ClientId /*client*/) const noexcept { return 0; }
};

// Who is at the other end of a control connection, as its transport knows
// it: for the publisher's view of its subscribers (feed/subscriber_table.hpp),
// never for a decision (admission is the transport's: media/peer.hpp).
struct PeerInfo {
  enum class Kind : uint8_t { kUnknown, kUnix, kTcp };
  Kind kind = Kind::kUnknown;
  uint32_t pid = 0;   // kUnix: the process that connected (SO_PEERCRED)
  uint32_t uid = 0;   // kUnix
  uint32_t ipv4 = 0;  // kTcp: host order
  uint16_t port = 0;  // kTcp
};

// What one ControlHandler::on_frame or on_writable call did: a transport
// counts frames itself, this tells it requests and what they cost.
struct HandlerWork {
  uint32_t requests = 0;  // requests handled (a status report is none)
  uint32_t refused = 0;   // of those, answered with an error (kOverloaded included)
  uint32_t frames = 0;    // reply frames sent
  size_t bytes = 0;       // reply bytes sent
};

// What a publisher's control transport drives (feed::ControlService).
class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void on_connect(ClientId c, uint64_t now) = 0;
  virtual void on_disconnect(ClientId c) = 0;
  // Who client c is, right after on_connect, where the transport knows.
  virtual void on_peer(ClientId /*c*/, const PeerInfo& /*peer*/) {}
  // One whole frame from client c; false: cut the client off.
  virtual bool on_frame(ClientId c, std::span<const std::byte> frame, uint64_t now, ReplySink& out) = 0;
  // Whether client c is through admission (authenticated and subscribed).
  // A transport holds the others to a small cap and a short timeout, so
  // connections that never authenticate cannot lock subscribers out.
  [[nodiscard]] virtual bool admitted(ClientId /*c*/) const noexcept { return true; }
  // Whether the handler has more of a streamed reply for c. A transport calls
  // on_writable when c's queue has drained (see ReplySink::queued_bytes).
  [[nodiscard]] virtual bool has_pending(ClientId /*c*/) const noexcept { return false; }
  virtual void on_writable(ClientId /*c*/, uint64_t /*now*/, ReplySink& /*out*/) {}
  // What the last on_frame or on_writable call did.
  [[nodiscard]] virtual HandlerWork last_work() const noexcept { return {}; }
};

// How a subscriber's engine talks to the publisher.
class ControlChannel {
 public:
  virtual ~ControlChannel() = default;
  // Queues one frame; false if it cannot (disconnected, backlog full): the
  // request times out and is retried.
  virtual bool send(std::span<const std::byte> frame) = 0;
  // Asks for datagrams [from, from + count) of `session`. A medium that can
  // fetch them itself (RDMA READ of the publisher's ring) overrides this and
  // answers through ControlEvents::on_retransmitted; the default sends the
  // request to the publisher (encoded on the stack: the engine's control
  // round allocates nothing of its own).
  virtual bool request_retransmit(uint32_t rid, uint64_t session, uint64_t from, uint32_t count) {
    std::array<std::byte, wire::ctl::kSmallFrame> f;
    const size_t n = wire::encode_control(rid, wire::RetransmitRequest{session, from, count}, f);
    return send(std::span<const std::byte>(f.data(), n));
  }
};

// What a subscriber's control transport reports to the engine, on the
// engine's thread, from inside SubscriberMedium::poll_control.
class ControlEvents {
 public:
  virtual ~ControlEvents() = default;
  virtual void on_control_connected(uint64_t now) noexcept = 0;
  virtual void on_control_disconnected() noexcept = 0;
  virtual void on_control_frame(std::span<const std::byte> frame, uint64_t now) noexcept = 0;
  // The peer of the current connection failed the engine's handshake (it
  // could not prove it knows the subscriber's secret): a medium that chose
  // the address itself (an announcement) leaves it rather than wait on it.
  [[nodiscard]] virtual bool control_peer_failed() const noexcept { return false; }
  // The answer to request_retransmit(rid, ...) that the medium fetched
  // itself: whole datagrams, oldest first, valid during the call. Handled as
  // a RetransmitReply from the publisher would be, without encoding one.
  virtual void on_retransmitted(uint32_t rid, uint64_t session, std::span<const std::span<const std::byte>> datagrams,
                                uint64_t now) noexcept = 0;
  // The highest sequence the engine knows the publisher has sent (from data,
  // heartbeats or the subscription's acknowledgement): a medium that hears no
  // data while this grows can say why (wrong group or key) in words.
  [[nodiscard]] virtual uint64_t publisher_position() const noexcept { return 0; }

};

// ---------------------------------------------------------------- counters --

// A medium's own counters, for counters files, result files and `mdcast stat`.
struct CounterGroup {
  std::string prefix;                 // "shm", "sink", "rx" ...
  std::span<const CounterInfo> info;  // names
  const Counter* values;              // info.size() counters
};
template <class C>
CounterGroup counter_group(std::string prefix, const C& c) {
  return {std::move(prefix), C::kInfo, c.begin()};
}

// ---------------------------------------------------------------- fitting --

// What a publisher's engine asks of its medium, and what the medium makes of
// it (PublisherMedium::configure): the datagram size it carries, the size of
// the retransmit history where the medium hosts that memory. configure
// throws Error, naming the setting, on a mismatch the operator must fix.
struct PublisherFit {
  size_t max_datagram = 0;      // 0: the largest the medium carries
  size_t retransmit_bytes = 0;  // the history's size; a medium that hosts it says how large it is
  uint32_t max_unsent = 0;      // datagrams the engine may hold back before it back-pressures
  uint64_t session = 0;         // the engine's; a medium built for a session (shm, udp) refuses another
  // Whether anyone but the publisher could put datagrams on the data path
  // (a multicast group can be sent to by anyone on the fabric): then a feed
  // with secrets tags its data. The shm ring says no: only its owner writes it.
  bool open_data_plane = true;
};

// The same for a subscriber's engine: the largest datagram it must accept,
// and the waits and window a medium's delivery needs (two rails reorder, a
// control plane over TCP is late rather than lost).
struct SubscriberFit {
  size_t max_datagram = 0;
  uint64_t reorder_wait_ns = 0;
  uint64_t request_timeout_ns = 0;
  size_t window_bytes = 0;
  // False where no one but the publisher can write what the subscriber
  // reads (a ring only its owner writes): sequences need no confirming.
  bool open_data_plane = true;
};

// --------------------------------------------------------------- a medium --

// The publisher's half of a medium.
//   Sink& sink()                     the data path
//   span<byte> ring_memory()         where the engine's retransmit ring lives (empty: the engine allocates it)
//   PublisherFit configure(fit)      what the medium decides: max_datagram, ring size; throws Error on a mismatch
//   size_t poll_control(h, now)      accept/serve control clients and keep the medium up; returns work done
//   size_t clients()                 control clients connected
template <class M>
concept PublisherMedium = requires(M& m, const M& cm, const PublisherFit& fit, ControlHandler& h,
                                   uint64_t now) {
  typename M::Sink;
  requires DatagramSink<typename M::Sink>;
  { m.sink() } noexcept -> std::same_as<typename M::Sink&>;
  { m.ring_memory() } noexcept -> std::same_as<std::span<std::byte>>;
  { cm.configure(fit) } -> std::same_as<PublisherFit>;
  { m.poll_control(h, now) } -> std::same_as<size_t>;
  { cm.clients() } noexcept -> std::convertible_to<size_t>;
  { cm.describe() } -> std::convertible_to<std::string>;
  { cm.counter_groups() } -> std::same_as<std::vector<CounterGroup>>;
};

// The subscriber's half of a medium.
//   Source& source()                 the data path
//   ControlChannel& control()        requests to the publisher
//   SubscriberFit configure(fit)     what the medium decides (max_datagram, waits, window)
//   void start()                     the duty loop begins: position the reader (history comes by recovery)
//   size_t poll_control(e, now)      connect, exchange frames, keep the medium up; returns work done
//   uint64_t lost_datagrams()        lost before the engine saw them (a lapped ring, a kernel or queue drop,
//                                    injected loss), as far as the medium can tell; the engine recovers them
template <class M>
concept SubscriberMedium = requires(M& m, const M& cm, const SubscriberFit& fit, ControlEvents& e,
                                    uint64_t now) {
  typename M::Source;
  requires DatagramSource<typename M::Source>;
  { m.source() } noexcept -> std::same_as<typename M::Source&>;
  { m.control() } noexcept -> std::convertible_to<ControlChannel&>;
  { cm.configure(fit) } -> std::same_as<SubscriberFit>;
  m.start();
  { m.poll_control(e, now) } -> std::same_as<size_t>;
  { cm.describe() } -> std::convertible_to<std::string>;
  { cm.counter_groups() } -> std::same_as<std::vector<CounterGroup>>;
  { cm.lost_datagrams() } noexcept -> std::convertible_to<uint64_t>;
};

// Optional for a subscriber medium: bool link_down() const noexcept, true
// while this host's own link to the fabric is down on every rail (the UDP
// medium watches its interfaces). Nothing can arrive then, so silence says
// nothing of the publisher: the subscriber agent does not judge it while
// this holds (feed::SubscriberAgentOptions::link_down_hold_ns bounds that).
// A medium without it never says so.
template <class M>
[[nodiscard]] bool own_link_down(const M& m) noexcept {
  if constexpr (requires {
                  { m.link_down() } noexcept -> std::convertible_to<bool>;
                })
    return m.link_down();
  else
    return false;
}

// The one control endpoint a publisher of several channels listens on: it
// takes each connection, reads which channel it asks for, and hands it to that
// channel's medium through the channel's inbox (a medium's options take it).
//   Inbox add_channel(id)            channel `id`'s inbox; throws Error for one added twice
//   size_t wait(ns)                  routes what arrived, waiting up to ns; returns work done
//   CounterGroup counter_group()     its counters ("door")
template <class D>
concept ControlDoor = requires(D& d, const D& cd, uint16_t channel, uint64_t ns) {
  d.add_channel(channel);
  { d.wait(ns) } -> std::convertible_to<size_t>;
  { cd.counter_group() } -> std::same_as<CounterGroup>;
};

}  // namespace mdcast::media
