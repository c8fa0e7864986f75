// The UDP multicast medium, whole: what an application needs to publish or
// subscribe across hosts that have no RDMA. One multicast group per channel
// (two with an A/B feed), a TCP control plane (media/stream, with every
// bound and the authentication of the hardened control service), and the
// publisher's announcement of where that control plane listens.
//
//   media::udp::Options o;                       // udp_options.hpp
//   o.rail_a = {"239.77.1.1:7470", "eth0"};
//   media::udp::PublisherMedium medium(o, session);  // listens, opens the send sockets
//   feed::PublisherAgent agent(medium, publisher_config, control_config);
//
//   media::udp::SubscriberMedium medium(o);      // joins; connects where the publisher announces
//   feed::SubscriberAgent agent(medium, subscriber_config, handler);
//
// No thread of its own: the publisher's and the subscriber's duty loops
// drive it (sendmmsg/recvmmsg on the data path, the control socket and the
// announcements from poll_control). Setup throws Error naming the
// interface, group and errno.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/stream/stream_control.hpp"
#include "mdcast/media/udp/udp_link.hpp"
#include "mdcast/media/udp/udp_options.hpp"
#include "mdcast/media/udp/udp_sink.hpp"
#include "mdcast/media/udp/udp_socket.hpp"
#include "mdcast/media/udp/udp_source.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media::udp {

// Both rails resolved: interfaces, groups, the datagram size both carry.
struct Rails {
  Interface iface[2];
  GroupAddress group[2];
  bool two = false;
  size_t payload = 0;  // bytes of one datagram (the smaller rail's, at most wire::kMaxDatagram)
  [[nodiscard]] std::string describe() const;
  static Rails resolve(const Options& o);
};

// Where a publisher's control plane listens: o.control, else
// "tcp:<rail A's interface address>:<control_port>" (what a shared front
// door for several channels binds). Throws Error naming the interface.
[[nodiscard]] std::string control_listen_address(const Options& o);

class PublisherMedium {
 public:
  using Sink = UdpSink;

  // Listens on the control address, then opens the send sockets. Throws Error.
  PublisherMedium(const Options& o, uint64_t session);
  PublisherMedium(const PublisherMedium&) = delete;
  PublisherMedium& operator=(const PublisherMedium&) = delete;

  Sink& sink() noexcept { return sink_; }
  std::span<std::byte> ring_memory() noexcept { return {}; }  // the engine's own retransmit ring
  // max_datagram: 0 = what the interface's MTU carries; more is an Error.
  [[nodiscard]] PublisherFit configure(PublisherFit c) const;
  // Serves control clients, announces the control address, reports send
  // errors, sets a rail up again when its interface comes back (LinkWatch).
  size_t poll_control(ControlHandler& h, uint64_t now);
  [[nodiscard]] size_t clients() const noexcept { return server_.clients(); }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  [[nodiscard]] const std::string& control_address() const noexcept { return server_.address(); }
  [[nodiscard]] const Rails& rails() const noexcept { return rails_; }
  [[nodiscard]] const SinkCounters& counters() const noexcept { return counters_; }
  [[nodiscard]] const StreamControlServer& server() const noexcept { return server_; }
  [[nodiscard]] const LinkWatch& link() const noexcept { return link_; }

 private:
  // What the link watch does to a rail of this publisher.
  class Links final : public LinkWatch::Rail {
   public:
    explicit Links(PublisherMedium& m) noexcept : m_(m) {}
    int restore(int rail, const Interface& iface, bool silence) override;
    [[nodiscard]] uint64_t moved(int rail) const noexcept override;

   private:
    PublisherMedium& m_;
  };

  Options opts_;
  Rails rails_;
  StreamControlServer server_;
  UniqueFd fd_[2];
  std::vector<UniqueFd> also_;        // Options::also_to, in order
  std::vector<GroupAddress> also_to_;
  SinkCounters counters_;
  UdpSink sink_;
  std::vector<std::byte> announcement_;
  uint64_t next_announce_ = 0;
  uint64_t errors_reported_ = 0;
  uint64_t errors_seen_ = 0;
  uint64_t next_error_report_ = 0;
  uint64_t session_ = 0;  // announced; the engine's must be the same (configure)
  LinkWatch link_;
  Links links_{*this};
};

#define MDCAST_UDP_SUBSCRIBER_COUNTERS(X)                                                          \
  X(announce_malformed, "announcements that did not decode (dropped)")                           \
  X(announce_conflicts, "announcements of another control address than the one in use (ignored)") \
  X(announce_followed, "control addresses taken from an announcement")                            \
  X(announce_left, "announced control addresses left: refused, closed or silent for 2 s (then held off)")        \
  X(announce_unsigned, "announcements without a signature, where udp.announce_public_key is set (dropped)")       \
  X(announce_bad_signature, "announcements whose signature udp.announce_public_key did not make (dropped)")      \
  X(announce_unverified, "new announcements not checked: one is verified a millisecond at most (dropped)")
MDCAST_DEFINE_COUNTER_STRUCT(SubscriberCounters, MDCAST_UDP_SUBSCRIBER_COUNTERS);

class SubscriberMedium {
 public:
  using Source = UdpSource;

  // Joins the group(s). The control connection starts at o.control, or at
  // the first address the publisher announces. Announcements arrive on the
  // data path: a program that polls only the control plane until subscribed
  // (instead of the agent's duty loop, which polls both) never hears one.
  // Throws Error.
  explicit SubscriberMedium(const Options& o);
  SubscriberMedium(const SubscriberMedium&) = delete;
  SubscriberMedium& operator=(const SubscriberMedium&) = delete;

  Source& source() noexcept { return source_; }
  ControlChannel& control() noexcept { return channel_; }
  // With two rails a gap waits 2 ms for the other rail's copy before it is
  // asked for; requests wait at least 1 s for their answer (TCP delays, never
  // loses) and the window holds 2 s at udp.rate.
  [[nodiscard]] SubscriberFit configure(SubscriberFit c) const;
  void start() noexcept;
  size_t poll_control(ControlEvents& e, uint64_t now);
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const;

  // The control address in use ("" while none is known yet).
  [[nodiscard]] const std::string& control_address() const noexcept { return control_; }
  [[nodiscard]] const SourceCounters& counters() const noexcept { return counters_; }
  [[nodiscard]] const Rails& rails() const noexcept { return rails_; }
  [[nodiscard]] const LinkWatch& link() const noexcept { return link_; }
  // This host's interface is down on every rail (media/medium.hpp,
  // own_link_down): nothing can arrive, and the publisher is not at fault.
  [[nodiscard]] bool link_down() const noexcept { return link_.all_down(); }
  [[nodiscard]] bool gro() const noexcept { return gro_[0]; }
  // Datagrams lost before the engine saw them: the kernel's drops (a full
  // socket buffer) and truncated ones.
  [[nodiscard]] uint64_t lost_datagrams() const noexcept {
    return counters_.kernel_drops.get() + counters_.truncated.get();
  }

 private:
  class Channel final : public ControlChannel {
   public:
    bool send(std::span<const std::byte> frame) override {
      // Reports are never answered: one sent on a quiet feed is no request
      // left unanswered (that made a subscriber leave a live publisher).
      const auto type = frame.size() > wire::ctl::kType ? static_cast<wire::CtlType>(frame[wire::ctl::kType])
                                                        : wire::CtlType::kStatusReport;
      if (type != wire::CtlType::kStatusReport && type != wire::CtlType::kLatencyReport &&
          type != wire::CtlType::kUnsubscribe)
        ++sends;
      return client && client->send(frame);
    }
    StreamControlClient* client = nullptr;
    uint64_t sends = 0;  // requests the engine asked to send: each owes an answer from the control plane
  };
  // What the link watch does to a rail of this subscriber.
  class Links final : public LinkWatch::Rail {
   public:
    explicit Links(SubscriberMedium& m) noexcept : m_(m) {}
    int restore(int rail, const Interface& iface, bool silence) override;
    [[nodiscard]] uint64_t moved(int rail) const noexcept override;

   private:
    SubscriberMedium& m_;
  };

  // Forwards to the engine and notes that the control plane answered.
  class Watch final : public ControlEvents {
   public:
    void on_control_connected(uint64_t now) noexcept override { e->on_control_connected(now); }
    void on_control_disconnected() noexcept override { e->on_control_disconnected(); }
    void on_control_frame(std::span<const std::byte> f, uint64_t now) noexcept override {
      e->on_control_frame(f, now);
      answered = answered || !e->control_peer_failed();  // an impostor's answer is none
    }
    [[nodiscard]] bool control_peer_failed() const noexcept override { return e->control_peer_failed(); }
    void on_retransmitted(uint32_t rid, uint64_t session, std::span<const std::span<const std::byte>> d,
                          uint64_t now) noexcept override {
      e->on_retransmitted(rid, session, d, now);
    }
    [[nodiscard]] uint64_t publisher_position() const noexcept override { return e->publisher_position(); }
    ControlEvents* e = nullptr;
    bool answered = false;
  };
  // An announced control address, and until when it is not taken again
  // after it failed this subscriber.
  struct Endpoint {
    std::string address;
    uint64_t held_until = 0;
    uint32_t failures = 0;
    std::vector<std::byte> verified;  // the signed announcement checked for it (udp.announce_public_key)
    uint64_t heard = 0;               // its last announcement: a dead publisher's stops
  };
  static constexpr size_t kMaxEndpoints = 8;

  void heard_announcement(uint64_t now);
  [[nodiscard]] bool signed_by_publisher(std::span<const std::byte> d, const Announcement& a, uint64_t now);
  void use_control(std::string address, uint64_t now);
  void check_endpoint(ControlEvents& e, uint64_t now);
  Endpoint* endpoint(const std::string& address) noexcept;

  Options opts_;
  Rails rails_;
  bool gro_[2] = {false, false};  // before fd_: opening a rail sets it
  UniqueFd fd_[2];
  SourceCounters counters_;
  SubscriberCounters sub_counters_;
  UdpSource source_;
  std::unique_ptr<StreamControlClient> client_;
  Channel channel_;
  std::string control_;
  std::string forged_;             // the last address reported as announced without the publisher's signature
  uint64_t next_verify_ = 0;       // a new signed announcement is verified from then
  uint64_t announcements_seen_ = 0;
  uint64_t down_since_ = 0;      // the connection in use has not been up since then (0: it is up)
  uint64_t asked_since_ = 0;     // a request has waited for an answer since then (0: none waits)
  uint64_t sends_seen_ = 0;
  std::vector<Endpoint> endpoints_;  // announced, oldest first (kMaxEndpoints)
  std::string stuck_;              // the failing address last reported as having no other to go to
  Watch watch_;
  LinkWatch link_;
  Links links_{*this};
};

static_assert(media::PublisherMedium<udp::PublisherMedium>);
static_assert(media::SubscriberMedium<udp::SubscriberMedium>);

}  // namespace mdcast::media::udp
