// How the command line drives the verbs medium (media/verbs): the members
// driver.hpp lists, over UD multicast, RC control and RDMA READ retransmission.
#pragma once

#ifdef MDCAST_HAVE_VERBS

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "settings.hpp"
#include "driver.hpp"

namespace mdcast::app {

inline media::verbs::Options verbs_options(const Settings& s) {
  media::verbs::Options o;
  o.device = s.verbs.device;
  o.port = s.verbs.port;
  o.gid_index = s.verbs.gid_index;
  o.local_ip = s.verbs.local_ip;
  o.group_ip = s.verbs.group;
  o.qkey = s.verbs.qkey;
  o.control_ip = s.verbs.control_ip;
  o.control_port = s.verbs.control_port;
  o.adaptive = s.feed.idle == IdleMode::kBlock;
  o.rdma_read = s.verbs.rdma_read && s.pub.entitlements.empty();
  o.rate = s.verbs.rate;
  o.retransmit_bytes = s.pub.retransmit_bytes;
  if (!s.verbs.log_setup) o.log = [](std::string_view) {};  // failures still surface as errors and counters
  return o;
}

class VerbsPublisherDriver {
 public:
  using Sink = media::verbs::VerbsSink;

  explicit VerbsPublisherDriver(const Settings& s, uint32_t) : medium_(verbs_options(s)) {
    if (!s.pub.entitlements.empty() && s.verbs.rdma_read)
      fmt::print(stderr, "mdcast publish: entitlements configured: RDMA READ of the retransmit ring is off "
                         "(it would bypass them); retransmissions go through the control plane\n");
  }
  Sink& sink() noexcept { return medium_.sink(); }
  std::span<std::byte> ring_memory() noexcept { return medium_.ring_memory(); }
  size_t max_datagram() const noexcept { return medium_.max_datagram(); }
  feed::PublisherConfig configure(feed::PublisherConfig c) const { return medium_.configure(c); }
  void poll_control(feed::ControlService& svc, uint64_t now) { medium_.poll_control(svc, now); }
  size_t clients() noexcept { return medium_.server().clients(); }
  std::string describe() const { return medium_.describe(); }

 private:
  media::verbs::PublisherMedium medium_;
};

class VerbsSubscriberDriver {
 public:
  VerbsSubscriberDriver(const Settings& s, uint64_t seed)
      : medium_(verbs_options(s)), loss_(s.sub.inject_loss), rng_(seed), block_(s.feed.idle == IdleMode::kBlock) {}

  feed::ControlChannel& control() noexcept { return medium_.control(); }
  feed::SubscriberConfig configure(feed::SubscriberConfig c) const { return medium_.configure(c); }
  void start() noexcept {}

  template <class F>
  size_t poll_data(F&& on_datagram, size_t) noexcept {
    return medium_.receiver().poll([&](std::span<const std::byte> d, std::optional<uint32_t>) {
      if (loss_ > 0 && rng_.chance(loss_)) {
        ++counters_.injected_losses;
        return;
      }
      on_datagram(d, monotonic_ns());
    });
  }

  template <class Sub>
  void poll_control(Sub& sub, uint64_t now) {
    auto& c = medium_.control();
    c.poll(now);
    media::verbs::VerbsControlClient::Inbound in;
    while (c.next(in)) {
      switch (in.kind) {
        case media::verbs::VerbsControlClient::Inbound::Kind::kConnected: sub.on_control_connected(now); break;
        case media::verbs::VerbsControlClient::Inbound::Kind::kDisconnected: sub.on_control_disconnected(); break;
        case media::verbs::VerbsControlClient::Inbound::Kind::kFrame: sub.on_control_frame(in.frame, now); break;
      }
    }
    medium_.upkeep(sub.highest_sequence(), now);
  }

  // Adaptive mode: sleep on the completion channels until data or control work.
  bool block(uint64_t) noexcept {
    if (!block_) return false;
    medium_.arm();
    medium_.sleep_until_work();
    return true;
  }

  const DriverCounters& counters() const noexcept { return counters_; }
  uint64_t lapped() const noexcept { return 0; }  // the receive ring overflows into the engine's gap recovery
  std::string describe() const { return medium_.describe(); }

 private:
  media::verbs::SubscriberMedium medium_;
  double loss_;
  Rng rng_;
  bool block_;
  DriverCounters counters_;
};

}  // namespace mdcast::app

#endif
