// A deterministic world for component tests: one publisher, N subscribers,
// the in-memory medium with per-subscriber faults, the in-memory control
// plane, a virtual clock. Records what the publisher sent and what each
// subscriber delivered, and checks exact delivery.
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
#include "mdcast/media/mem/mem_medium.hpp"
#include "recorder.hpp"

namespace mdcast::test {

struct SubSpec {
  std::string name = "sub";
  media::mem::FaultProfile faults;
  std::optional<media::mem::FaultProfile> rail_b;  // A/B: a second endpoint with its own faults
  size_t drain_per_tick = 1'000'000;               // datagrams taken per tick (slow readers take few)
  feed::SubscriberConfig cfg;
  uint64_t join_at_message = 0;                    // late joiner: attaches after this many messages
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
};

struct SubRuntime {
  SubSpec spec;
  std::unique_ptr<Recorder> rec;
  media::mem::Endpoint* a = nullptr;
  media::mem::Endpoint* b = nullptr;
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
  uint64_t now() const { return now_; }
  std::string report() const;

 private:
  void start_publisher(uint32_t session);
  void attach(SubRuntime& s);
  void tick();

  SimSpec spec_;
  uint64_t now_ = 1'000'000;
  media::mem::Bus bus_;
  media::mem::ControlHub hub_;
  std::unique_ptr<feed::Publisher<media::mem::Bus>> pub_;
  std::unique_ptr<feed::ControlService> svc_;
  std::unique_ptr<book::Generator> gen_;
  std::vector<SubRuntime> subs_;
  // The publisher's log: per instrument, hash of the message with iseq i+1.
  std::vector<std::vector<uint64_t>> log_;
  uint64_t published_ = 0;
  uint64_t ticks_ = 0;
  uint32_t session_ = 1000;
  std::vector<std::byte> opaque_buf_;
};

}  // namespace mdcast::test
