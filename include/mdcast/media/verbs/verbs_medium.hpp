// The verbs medium, whole: what an application needs to publish or subscribe
// over InfiniBand / RoCE. UD multicast carries the data, RC queue pairs the
// control plane, RDMA READ of the publisher's registered ring the retransmits.
// Both halves satisfy the medium concepts (mdcast/media/medium.hpp), so the
// library's agents drive them:
//
//   media::verbs::Options o;                 // see verbs_options.hpp
//   o.local_ip = "10.0.0.1"; o.group_ip = "239.77.0.1"; o.control_port = 7471;
//   media::verbs::PublisherMedium medium(o); // joins, registers the ring, listens
//   feed::PublisherAgent agent(medium, publisher_config, control_config);
//
//   o.local_ip = "10.0.0.2"; o.control_ip = "10.0.0.1";
//   media::verbs::SubscriberMedium medium(o); // joins, pre-posts, starts connecting
//   feed::SubscriberAgent agent(medium, subscriber_config, handler);
//
// Setup throws mdcast::Error with device, port, group and errno in its text.
// poll_control never blocks and throws only when the data path failed beyond
// recovery (the QP could not be brought back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_link.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"

namespace mdcast::media::verbs {

// Fills in local_ip from (device, port, gid_index) when empty, and
// control_ip from local_ip for a publisher. Throws Error if neither is
// possible (names what to set).
[[nodiscard]] Options resolve_options(Options o, bool publisher);

class PublisherMedium {
 public:
  using Sink = VerbsSink;

  explicit PublisherMedium(const Options& opts);
  PublisherMedium(const PublisherMedium&) = delete;
  PublisherMedium& operator=(const PublisherMedium&) = delete;

  // The engine's config with what the medium decides: max_datagram (0: from
  // the active MTU) and retransmit_bytes (the registered ring). Throws Error if
  // the caller asked for a larger datagram than the MTU carries.
  [[nodiscard]] PublisherFit configure(PublisherFit cfg) const;

  [[nodiscard]] VerbsSink& sink() noexcept { return *sink_; }
  [[nodiscard]] std::span<std::byte> ring_memory() noexcept { return sink_->ring_memory(); }
  [[nodiscard]] size_t max_datagram() const noexcept { return sink_->max_datagram(); }
  [[nodiscard]] const DeviceInfo& device() const noexcept { return sink_->device(); }
  [[nodiscard]] VerbsControlServer& server() noexcept { return *server_; }
  [[nodiscard]] size_t clients() const noexcept { return server_->clients(); }
  [[nodiscard]] const LinkWatch& link() const noexcept { return *link_; }

  // Control duty: accepts and serves control clients, reaps send completions,
  // recovers the UD QP after a failure (throws Error if it cannot), watches
  // the port and the group and joins it again when lost (verbs_link.hpp).
  size_t poll_control(ControlHandler& h, uint64_t now);

  // "device rxe0 port 1 (RoCE ...), group 239.77.0.1 send-only, ring 64 MiB (4 KiB pages), control 10.0.0.1:7471"
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

 private:
  struct Links final : LinkWatch::Member {
    VerbsSink* s = nullptr;
    int start_rejoin(std::string& why) override { return s->start_rejoin(why); }
    CmEvents poll_events() override { return s->poll_events(); }
    void link_down(bool down) noexcept override { s->set_link_down(down); }
    [[nodiscard]] uint64_t moved() const noexcept override { return s->counters().datagrams_posted.get(); }
  };
  void recover_sink(uint64_t now);

  Options opts_;
  std::unique_ptr<VerbsSink> sink_;             // destroyed last: the server borrows its PD and ring MR
  std::unique_ptr<VerbsControlServer> server_;
  std::unique_ptr<LinkWatch> link_;
  Links links_;
  uint64_t next_recovery_log_ = 0;
  uint64_t recoveries_unlogged_ = 0;
};

class SubscriberMedium;

// Datagrams from the receive ring, in place in their registered buffers.
// block() is the adaptive mode (Options::adaptive): the first call after
// data arms the completion channels and returns at once (a completion that
// landed before the arm raises no event, so the caller polls once more);
// the next one sleeps on them.
class ReceiverSource {
 public:
  template <class Fn>
  size_t poll(Fn&& fn, size_t /*budget: the receiver takes one CQ batch*/) noexcept {
    return rx_->poll(
        [&](std::span<const std::byte> d, std::optional<uint32_t>) { hand_datagram(fn, d, monotonic_ns(), RailId::kA); });
  }
  bool block(uint64_t timeout_ns) noexcept;

 private:
  friend class SubscriberMedium;
  explicit ReceiverSource(SubscriberMedium& m) noexcept;
  SubscriberMedium* m_;
  VerbsReceiver* rx_ = nullptr;
  bool armed_ = false;
};

class SubscriberMedium {
 public:
  using Source = ReceiverSource;

  explicit SubscriberMedium(const Options& opts);
  SubscriberMedium(const SubscriberMedium&) = delete;
  SubscriberMedium& operator=(const SubscriberMedium&) = delete;

  // The engine's config with max_datagram set from the receiver.
  [[nodiscard]] SubscriberFit configure(SubscriberFit cfg) const;
  // The port is down or the group not joined again yet (media::own_link_down):
  // nothing can arrive, and the publisher is not at fault.
  [[nodiscard]] bool link_down() const noexcept { return link_->down(); }
  [[nodiscard]] const LinkWatch& link() const noexcept { return *link_; }

  [[nodiscard]] Source& source() noexcept { return source_; }
  [[nodiscard]] VerbsControlClient& control() noexcept { return *control_; }
  void start() noexcept {}
  // Control duty: connection, frames, READ completions (handed to the
  // engine), QP recovery and the "no data although the publisher is ahead"
  // diagnostic. Returns work done.
  size_t poll_control(ControlEvents& e, uint64_t now);

  [[nodiscard]] VerbsReceiver& receiver() noexcept { return *receiver_; }
  [[nodiscard]] const DeviceInfo& device() const noexcept { return receiver_->device(); }
  // True once "no multicast datagram" was reported: after 1 s when the
  // control plane says the publisher is ahead, after kSilentFromStartNs of
  // not even a heartbeat otherwise (wrong QKey, group, MTU, route; no publisher).
  [[nodiscard]] bool data_silent() const noexcept { return silent_reported_; }
  // What the immediate data says never arrived (the fabric or a full receive
  // queue lost it); the engine recovers it.
  [[nodiscard]] uint64_t lost_datagrams() const noexcept { return receiver_->counters().imm_missing.get(); }
  // Heartbeats come every publisher.heartbeat_interval (100 ms by default):
  // this much silence is no idle feed.
  static constexpr uint64_t kSilentFromStartNs = 3 * kNsPerSec;
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

 private:
  friend class ReceiverSource;
  void upkeep(uint64_t highest_seen, uint64_t now);
  void arm();
  void sleep_until_work(uint64_t timeout_ns);

  struct Links final : LinkWatch::Member {
    VerbsReceiver* r = nullptr;
    int start_rejoin(std::string& why) override { return r->start_rejoin(why); }
    CmEvents poll_events() override { return r->poll_events(); }
    void link_down(bool) noexcept override {}  // a receive QP rides it out (rxe keeps it in RTR)
    [[nodiscard]] uint64_t moved() const noexcept override { return r->counters().datagrams.get(); }
  };

  Options opts_;
  std::unique_ptr<VerbsReceiver> receiver_;
  std::unique_ptr<VerbsControlClient> control_;
  std::unique_ptr<LinkWatch> link_;
  Links links_;
  ReceiverSource source_{*this};
  uint64_t silent_since_ = 0;
  bool silent_reported_ = false;
};

static_assert(media::PublisherMedium<verbs::PublisherMedium>);
static_assert(media::SubscriberMedium<verbs::SubscriberMedium>);

}  // namespace mdcast::media::verbs
