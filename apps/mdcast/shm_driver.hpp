// How the command line drives the shared-memory medium: the ring, the
// Unix-socket control plane, and their upkeep (liveness, reattachment after a
// publisher restart). The members are those driver.hpp lists.
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/media/stream_control.hpp"
#include "driver.hpp"
#include "settings.hpp"

namespace mdcast::app {

inline std::string shm_control_address(const Settings& s) {
  return s.feed.control.empty() ? "unix:@mdcast/" + s.feed.name : s.feed.control;
}

class ShmPublisherDriver {
 public:
  using Sink = media::shm::ShmSink;

  ShmPublisherDriver(const Settings& s, uint32_t session)
      : server_(shm_control_address(s)),
        ring_(media::shm::RingOptions{s.feed.name, s.shm.dir, s.shm.slots, s.shm.max_datagram, s.shm.huge_pages},
              session, s.feed.channel, server_.address()),
        sink_(ring_) {}

  Sink& sink() noexcept { return sink_; }
  std::span<std::byte> ring_memory() noexcept { return {}; }  // the engine allocates its own
  size_t max_datagram() const noexcept { return ring_.max_datagram(); }
  feed::PublisherConfig configure(feed::PublisherConfig c) const { return c; }
  void poll_control(feed::ControlService& svc, uint64_t now) {
    server_.poll(svc, now);
    ring_.touch(now);
  }
  size_t clients() const noexcept { return server_.clients(); }
  std::string describe() const {
    return fmt::format("shm ring {} ({} pages), control {}", ring_.path(), ring_.huge_pages() ? "2 MiB huge" : "4 KiB",
                       server_.address());
  }
  const media::ControlServerStats& control_stats() const noexcept { return server_.stats(); }

 private:
  media::StreamControlServer server_;
  media::shm::RingWriter ring_;
  Sink sink_;
};

class ShmSubscriberDriver {
 public:
  // Waits up to s.sub.wait_ns for the ring to appear. Throws Error.
  ShmSubscriberDriver(const Settings& s, uint64_t seed)
      : settings_(s), loss_(s.sub.inject_loss), rng_(seed), buf_(std::make_unique<std::byte[]>(65536)) {
    const uint64_t deadline = monotonic_ns() + s.sub.wait_ns;
    for (;;) {
      try {
        reader_.emplace(media::shm::find_ring(s.feed.name, s.shm.dir));
        break;
      } catch (const Error&) {
        if (monotonic_ns() >= deadline) throw;
        timespec ts{0, 20'000'000};
        nanosleep(&ts, nullptr);
      }
    }
    client_ = std::make_unique<media::StreamControlClient>(s.feed.control.empty() ? reader_->header().control
                                                                                  : s.feed.control);
  }

  feed::ControlChannel& control() noexcept { return *client_; }
  feed::SubscriberConfig configure(feed::SubscriberConfig c) const { return c; }

  // Called when the loop starts (after the engine is built, which can take a
  // while for large books): read from the writer's current position on;
  // history comes through recovery.
  void start() noexcept { reader_->seek_to_writer(); }

  // Hands up to `budget` datagrams to on_datagram(span, now). Returns how many.
  template <class F>
  size_t poll_data(F&& on_datagram, size_t budget) noexcept {
    size_t n = 0;
    size_t len = 0;
    while (n < budget) {
      const auto r = reader_->read(buf_.get(), len);
      if (r == media::shm::RingReader::Read::kEmpty) break;
      if (r == media::shm::RingReader::Read::kLapped) {
        counters_.lapped = reader_->lapped();
        continue;
      }
      ++n;
      if (loss_ > 0 && rng_.chance(loss_)) {
        ++counters_.injected_losses;
        continue;
      }
      on_datagram(std::span<const std::byte>(buf_.get(), len), monotonic_ns());
    }
    return n;
  }

  template <class Sub>
  void poll_control(Sub& sub, uint64_t now) {
    client_->poll(sub, now);
    if (now - last_check_ > 100 * kNsPerMs) {
      last_check_ = now;
      check_ring();
    }
  }

  // Sleeps until the writer publishes (or timeout); false if this reader
  // cannot block (the caller backs off instead).
  bool block(uint64_t timeout_ns) noexcept { return reader_->wait(timeout_ns); }

  const DriverCounters& counters() const noexcept { return counters_; }
  std::string describe() const { return fmt::format("shm ring {}", reader_->path()); }
  uint64_t lapped() const noexcept { return reader_->lapped(); }

 private:
  // A restarted publisher creates a new ring file under the same name: follow it.
  void check_ring() {
    if (reader_->current()) return;
    try {
      media::shm::RingReader fresh(media::shm::find_ring(settings_.feed.name, settings_.shm.dir));
      if (fresh.header().writer_pid == reader_->header().writer_pid &&
          fresh.header().writer_start == reader_->header().writer_start)
        return;
      reader_.emplace(std::move(fresh));  // read the new session from its start
      ++counters_.reattached;
      if (settings_.feed.control.empty()) client_->set_address(reader_->header().control);
    } catch (const Error&) {
      // No new publisher yet: the engine reports the silence.
    }
  }

  const Settings& settings_;
  double loss_;
  Rng rng_;
  std::optional<media::shm::RingReader> reader_;
  std::unique_ptr<media::StreamControlClient> client_;
  std::unique_ptr<std::byte[]> buf_;
  DriverCounters counters_;
  uint64_t last_check_ = 0;
};

}  // namespace mdcast::app
