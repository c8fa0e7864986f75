// The verbs medium, whole: what a command line needs to publish or subscribe
// over InfiniBand / RoCE. UD multicast carries the data, RC queue pairs the
// control plane, RDMA READ of the publisher's registered ring the retransmits.
//
// Publisher (one thread runs all of this):
//
//   media::verbs::Options o;                 // see verbs_options.hpp
//   o.local_ip = "10.0.0.1"; o.group_ip = "239.77.0.1"; o.control_port = 7471;
//   media::verbs::PublisherMedium medium(o); // joins, registers the ring, listens
//   feed::PublisherConfig pc = medium.configure(pc_from_flags);  // max_datagram from the MTU
//   feed::Publisher<media::verbs::VerbsSink> pub(pc, medium.sink(), medium.ring_memory());
//   feed::ControlService svc(ctl_cfg, pub.core());
//   for (;;) { now = monotonic_ns(); pub.publish(m, now) ...; pub.poll(now); medium.poll_control(svc, now); }
//
// Subscriber:
//
//   media::verbs::Options o; o.local_ip = "10.0.0.2"; o.control_ip = "10.0.0.1"; // + group, port
//   media::verbs::SubscriberMedium medium(o);                   // joins, pre-posts, starts connecting
//   feed::SubscriberConfig sc = medium.configure(sc_from_flags);
//   feed::Subscriber<Handler> sub(sc, handler, &medium.control());
//   for (;;) medium.poll(sub, monotonic_ns());                  // or poll_blocking(sub) when adaptive
//
// Setup throws mdcast::Error with device, port, group and errno in its text.
// poll_control / poll never block and throw only when the data path failed
// beyond recovery (the QP could not be brought back).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mdcast/feed/config.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"

namespace mdcast::media::verbs {

// Fills in local_ip from (device, port, gid_index) when empty, and
// control_ip from local_ip for a publisher. Throws Error if neither is
// possible (names what to set).
[[nodiscard]] Options resolve_options(Options o, bool publisher);

class PublisherMedium {
 public:
  explicit PublisherMedium(const Options& opts);

  // The engine's config with what the medium decides: max_datagram (from the
  // active MTU) and retransmit_bytes (the registered ring). Throws Error if the
  // caller asked for a larger datagram than the MTU carries.
  [[nodiscard]] feed::PublisherConfig configure(feed::PublisherConfig cfg) const;

  [[nodiscard]] VerbsSink& sink() noexcept { return *sink_; }
  [[nodiscard]] std::span<std::byte> ring_memory() const noexcept { return sink_->ring_memory(); }
  [[nodiscard]] size_t max_datagram() const noexcept { return sink_->max_datagram(); }
  [[nodiscard]] const DeviceInfo& device() const noexcept { return sink_->device(); }
  [[nodiscard]] VerbsControlServer& server() noexcept { return *server_; }

  // Control duty: accepts and serves control clients, reaps send completions,
  // recovers the UD QP after a failure (throws Error if it cannot).
  size_t poll_control(feed::ControlService& svc, uint64_t now);

  // "device rxe0 port 1 (RoCE ...), group 239.77.0.1 send-only, ring 64 MiB (4 KiB pages), control 10.0.0.1:7471"
  [[nodiscard]] std::string describe() const;

 private:
  Options opts_;
  std::unique_ptr<VerbsSink> sink_;             // destroyed last: the server borrows its PD and ring MR
  std::unique_ptr<VerbsControlServer> server_;
  uint64_t last_cm_check_ = 0;
};

class SubscriberMedium {
 public:
  explicit SubscriberMedium(const Options& opts);

  // The engine's config with max_datagram set from the receiver.
  [[nodiscard]] feed::SubscriberConfig configure(feed::SubscriberConfig cfg) const;

  [[nodiscard]] VerbsReceiver& receiver() noexcept { return *receiver_; }
  [[nodiscard]] VerbsControlClient& control() noexcept { return *control_; }
  [[nodiscard]] const DeviceInfo& device() const noexcept { return receiver_->device(); }

  // One duty-cycle: data (busy-poll), control (connect, frames, READs), the
  // engine's own timers. Returns datagrams delivered.
  template <feed::SubscriberHandler H>
  size_t poll(feed::Subscriber<H>& sub, uint64_t now) {
    const size_t n = receiver_->poll([&](std::span<const std::byte> d, std::optional<uint32_t>) {
      sub.on_datagram(d, feed::Rail::kA, now);
    });
    if (n) last_data_ = now;
    control_->poll(now);
    VerbsControlClient::Inbound in;
    while (control_->next(in)) {
      switch (in.kind) {
        case VerbsControlClient::Inbound::Kind::kConnected: sub.on_control_connected(now); break;
        case VerbsControlClient::Inbound::Kind::kDisconnected: sub.on_control_disconnected(); break;
        case VerbsControlClient::Inbound::Kind::kFrame: sub.on_control_frame(in.frame, now); break;
      }
    }
    sub.poll(now);
    upkeep(sub.highest_sequence(), now);
    return n;
  }

  // Adaptive mode: polls; if nothing arrived for idle_before_blocking, sleeps
  // on the data and control completion channels (at most blocking_timeout_ms).
  template <feed::SubscriberHandler H>
  size_t poll_blocking(feed::Subscriber<H>& sub, uint64_t now) {
    size_t n = poll(sub, now);
    if (n == 0 && opts_.adaptive && now - last_data_ >= opts_.idle_before_blocking_ns) {
      arm();
      // A completion that landed before the arm raises no event: look once more.
      n = poll(sub, now);
      if (n == 0) sleep_until_work();
    }
    return n;
  }

  // True once "no multicast datagram while the publisher is ahead" was
  // reported (wrong QKey, group, MTU or a missing route): see upkeep().
  [[nodiscard]] bool data_silent() const noexcept { return silent_reported_; }
  [[nodiscard]] std::string describe() const;

  // The pieces of poll()/poll_blocking(), for callers that run their own loop
  // (the command line): recovery and diagnostics, arming the completion
  // channels, and sleeping on them.
  void upkeep(uint64_t highest_seen, uint64_t now);
  void arm();
  void sleep_until_work();

 private:
  Options opts_;
  std::unique_ptr<VerbsReceiver> receiver_;
  std::unique_ptr<VerbsControlClient> control_;
  uint64_t last_data_ = 0;
  uint64_t silent_since_ = 0;
  uint64_t last_cm_check_ = 0;
  bool silent_reported_ = false;
};

}  // namespace mdcast::media::verbs
