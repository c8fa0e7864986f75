// A deterministic world for component tests: one publisher, N subscribers,
// the in-memory medium (its queues stamped by a virtual clock), each
// subscriber's rails behind their own fault interceptor, the in-memory
// control plane. Records what the publisher sent and what each subscriber
// delivered, and checks exact delivery.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "delivery_check.hpp"
#include "recorder.hpp"

namespace mdcast::test {

struct SubSpec {
  std::string name = "sub";
  media::fault::FaultProfile faults;
  std::optional<media::fault::FaultProfile> rail_b;  // A/B: a second endpoint with its own faults
  size_t queue_capacity = 4096;                      // each endpoint's queue (a slow reader overflows it)
  size_t drain_per_tick = 1'000'000;                 // datagrams taken per tick (slow readers take few)
  feed::SubscriberConfig cfg;
  uint64_t join_at_message = 0;                      // late joiner: attaches after this many messages
  double control_drop = 0;
};

struct SimSpec {
  uint64_t seed = 1;
  uint64_t messages = 20'000;
  uint32_t messages_per_tick = 20;
  uint64_t tick_ns = 10'000;
  uint32_t duty_period = 0;             // ticks; publish only in the first duty_active of each period
  uint32_t duty_active = 0;             // (idle stretches let heartbeats and checksums flow)
  uint64_t opaque_every = 0;            // every Nth message an opaque one of opaque_size bytes
  size_t opaque_size = 0;
  uint64_t restart_at_message = 0;      // publisher restart (new session) after this many
  feed::PublisherConfig pub;
  feed::ControlConfig ctl;
  book::GeneratorConfig gen;
  std::vector<SubSpec> subs;
  uint64_t settle_ticks = 200'000;      // after the last message, until all catch up
  // A rogue sender on the group: every forge_every ticks one forged datagram
  // to every subscriber, in turn another session's heartbeat, an
  // end-of-session heartbeat, a far-ahead sequence, a heartbeat tail of 2^40.
  uint32_t forge_every = 0;
  // A rogue sender's gapless run: from the real stream's next sequence when
  // it starts, this many datagrams a tick, each the next of its own count
  // (a copy of the last real datagram, resealed), never resynchronised.
  uint32_t chain_per_tick = 0;
};

struct SubRuntime {
  using Rail = media::fault::FaultySource<media::mem::Endpoint>;
  SubSpec spec;
  std::unique_ptr<Recorder> rec;
  std::unique_ptr<Rail> a;  // each wraps its own endpoint of the bus
  std::unique_ptr<Rail> b;
  media::mem::ControlLink* link = nullptr;
  std::unique_ptr<feed::Subscriber<Recorder>> sub;
};

class Sim {
 public:
  explicit Sim(SimSpec spec);
  // Runs the whole scenario; returns false if some subscriber never caught up.
  bool run();
  // Checks exact delivery for every subscriber (gtest failures on mismatch).
  void verify() const;

  const SimSpec& spec() const { return spec_; }
  std::vector<SubRuntime>& subs() { return subs_; }
  feed::Publisher<media::mem::Bus>& publisher() { return *pub_; }
  media::mem::PublisherMedium& medium() { return medium_; }
  uint64_t now() const { return now_; }
  std::string report() const;

 private:
  void start_publisher(uint64_t session);
  void attach(SubRuntime& s);
  void tick();
  void drain(SubRuntime& s);
  void flush_held(SubRuntime& s);
  void forge();
  void forge_chain();

  SimSpec spec_;
  uint64_t now_ = 1'000'000;  // the virtual clock; the endpoints stamp receive times from it
  media::mem::PublisherMedium medium_;
  std::unique_ptr<feed::Publisher<media::mem::Bus>> pub_;
  std::unique_ptr<feed::ControlService> svc_;
  std::unique_ptr<book::Generator> gen_;
  std::vector<SubRuntime> subs_;
  PublishedLog log_;
  uint64_t published_ = 0;
  uint64_t ticks_ = 0;
  uint64_t session_ = 1000;
  std::vector<std::byte> opaque_buf_;
  uint64_t forged_ = 0;
  uint64_t chain_next_ = 0;
};

}  // namespace mdcast::test
