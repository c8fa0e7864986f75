// The shared-memory medium, whole: what an application needs to publish or
// subscribe on one host. The ring (shm_ring.hpp) carries the data, a Unix
// stream socket in the abstract namespace the control plane
// (media/stream), and this file keeps them up: the writer's liveness stamp,
// reattaching readers to a restarted publisher's ring.
//
//   media::shm::Options o; o.name = "feed1";
//   media::shm::PublisherMedium medium(o, session);       // creates the ring, listens
//   feed::PublisherAgent agent(medium, publisher_config, control_config);
//
//   media::shm::SubscriberMedium medium(o);               // waits for the ring, connects
//   feed::SubscriberAgent agent(medium, subscriber_config, handler);
//
// Trust: the ring's file is checked before it is read (shm_ring.hpp); the
// control socket's name is unguessable (64 random bits) and published in the
// ring's header; and a subscriber sends nothing on a control connection
// before the socket's peer (SO_PEERCRED) proves to be the ring's writer:
// its pid and uid. A peer that is not is refused, counted
// (shm.peer_refused) and reported through Options::log.
//
// Setup throws mdcast::Error naming the ring file or the control address.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/media/stream/front_door.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::shm {

struct Options {
  std::string name = "mdcast";     // ring mdcast-<name>.ring; control socket @mdcast/<name>.<random>
  std::string dir;                 // "" = /dev/hugepages when huge pages are reserved, else /dev/shm
  size_t slots = 16384;            // the ring holds this many of the largest datagrams, more smaller ones
  size_t max_datagram = 4032;      // the largest record is 16 + this, rounded up to 64 (4096 by default)
  bool huge_pages = true;          // try hugetlbfs first
  uint16_t channel = 1;
  std::string control;             // control address; "" = an unguessable unix:@mdcast/<name>.<64 random bits>
                                   // (a subscriber: what the ring names)
  uint64_t wait_ns = 10 * kNsPerSec;  // a subscriber waits this long for the ring to appear
  // Asked while it waits: true ends the wait at once (an application's
  // SIGINT/SIGTERM flag), with an Error that says so.
  std::function<bool()> cancelled;
  // Publisher: "" = the ring is this user's alone (0600); a group (name or
  // number) whose members may read it (0640).
  std::string group;
  // Publisher: rings larger than this are refused before anything is allocated.
  uint64_t max_bytes = uint64_t{4} << 30;
  // Publisher: subscribers that can block when idle (a reader slot each, 16
  // bytes); the others read too, backing off instead (RingOptions::readers).
  size_t readers = kDefaultReaderSlots;
  // Subscriber: the user (name or uid) whose ring it trusts; "" = its own.
  std::string publisher_user;
  // Where a subscriber reports what it refused (a control peer that is not
  // the ring's writer); null: stderr, prefixed "mdcast-shm: ".
  std::function<void(std::string_view)> log;
  // Publisher: what its control socket allows one client (docs/security.md).
  StreamServerConfig control_server;
  // Subscriber: a second ring, read as rail B: the feed's other member in a
  // publisher pair (docs/architecture.md, "Publisher pairs"), publishing the
  // same session under this name. "" = none.
  std::string rail_b;
  // Publisher of one channel of several: its control connections come from
  // a ControlFrontDoor listening at `control` (every channel's ring names
  // that one address); null: it listens on a socket of its own.
  std::shared_ptr<ConnectionInbox> control_inbox;
};

// o.control if set, else "unix:@mdcast/<name>.<16 hex digits from getrandom>":
// a name no one can bind first, since no one can guess it. Throws Error if
// the system has no randomness to give.
[[nodiscard]] std::string new_control_address(const Options& o);

// A feed over several channels: channel index k has its own ring,
// "<feed>.<k>" (what `mdcast subscribe --channels N` opens); a feed of one
// channel, its own name.
[[nodiscard]] std::string channel_ring_name(std::string_view feed, uint32_t channels, uint32_t index);

// The one control endpoint a feed's channels share (a media::ControlDoor;
// each ring names its address): at o.control, else a new unguessable
// abstract name for feed o.name. The publisher of channel index k gets
// door->add_channel(id) as Options::control_inbox and door->address() as
// Options::control. Throws Error.
[[nodiscard]] std::unique_ptr<ControlFrontDoor> open_control_door(const Options& o, const FrontDoorConfig& cfg = {});

#define MDCAST_SHM_READER_COUNTERS(X)                                                           \
  X(lapped, "datagrams lost because the ring writer lapped this reader")                       \
  X(laps, "times the ring writer lapped this reader")                                          \
  X(reattached, "rings attached after the start: a restarted publisher's, a pair member's")          \
  X(implausible_position, "ring positions the records did not back (corruption): never followed") \
  X(peer_refused, "control connections refused: the peer was not the ring's writer")                  \
  X(control_moved, "control connections moved to the other member's ring writer (a publisher pair): its own went away")
MDCAST_DEFINE_COUNTER_STRUCT(ReaderCounters, MDCAST_SHM_READER_COUNTERS);

class PublisherMedium {
 public:
  using Sink = ShmSink;

  // Listens on the control address, then creates the ring. Throws Error.
  PublisherMedium(const Options& o, uint64_t session);
  PublisherMedium(const PublisherMedium&) = delete;
  PublisherMedium& operator=(const PublisherMedium&) = delete;

  Sink& sink() noexcept { return sink_; }
  // The engine's retransmit ring is the shm ring: each datagram is built
  // once, in the record readers read it from.
  std::span<std::byte> ring_memory() noexcept { return ring_.ring_memory(); }
  // max_datagram: 0 = the largest the ring holds; more is an Error. retransmit_bytes:
  // the ring's (shm.slots decides the history a publisher keeps).
  [[nodiscard]] PublisherFit configure(PublisherFit c) const;
  size_t poll_control(ControlHandler& h, uint64_t now);
  [[nodiscard]] size_t clients() const noexcept { return server_.clients(); }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  [[nodiscard]] const RingWriter& ring() const noexcept { return ring_; }
  [[nodiscard]] const StreamControlServer& server() const noexcept { return server_; }

 private:
  StreamControlServer server_;
  RingWriter ring_;
  Sink sink_;
  uint64_t session_;  // in the ring header; the engine's must be the same (configure)
};

// One ring a subscriber reads: rail A (Options::name) and, for a publisher
// pair, rail B (Options::rail_b), each written by one member.
struct ReaderRail {
  std::string name;
  std::optional<RingReader> reader;  // rail B: empty until a live member's ring is there
  uint64_t lapped_seen = 0;          // of this reader (a new one starts at 0)
  uint64_t implausible_seen = 0;
};

// Datagrams from the ring(s), each copied out of its record (the seqlock
// needs the copy) into one buffer and handed over from there.
class RingSource {
 public:
  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    if (!two_) [[likely]]
      return read(rails_[0], RailId::kA, fn, budget);
    // Two members' rings: each goes first in turn, so a busy one never
    // starves the other into being lapped.
    first_ ^= 1;
    const int a = first_, b = first_ ^ 1;
    size_t n = read(rails_[a], static_cast<RailId>(a), fn, budget);
    if (n < budget) n += read(rails_[b], static_cast<RailId>(b), fn, budget - n);
    return n;
  }
  // One ring: until its writer publishes. Two: a futex waits on one word,
  // so on the ring heard last and briefly, to look at the other soon (a
  // member that died leaves its ring silent).
  bool block(uint64_t timeout_ns) noexcept {
    if (!two_) [[likely]]
      return rails_[0].reader->wait(timeout_ns);
    ReaderRail& r = rails_[heard_].reader ? rails_[heard_] : rails_[heard_ ^ 1];
    return r.reader && r.reader->wait(std::min(timeout_ns, kTwoRingNapNs));
  }

 private:
  friend class SubscriberMedium;
  static constexpr uint64_t kTwoRingNapNs = 1'000'000;
  RingSource(ReaderRail* rails, bool two, ReaderCounters& c) : rails_(rails), counters_(&c), two_(two) {}

  template <class Fn>
  size_t read(ReaderRail& rail, RailId id, Fn& fn, size_t budget) noexcept {
    if (!rail.reader) return 0;
    RingReader& r = *rail.reader;
    size_t n = 0;
    size_t len = 0;
    while (n < budget) {
      const auto res = r.read(buf_.get(), len);
      if (res == RingReader::Read::kEmpty) break;
      if (res == RingReader::Read::kLapped) {
        counters_->laps.add();
        counters_->lapped.add(r.lapped() - rail.lapped_seen);
        rail.lapped_seen = r.lapped();
        continue;
      }
      ++n;
      hand_datagram(fn, std::span<const std::byte>(buf_.get(), len), monotonic_ns(), id);
    }
    if (n) heard_ = static_cast<int>(id);
    if (r.implausible() != rail.implausible_seen) [[unlikely]]
      sync_implausible(rail);
    return n;
  }
  void sync_implausible(ReaderRail& rail) noexcept {
    if (!rail.reader) return;
    const uint64_t v = rail.reader->implausible();
    if (v != rail.implausible_seen) counters_->implausible_position.add(v - rail.implausible_seen);
    rail.implausible_seen = v;
  }
  ReaderRail* rails_;                 // the medium's two; [0] always engaged with one ring
  ReaderCounters* counters_;
  bool two_;
  int first_ = 0;
  int heard_ = 0;                     // the rail whose ring delivered last
  std::unique_ptr<std::byte[]> buf_ = std::make_unique<std::byte[]>(wire::kMaxDatagram);
};

class SubscriberMedium {
 public:
  using Source = RingSource;

  // Waits up to o.wait_ns for a ring of the publisher's user (o.publisher_user)
  // to appear (with o.rail_b: either member's, whose writer lives), then
  // starts connecting to the control address its header names (or
  // o.control). Throws Error.
  explicit SubscriberMedium(const Options& o);
  SubscriberMedium(const SubscriberMedium&) = delete;
  SubscriberMedium& operator=(const SubscriberMedium&) = delete;

  Source& source() noexcept { return source_; }
  // Frames go out only on a connection whose peer proved to be the ring's writer.
  ControlChannel& control() noexcept { return channel_; }
  // Only the ring's owner writes it (docs/security.md 3): nothing to confirm.
  [[nodiscard]] SubscriberFit configure(SubscriberFit c) const {
    c.open_data_plane = false;
    return c;
  }
  // Read from the writer's current position on; history comes by recovery.
  void start() noexcept {
    for (auto& r : rails_)
      if (r.reader) r.reader->seek_to_writer();
  }
  // Connects, checks the peer before anything is said (the engine hears of
  // the connection only then), exchanges frames, follows a restarted writer;
  // with two rings, attaches a member's ring when it appears and moves the
  // control connection to the other member when its own went away.
  size_t poll_control(ControlEvents& e, uint64_t now);
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  // The ring the control connection goes to's writer (rail A's without rail B).
  [[nodiscard]] const RingReader& reader() const noexcept { return *rails_[ctl_].reader; }
  [[nodiscard]] const ReaderCounters& counters() const noexcept { return counters_; }
  // Datagrams this medium lost before the engine saw them (lapped).
  [[nodiscard]] uint64_t lost_datagrams() const noexcept { return counters_.lapped.get(); }
  // Why the last control peer was refused; empty if none was.
  [[nodiscard]] const std::string& peer_error() const noexcept { return peer_error_; }

 private:
  // The engine's side of the control connection: silent until the peer is verified.
  class WriterChannel final : public ControlChannel {
   public:
    bool send(std::span<const std::byte> frame) override { return verified && client->send(frame); }
    StreamControlClient* client = nullptr;
    bool verified = false;
  };

  enum class Peer : uint8_t { kWriter, kRefused, kStale };
  Peer check_peer();
  [[nodiscard]] std::string control_of(int rail) const;
  void follow_restarted_writer(ReaderRail& rail, ControlEvents& e);
  void attach(ReaderRail& rail);
  [[nodiscard]] bool lives(int rail) const;
  void move_control(int to, ControlEvents& e, uint64_t now);
  void log(std::string_view what) const;

  Options opts_;
  uid_t owner_;                    // whose rings this subscriber trusts
  ReaderCounters counters_;
  ReaderRail rails_[2];
  bool two_;
  int ctl_ = 0;                    // the rail whose writer the control connection goes to
  std::unique_ptr<StreamControlClient> client_;
  WriterChannel channel_;
  RingSource source_{rails_, two_, counters_};
  uint64_t last_check_ = 0;
  uint64_t hold_until_ = 0;        // after a refused peer: no reconnecting before this
  uint64_t unverified_since_ = 0;  // no verified control connection since (0: there is one)
  std::string peer_error_;
};

static_assert(media::PublisherMedium<shm::PublisherMedium>);
static_assert(media::SubscriberMedium<shm::SubscriberMedium>);

}  // namespace mdcast::media::shm
