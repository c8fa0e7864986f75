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
// Setup throws mdcast::Error naming the ring file or the control address.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::shm {

struct Options {
  std::string name = "mdcast";     // ring mdcast-<name>.ring; control socket @mdcast/<name>
  std::string dir;                 // "" = /dev/hugepages when huge pages are reserved, else /dev/shm
  size_t slots = 16384;
  size_t max_datagram = 4032;      // a slot is 16 + this, rounded up to 64 (4096 by default)
  bool huge_pages = true;          // try hugetlbfs first
  uint16_t channel = 1;
  std::string control;             // control address; "" = unix:@mdcast/<name> (a subscriber: what the ring names)
  uint64_t wait_ns = 10 * kNsPerSec;  // a subscriber waits this long for the ring to appear
};

// "unix:@mdcast/<name>" unless the options name another address.
[[nodiscard]] std::string control_address(const Options& o);

#define MDCAST_SHM_READER_COUNTERS(X)                                                   \
  X(lapped, "datagrams lost because the ring writer lapped this reader")               \
  X(laps, "times the ring writer lapped this reader")                                  \
  X(reattached, "rings of a restarted publisher attached")
MDCAST_DEFINE_COUNTER_STRUCT(ReaderCounters, MDCAST_SHM_READER_COUNTERS);

class PublisherMedium {
 public:
  using Sink = ShmSink;

  // Listens on the control address, then creates the ring. Throws Error.
  PublisherMedium(const Options& o, uint32_t session);
  PublisherMedium(const PublisherMedium&) = delete;
  PublisherMedium& operator=(const PublisherMedium&) = delete;

  Sink& sink() noexcept { return sink_; }
  // The engine's retransmit ring is the shm ring: each datagram is built
  // once, in the slot readers read it from.
  std::span<std::byte> ring_memory() noexcept { return ring_.ring_memory(); }
  // max_datagram: 0 = what a slot holds; more is an Error. retransmit_bytes:
  // the ring's (shm.slots decides the history a publisher keeps).
  [[nodiscard]] feed::PublisherConfig configure(feed::PublisherConfig c) const;
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
};

// Datagrams from the ring, each copied out of its slot (the seqlock needs
// the copy) into one buffer and handed over from there.
class RingSource {
 public:
  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    size_t n = 0;
    size_t len = 0;
    while (n < budget) {
      const auto r = (*reader_)->read(buf_.get(), len);
      if (r == RingReader::Read::kEmpty) break;
      if (r == RingReader::Read::kLapped) {
        counters_->laps.add();
        counters_->lapped.add((*reader_)->lapped() - lapped_seen_);
        lapped_seen_ = (*reader_)->lapped();
        continue;
      }
      ++n;
      fn(std::span<const std::byte>(buf_.get(), len), monotonic_ns());
    }
    return n;
  }
  bool block(uint64_t timeout_ns) noexcept { return (*reader_)->wait(timeout_ns); }

 private:
  friend class SubscriberMedium;
  RingSource(std::optional<RingReader>& r, ReaderCounters& c) : reader_(&r), counters_(&c) {}
  std::optional<RingReader>* reader_;  // always engaged; replaced in place when the publisher restarts
  ReaderCounters* counters_;
  uint64_t lapped_seen_ = 0;           // of this reader (a new one starts at 0)
  std::unique_ptr<std::byte[]> buf_ = std::make_unique<std::byte[]>(wire::kMaxDatagram);
};

class SubscriberMedium {
 public:
  using Source = RingSource;

  // Waits up to o.wait_ns for the ring to appear, then starts connecting to
  // the control address its header names (or o.control). Throws Error.
  explicit SubscriberMedium(const Options& o);
  SubscriberMedium(const SubscriberMedium&) = delete;
  SubscriberMedium& operator=(const SubscriberMedium&) = delete;

  Source& source() noexcept { return source_; }
  ControlChannel& control() noexcept { return *client_; }
  [[nodiscard]] feed::SubscriberConfig configure(feed::SubscriberConfig c) const { return c; }
  // Read from the writer's current position on; history comes by recovery.
  void start() noexcept { reader_->seek_to_writer(); }
  size_t poll_control(ControlEvents& e, uint64_t now);
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  [[nodiscard]] const RingReader& reader() const noexcept { return *reader_; }
  [[nodiscard]] const ReaderCounters& counters() const noexcept { return counters_; }
  // Datagrams this medium lost before the engine saw them (lapped).
  [[nodiscard]] uint64_t lost_datagrams() const noexcept { return counters_.lapped.get(); }

 private:
  void follow_restarted_writer();

  Options opts_;
  ReaderCounters counters_;
  std::optional<RingReader> reader_;
  std::unique_ptr<StreamControlClient> client_;
  RingSource source_{reader_, counters_};
  uint64_t last_check_ = 0;
};

static_assert(media::PublisherMedium<shm::PublisherMedium>);
static_assert(media::SubscriberMedium<shm::SubscriberMedium>);

}  // namespace mdcast::media::shm
