// What the command line's publisher and subscriber loops (runners.cpp, and
// the bench's copies in bench_feed.hpp) need from a medium. Each medium has a
// driver pair with these members; the loops are templates over them, so the
// medium is chosen once and nothing on the data path is virtual.
//
// Publisher driver:
//   using Sink = ...;                                 a feed::DatagramSink
//   Sink& sink();
//   std::span<std::byte> ring_memory();              where the retransmit ring lives (empty: the engine's own)
//   size_t max_datagram() const;
//   feed::PublisherConfig configure(feed::PublisherConfig) const;   what the medium decides (MTU, ring)
//   void poll_control(feed::ControlService&, uint64_t now);         control plane + medium upkeep
//   size_t clients();
//   std::string describe() const;
//
// Subscriber driver:
//   feed::ControlChannel& control();
//   feed::SubscriberConfig configure(feed::SubscriberConfig) const;
//   void start();                                     the loop begins: position the reader
//   size_t poll_data(F on_datagram(span, rx_ns), size_t budget);
//   void poll_control(Subscriber&, uint64_t now);
//   bool block(uint64_t timeout_ns);                  sleep until data (false: cannot; the loop backs off)
//   const DriverCounters& counters() const;  uint64_t lapped() const;
//   std::string describe() const;
#pragma once

#include <cstdint>

namespace mdcast::app {

// What a subscriber driver counts beyond the engine.
struct DriverCounters {
  uint64_t lapped = 0;           // datagrams lost because a ring writer lapped the reader (shm)
  uint64_t reattached = 0;       // rings of a restarted publisher attached (shm)
  uint64_t injected_losses = 0;  // datagrams dropped on purpose (--inject-loss)
};

}  // namespace mdcast::app
