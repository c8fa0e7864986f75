// Watching the interfaces the UDP rails use, so that a fabric event does not
// need a restart: an interface that goes down (or loses its carrier, or goes
// away) and comes back gets its rail set up again by the medium - the group
// joined again (subscriber), the multicast interface set again (publisher) -
// with backoff while that fails. What was missed meanwhile comes back through
// the feed's ordinary recovery (retransmit requests, snapshots).
//
// Control code, never the data path: the medium's poll_control calls poll(),
// which reads each rail's interface flags (two ioctls) every 100 ms and
// otherwise compares a few numbers. What it saw is in LinkCounters
// ("link.*"), and said once per event through Options::log.
//
// What the kernel does (measured in network namespaces): `ip link set X
// down/up` and a lost carrier keep a socket's group membership, and so does
// removing the interface's address; an interface deleted and created again
// (a new index) loses it. The rail is set up again after every event all
// the same: dropping and adding the membership sends a fresh IGMP report, so
// a snooping switch that forgot the port during the outage learns it again.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/udp/udp_socket.hpp"

namespace mdcast::media::udp {

#define MDCAST_UDP_LINK_COUNTERS(X)                                                                             \
  X(down, "times a rail's interface was seen down, without carrier or gone (checked every 100 ms)")            \
  X(rejoins, "rails set up again after their interface came back: group joined again, or multicast interface set again") \
  X(rejoin_failures, "attempts to set a rail up again that failed (retried 10 ms later, doubling up to 1 s)")  \
  X(silence_rejoins, "groups joined again because a rail whose interface is up heard nothing for 1 s")          \
  X(down_ns, "time without data link events caused: from an interface seen down to data flowing on it again")   \
  X(rails_down, "rails whose interface is down now, or not yet set up again (a level: alert while above 0)")
MDCAST_DEFINE_COUNTER_STRUCT(LinkCounters, MDCAST_UDP_LINK_COUNTERS);

class LinkWatch {
 public:
  static constexpr uint64_t kCheckNs = 100 * kNsPerMs;     // interface flags read this often
  static constexpr uint64_t kSoonNs = 10 * kNsPerMs;       // ... or this often while sends fail
  static constexpr uint64_t kFirstRetryNs = 10 * kNsPerMs; // a failed rejoin is retried after this, doubling
  static constexpr uint64_t kMaxRetryNs = kNsPerSec;       // ... up to this
  static constexpr uint64_t kSilenceNs = kNsPerSec;        // a rail that heard nothing this long is joined again
  static constexpr uint64_t kMaxSilenceNs = 8 * kNsPerSec; // ... then again after doubling waits up to this

  // What a rail's owner does when its interface is back: set the rail up on
  // `iface` (whose index may be new); returns 0 or the errno of the failure.
  // `silence`: a rail whose interface never went down, joined again because
  // it heard nothing (subscribers only).
  struct Rail {
    virtual int restore(int rail, const Interface& iface, bool silence) = 0;
    // Datagrams moved on the rail so far (received, or sent): the outage
    // ends when this moves after the rail was set up again.
    [[nodiscard]] virtual uint64_t moved(int rail) const noexcept = 0;

   protected:
    ~Rail() = default;
  };

  // Watches iface[0..n); `what` names the role in the log ("publisher",
  // "subscriber"); `silence`: rejoin a rail that hears nothing (subscribers).
  LinkWatch(const Interface* iface, size_t n, const Options& o, std::string what, bool silence);
  LinkWatch(const LinkWatch&) = delete;  // holds the medium's Options by address
  LinkWatch& operator=(const LinkWatch&) = delete;

  // Reads the interfaces when due, sets up again what came back (through
  // rail.restore), ends outages when data moves. Returns work done.
  size_t poll(Rail& rail, uint64_t now);

  // The interfaces are read sooner (a send refused: ENETUNREACH), but no
  // more often than every 10 ms however many sends fail.
  void check_soon() noexcept { next_check_ = std::min(next_check_, last_check_ + kSoonNs); }

  // Every rail's interface is down (or not yet set up again): this host
  // hears nothing, whoever is at fault.
  [[nodiscard]] bool all_down() const noexcept;
  [[nodiscard]] bool down(int rail) const noexcept { return state_[rail].down; }
  [[nodiscard]] const LinkCounters& counters() const noexcept { return counters_; }
  [[nodiscard]] const Interface& interface(int rail) const noexcept { return state_[rail].iface; }

 private:
  struct State {
    Interface iface;
    bool down = false;          // seen down, not yet set up again
    bool outage = false;        // down_since_ counts until data moves
    uint64_t down_since = 0;
    uint64_t next_try = 0;      // rejoin attempts while it fails
    uint64_t retry = 0;
    uint64_t moved = 0;         // rail.moved() at the last check
    uint64_t quiet_since = 0;   // data last moved (0: never yet)
    uint64_t silence_wait = 0;  // the next silence rejoin after this much more quiet
  };
  // Whether the interface is usable: up, with carrier, and its index now (0: gone).
  [[nodiscard]] bool read_flags(State& s, int* index, std::string* why) const;
  void try_restore(Rail& rail, int r, uint64_t now);
  void check_flow(Rail& rail, int r, uint64_t now);

  const Options* opts_;
  std::string what_;
  bool silence_;
  size_t n_;
  UniqueFd fd_;  // for the ioctls
  State state_[2];
  LinkCounters counters_;
  uint64_t next_check_ = 0;
  uint64_t last_check_ = 0;
};

}  // namespace mdcast::media::udp
