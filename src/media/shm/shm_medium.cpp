// The shm medium's control duty: the control socket, the writer's liveness
// stamp, and readers following a restarted publisher to its new ring.
#include "mdcast/media/shm/shm_medium.hpp"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>

#include "mdcast/core/error.hpp"

namespace mdcast::media::shm {
namespace {

RingOptions ring_options(const Options& o) { return {o.name, o.dir, o.slots, o.max_datagram, o.huge_pages}; }

// The ring appears when its publisher starts: poll for it until the deadline.
RingReader wait_for_ring(const Options& o) {
  const uint64_t deadline = monotonic_ns() + o.wait_ns;
  for (;;) {
    try {
      return RingReader(find_ring(o.name, o.dir));
    } catch (const Error&) {
      if (monotonic_ns() >= deadline) throw;
      timespec ts{0, 20'000'000};
      nanosleep(&ts, nullptr);
    }
  }
}

}  // namespace

std::string control_address(const Options& o) { return o.control.empty() ? "unix:@mdcast/" + o.name : o.control; }

// ------------------------------------------------------------- publisher --

PublisherMedium::PublisherMedium(const Options& o, uint32_t session)
    : server_(control_address(o)), ring_(ring_options(o), session, o.channel, server_.address()), sink_(ring_) {}

feed::PublisherConfig PublisherMedium::configure(feed::PublisherConfig c) const {
  if (c.max_datagram > ring_.max_datagram())
    fail("max_datagram {} is more than a slot of shm ring {} holds ({} bytes): lower it, or raise shm.max_datagram",
         c.max_datagram, ring_.path(), ring_.max_datagram());
  if (c.max_datagram == 0) c.max_datagram = ring_.max_datagram();
  c.retransmit_bytes = ring_.ring_memory().size();
  return c;
}

size_t PublisherMedium::poll_control(ControlHandler& h, uint64_t now) {
  const size_t work = server_.poll(h, now);
  ring_.touch(now);
  return work;
}

std::string PublisherMedium::describe() const {
  return fmt::format("shm ring {} ({} pages), control {}", ring_.path(), ring_.huge_pages() ? "2 MiB huge" : "4 KiB",
                     server_.address());
}

std::vector<CounterGroup> PublisherMedium::counter_groups() const {
  return {counter_group("control", server_.stats())};
}

// ------------------------------------------------------------ subscriber --

SubscriberMedium::SubscriberMedium(const Options& o) : opts_(o) {
  reader_.emplace(wait_for_ring(o));
  client_ = std::make_unique<StreamControlClient>(o.control.empty() ? std::string(reader_->header().control)
                                                                    : o.control);
}

size_t SubscriberMedium::poll_control(ControlEvents& e, uint64_t now) {
  const size_t work = client_->poll(e, now);
  // A file system lookup: every 100 ms is soon enough to notice a restart.
  if (now - last_check_ > 100 * kNsPerMs) {
    last_check_ = now;
    follow_restarted_writer();
  }
  return work;
}

// A restarted publisher creates a new ring file under the same name: read
// the new session from its start (the engine resynchronises on the session).
void SubscriberMedium::follow_restarted_writer() {
  if (reader_->current()) return;
  try {
    RingReader fresh(find_ring(opts_.name, opts_.dir));
    if (fresh.header().writer_pid == reader_->header().writer_pid &&
        fresh.header().writer_start == reader_->header().writer_start)
      return;
    reader_.emplace(std::move(fresh));
    source_.lapped_seen_ = 0;
    counters_.reattached.add();
    if (opts_.control.empty()) client_->set_address(reader_->header().control);
  } catch (const Error&) {
    // No new publisher yet: the engine reports the silence.
  }
}

std::string SubscriberMedium::describe() const { return fmt::format("shm ring {}", reader_->path()); }

std::vector<CounterGroup> SubscriberMedium::counter_groups() const { return {counter_group("shm", counters_)}; }

}  // namespace mdcast::media::shm
