// The UDP publisher's data path: each batch the engine commits leaves in one
// sendmmsg per rail, runs of equal-sized datagrams as one UDP GSO send
// (UDP_SEGMENT: the kernel cuts the run into datagrams), from the engine's
// retransmit ring in place. A socket buffer that is full is back-pressure:
// the engine offers the rest again, in order.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "mdcast/core/counter.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::media::udp {

#define MDCAST_UDP_SINK_COUNTERS(X)                                                                      \
  X(datagrams, "datagrams sent (each rail counts its own)")                                            \
  X(heartbeats, "unsequenced datagrams sent (heartbeats, announcements)")                              \
  X(syscalls, "sendmmsg/send calls")                                                                   \
  X(gso_sends, "messages the kernel cut into several datagrams (UDP GSO)")                             \
  X(back_pressured, "sends the socket buffer refused for now (offered again, nothing lost)")           \
  X(send_errors, "datagrams the kernel refused for good (unreachable, firewall): lost, recovered by retransmit") \
  X(gso_fallbacks, "times GSO was refused and turned off")                                             \
  X(announcements, "control-address announcements sent")
MDCAST_DEFINE_COUNTER_STRUCT(SinkCounters, MDCAST_UDP_SINK_COUNTERS);

class UdpSink {
 public:
  static constexpr size_t kMaxMessages = 32;  // per sendmmsg
  static constexpr size_t kMaxSegments = 64;  // UDP_MAX_SEGMENTS on every kernel with GSO
  static constexpr size_t kMaxGsoBytes = 65000;

  // Rail A, rail B and the further destinations (Options::also_to) at most.
  static constexpr size_t kMaxDestinations = 2 + 16;

  // fds: rail A, and rail B or an invalid fd. Borrowed: the medium owns them.
  UdpSink(int rail_a, int rail_b, bool gso, SinkCounters& c) noexcept : gso_(gso), counters_(&c) {
    fd_.fill(-1);
    fd_[0] = rail_a;
    fd_[1] = rail_b;
  }
  // A further destination (a unicast leg), sent everything rail A is;
  // setup only. False when kMaxDestinations are in use.
  bool add_destination(int fd) noexcept {
    for (size_t i = 2; i < fd_.size(); ++i)
      if (fd_[i] < 0) {
        fd_[i] = fd;
        n_ = i + 1;
        return true;
      }
    return false;
  }

  SendResult send(std::span<const std::byte> d, uint64_t seq) noexcept {
    const Outgoing one{d, seq};
    return send_batch({&one, 1}) == 1 ? SendResult::kSent : SendResult::kBackPressured;
  }
  SendResult send_unsequenced(std::span<const std::byte> d) noexcept;
  // Sends a prefix of the batch on every rail and destination; returns its
  // length. One that takes less than rail A holds the batch back to what all
  // took (the others then send those again: their subscribers drop the copies).
  size_t send_batch(std::span<const Outgoing> batch) noexcept;

  [[nodiscard]] bool gso() const noexcept { return gso_; }
  // errno of the last datagram refused for good (0: none), for the medium to report.
  [[nodiscard]] int last_error() const noexcept { return last_errno_; }

 private:
  size_t send_rail(int fd, std::span<const Outgoing> batch) noexcept;

  std::array<int, kMaxDestinations> fd_;
  size_t n_ = 2;  // fd_[0, n_) may be in use
  bool gso_;
  SinkCounters* counters_;
  int last_errno_ = 0;
  // Scratch for one sendmmsg: messages, their gathers, their GSO sizes.
  std::array<mmsghdr, kMaxMessages> msgs_{};
  std::array<iovec, kMaxMessages> iov_{};  // one per datagram: a batch is at most kMaxMessages
  std::array<uint32_t, kMaxMessages> segments_{};
  alignas(cmsghdr) std::array<std::array<std::byte, CMSG_SPACE(sizeof(uint16_t))>, kMaxMessages> cmsg_{};
};

static_assert(media::BatchSink<UdpSink>);

}  // namespace mdcast::media::udp
