// The UDP subscriber's data path: one recvmmsg per rail per poll into
// buffers allocated at setup, GRO super-datagrams cut back into the
// publisher's datagrams, handed to the engine in place. With two rails
// (A/B) both are read in turn and every copy is handed on: the engine's
// exact delivery keeps the first and drops the other as a duplicate, so a
// datagram one rail lost is simply the other rail's.
//
// What is not a datagram of the feed is the medium's: the publisher's
// control-address announcements (udp_announce.hpp) are kept for the medium,
// never handed to the engine.
#pragma once

#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/udp/udp_announce.hpp"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace mdcast::media::udp {

#define MDCAST_UDP_SOURCE_COUNTERS(X)                                                                  \
  X(rail_a_datagrams, "datagrams received on rail A")                                                \
  X(rail_b_datagrams, "datagrams received on rail B")                                                \
  X(kernel_drops, "datagrams the kernel dropped: socket buffer full (SO_RXQ_OVFL, both rails)")      \
  X(truncated, "datagrams larger than the receive buffer (dropped)")                                 \
  X(syscalls, "recvmmsg calls")                                                                      \
  X(gro_batches, "receives that carried several datagrams (UDP GRO)")                                \
  X(announcements, "control-address announcements heard")                                           \
  X(rail_a_cut, "rail A datagrams dropped by the configured cut (udp.cut_a: demo, tests)")
MDCAST_DEFINE_COUNTER_STRUCT(SourceCounters, MDCAST_UDP_SOURCE_COUNTERS);

class UdpSource {
 public:
  static constexpr size_t kBatch = 32;  // datagrams (or GRO super-datagrams) per recvmmsg

  // fds: rail A, and rail B or -1; borrowed from the medium. buffer_bytes:
  // one receive (64 KiB with GRO: a super-datagram; else one datagram).
  UdpSource(int rail_a, int rail_b, size_t buffer_bytes, SourceCounters& c);
  UdpSource(const UdpSource&) = delete;
  UdpSource& operator=(const UdpSource&) = delete;

  // Hands up to `budget` receives' worth of datagrams to fn(datagram,
  // receive_ns); a GRO receive counts once, however many datagrams it cut into.
  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    size_t n = poll_rail(0, fn, budget);
    if (fd_[1] >= 0) n += poll_rail(1, fn, budget);
    return n;
  }
  // Sleeps until a rail has data or the timeout passed.
  bool block(uint64_t timeout_ns) noexcept {
    std::array<pollfd, 2> p{{{fd_[0], POLLIN, 0}, {fd_[1], POLLIN, 0}}};
    const int ms = static_cast<int>(std::max<uint64_t>(1, timeout_ns / kNsPerMs));
    ::poll(p.data(), fd_[1] >= 0 ? 2 : 1, ms);
    return true;
  }

  // Set by the medium at start(): the injected cut of rail A, absolute times.
  void set_cut(uint64_t from_ns, uint64_t until_ns) noexcept {
    cut_from_ = from_ns;
    cut_until_ = until_ns;
  }
  // The last announcement heard (the medium reads it from its control duty).
  [[nodiscard]] const AnnounceBox& announced() const noexcept { return announce_; }

 private:
  template <class Fn>
  size_t poll_rail(int rail, Fn& fn, size_t budget) noexcept {
    const unsigned vlen = static_cast<unsigned>(std::clamp<size_t>(budget, 1, kBatch));
    Rx& rx = rx_[rail];
    for (unsigned i = 0; i < vlen; ++i) {
      msghdr& h = rx.msgs[i].msg_hdr;
      h.msg_control = rx.cmsg[i].data();
      h.msg_controllen = rx.cmsg[i].size();
      h.msg_flags = 0;
    }
    counters_->syscalls.add();
    const int got = ::recvmmsg(fd_[rail], rx.msgs.data(), vlen, MSG_DONTWAIT, nullptr);
    if (got <= 0) return 0;
    const uint64_t now = monotonic_ns();
    const bool cut = rail == 0 && now >= cut_from_ && now < cut_until_;
    uint64_t datagrams = 0;
    for (int i = 0; i < got; ++i) {
      msghdr& h = rx.msgs[i].msg_hdr;
      const size_t len = rx.msgs[i].msg_len;
      size_t seg = len;
      for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
          uint32_t drops = 0;
          std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
          if (drops != rx.drops) {
            counters_->kernel_drops.add(static_cast<uint32_t>(drops - rx.drops));
            rx.drops = drops;
          }
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
          int gso = 0;
          std::memcpy(&gso, CMSG_DATA(c), sizeof gso);
          if (gso > 0) seg = static_cast<size_t>(gso);
        }
      }
      if (h.msg_flags & MSG_TRUNC) [[unlikely]] {
        counters_->truncated.add();
        continue;
      }
      if (seg < len) counters_->gro_batches.add();
      const std::byte* base = static_cast<const std::byte*>(h.msg_iov->iov_base);
      for (size_t off = 0; off < len; off += seg) {
        const std::span<const std::byte> d(base + off, std::min(seg, len - off));
        ++datagrams;
        if (is_announcement(d)) [[unlikely]] {
          counters_->announcements.add();
          announce_.store(d);
        } else if (cut) [[unlikely]] {
          counters_->rail_a_cut.add();
        } else {
          hand_datagram(fn, d, now, rail == 0 ? RailId::kA : RailId::kB);
        }
      }
    }
    (rail == 0 ? counters_->rail_a_datagrams : counters_->rail_b_datagrams).add(datagrams);
    return static_cast<size_t>(got);
  }

  struct Rx {
    std::unique_ptr<std::byte[]> buffers;
    std::array<mmsghdr, kBatch> msgs{};
    std::array<iovec, kBatch> iov{};
    // SO_RXQ_OVFL (u32) and UDP_GRO (int), aligned for cmsghdr.
    struct alignas(cmsghdr) Cmsg : std::array<std::byte, CMSG_SPACE(sizeof(uint32_t)) + CMSG_SPACE(sizeof(int))> {};
    std::array<Cmsg, kBatch> cmsg{};
    uint32_t drops = 0;  // the socket's drop count as of the last receive
  };

  std::array<int, 2> fd_;
  std::array<Rx, 2> rx_;
  SourceCounters* counters_;
  AnnounceBox announce_;
  uint64_t cut_from_ = UINT64_MAX;
  uint64_t cut_until_ = 0;
};

}  // namespace mdcast::media::udp
