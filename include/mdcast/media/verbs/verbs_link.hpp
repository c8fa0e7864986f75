// Watching the port and the multicast group a verbs data path uses, so that a
// fabric event does not need a restart: a port that goes down and comes back
// ACTIVE, a group the subnet manager deleted (RDMA_CM_EVENT_MULTICAST_ERROR),
// a subnet manager that asks its clients to register again
// (IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_SM_CHANGE: on InfiniBand the new SM
// knows no membership), a changed LID or GID table: the group is left and
// joined again (rdma_leave_multicast + rdma_join_multicast, the join's answer
// awaited without blocking), the UD QP attached with the new MGID/MLID, the
// publisher's address handle made again from the new join's parameters -
// with backoff while that fails (10 ms, doubling up to 1 s). What was missed
// meanwhile comes back through the feed's ordinary recovery (retransmit
// requests over RC, snapshots). The model is the UDP medium's LinkWatch
// (media/udp/udp_link.hpp); the counters have the same names.
//
// Control code, never the data path: the medium's poll_control calls poll().
// The device's async events (ibv_get_async_event on the context's async fd,
// non-blocking, each one acknowledged) and the data cm_id's events are read
// every 100 ms, every 10 ms while a join is in flight or a send failed; the
// port's state (ibv_query_port) is read on the same 100 ms tick as a fallback
// for an event missed. What it saw is in LinkCounters ("link.*"), and said
// once per event through Options::log.
//
// rdma_cm opens one ibv_context per device for the whole process, so its
// async events are shared by every medium on the device (channels, publisher
// and subscriber in one process): the first watcher to look reads them and
// each watcher acts on what happened to its port since it last looked.
//
// What Soft-RoCE (rxe, Debian kernel 6.1) does when its netdev goes down and
// up, measured in the VM (tools/softroce-vm): IBV_EVENT_PORT_ERR at once, the
// port DOWN; the publisher's UD QP goes to the error state with its first
// send ("local QP operation error"), every later send is flushed; a
// subscriber's UD QP stays in RTR and keeps its attachment. IBV_EVENT_PORT_ACTIVE
// when the netdev is up again. A join on the port ACTIVE again succeeds at
// once; the 224.0.0.0/4 route the kernel dropped with the netdev is not needed
// by rxe (it routes by the netdev). So the publisher resets its QP (the
// rejoin does) and stops posting while the port is down: sends are counted
// (sink.dropped_link_down) and stay in the retransmit ring.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cstdint>
#include <memory>
#include <string>

#include "mdcast/core/clock.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs {

// LinkCounters ("link.*") are in verbs_counters.hpp: the counter catalogue reads them without rdma-core.

// What the data cm_id's event channel said since the last look.
struct CmEvents {
  int multicast_errors = 0;  // RDMA_CM_EVENT_MULTICAST_ERROR outside a join: the group is gone
  int addr_changes = 0;      // RDMA_CM_EVENT_ADDR_CHANGE
  bool device_removed = false;
  bool joined = false;       // a join in flight completed (QP attached, address handle made)
  bool join_failed = false;  // ... or failed; `error` says why
  std::string error;
};

class DeviceEvents;  // verbs_link.cpp: the async events of one ibv_context, shared in the process

class LinkWatch {
 public:
  static constexpr uint64_t kCheckNs = 100 * kNsPerMs;     // events and port state read this often
  static constexpr uint64_t kSoonNs = 10 * kNsPerMs;       // ... or this often while joining or sends fail
  static constexpr uint64_t kFirstRetryNs = 10 * kNsPerMs; // a failed rejoin is retried after this, doubling
  static constexpr uint64_t kMaxRetryNs = kNsPerSec;       // ... up to this
  static constexpr uint64_t kSilenceNs = kNsPerSec;        // a subscriber that heard nothing this long joins again
  static constexpr uint64_t kMaxSilenceNs = 8 * kNsPerSec; // ... then again after doubling waits up to this

  // The group member watched: a VerbsSink or a VerbsReceiver, through a small
  // adapter in the medium.
  struct Member {
    // Leaves the group (detaching the QP) and asks to join it again; resets
    // the UD QP first when it is in the error state. 0, or an errno with
    // `why` saying what failed. The answer comes through poll_events().
    virtual int start_rejoin(std::string& why) = 0;
    // Drains the data cm_id's events; completes a join in flight.
    virtual CmEvents poll_events() = 0;
    // The port is down (true) or the group joined again (false).
    virtual void link_down(bool down) noexcept = 0;
    // Datagrams moved (posted, or received) so far: an outage ends when this
    // moves after the group was joined again.
    [[nodiscard]] virtual uint64_t moved() const noexcept = 0;

   protected:
    ~Member() = default;
  };

  // Watches port `port` of ctx; `what` names the role in the log
  // ("publisher", "subscriber"); `silence`: join again when nothing is heard.
  LinkWatch(ibv_context* ctx, uint8_t port, const Options& o, std::string what, bool silence);
  ~LinkWatch();
  LinkWatch(const LinkWatch&) = delete;  // holds the medium's Options by address
  LinkWatch& operator=(const LinkWatch&) = delete;

  // Reads events and the port when due, joins again what needs it, ends
  // outages when data moves. Returns work done. Throws Error only when the
  // device was removed (nothing on it can be used again).
  size_t poll(Member& m, uint64_t now);

  // Look at the next poll rather than the next tick (a send failed: maybe
  // the port went down), but no more often than every 10 ms.
  void check_soon() noexcept;

  // The port is down or the group not joined again yet: nothing can arrive.
  [[nodiscard]] bool down() const noexcept { return phase_ != Phase::kUp; }
  // The port itself is down (a failed QP is reset by the rejoin, not before).
  [[nodiscard]] bool port_down() const noexcept { return phase_ == Phase::kPortDown; }
  [[nodiscard]] const LinkCounters& counters() const noexcept { return counters_; }

 private:
  enum class Phase : uint8_t { kUp, kPortDown, kJoinDue, kJoining };

  void lose(Member& m, Phase to, uint64_t now, const std::string& why);
  void try_rejoin(Member& m, uint64_t now);
  void rejoin_failed(const std::string& why, uint64_t now);
  void check_flow(Member& m, uint64_t now);
  [[nodiscard]] bool port_active(std::string* state) const;
  [[nodiscard]] bool injected_group_error();

  const Options* opts_;
  std::string what_;
  std::string dev_;
  ibv_context* ctx_;
  uint8_t port_;
  bool silence_;
  std::shared_ptr<DeviceEvents> events_;
  std::string trigger_;  // MDCAST_VERBS_GROUP_ERROR_TRIGGER (a test knob: verbs_link.cpp)
  struct Seen {
    uint64_t err = 0, active = 0, fabric = 0;
  } seen_;
  Phase phase_ = Phase::kUp;
  bool outage_ = false;      // down_since_ counts until data moves
  uint64_t down_since_ = 0;
  uint64_t next_try_ = 0;
  uint64_t retry_ = kFirstRetryNs;
  uint64_t join_deadline_ = 0;
  uint64_t moved_ = 0;
  uint64_t quiet_since_ = 0;  // data last moved (0: never yet)
  uint64_t silence_wait_ = kSilenceNs;
  bool silence_join_ = false;  // the join in flight is a silence rejoin
  uint64_t next_check_ = 0;
  uint64_t last_check_ = 0;
  LinkCounters counters_;
};

}  // namespace mdcast::media::verbs
