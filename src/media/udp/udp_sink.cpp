// sendmmsg with UDP GSO for the UDP medium's publisher.
#include "mdcast/media/udp/udp_sink.hpp"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace mdcast::media::udp {
namespace {

// "Not now": the socket buffer or the device queue is full.
bool transient(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS || e == EINTR; }

}  // namespace

SendResult UdpSink::send_unsequenced(std::span<const std::byte> d) noexcept {
  for (size_t r = 0; r < n_; ++r) {
    if (fd_[r] < 0) continue;
    counters_->syscalls.add();
    if (::send(fd_[r], d.data(), d.size(), MSG_DONTWAIT) >= 0) {
      counters_->heartbeats.add();
      continue;
    }
    const int e = errno;
    // Rail A decides: a heartbeat another could not take is one it lost.
    if (transient(e)) {
      if (r == 0) {
        counters_->back_pressured.add();
        return SendResult::kBackPressured;
      }
      continue;
    }
    counters_->send_errors.add();
    last_errno_ = e;
  }
  return SendResult::kSent;
}

size_t UdpSink::send_batch(std::span<const Outgoing> batch) noexcept {
  batch = batch.first(std::min(batch.size(), kMaxMessages));
  size_t taken = send_rail(fd_[0], batch);
  for (size_t r = 1; r < n_ && taken; ++r)
    if (fd_[r] >= 0) taken = std::min(taken, send_rail(fd_[r], batch.first(taken)));
  return taken;
}

size_t UdpSink::send_rail(int fd, std::span<const Outgoing> batch) noexcept {
  size_t sent = 0;  // datagrams of the batch this rail took
  while (sent < batch.size()) {
    // Messages: with GSO, a run of equal-sized datagrams (and one shorter
    // last one, as the kernel allows) is one message cut by the kernel.
    size_t m = 0;
    size_t i = sent;
    while (i < batch.size() && m < kMaxMessages) {
      const size_t seg = batch[i].bytes.size();
      size_t j = i + 1;
      if (gso_) {
        size_t bytes = seg;
        while (j < batch.size() && j - i < kMaxSegments && batch[j].bytes.size() <= seg &&
               bytes + batch[j].bytes.size() <= kMaxGsoBytes) {
          bytes += batch[j].bytes.size();
          const bool shorter = batch[j].bytes.size() < seg;
          ++j;
          if (shorter) break;  // only the last segment may be shorter
        }
      }
      for (size_t k = i; k < j; ++k)
        iov_[k - sent] = {const_cast<std::byte*>(batch[k].bytes.data()), batch[k].bytes.size()};
      msghdr& h = msgs_[m].msg_hdr;
      h = {};
      h.msg_iov = &iov_[i - sent];
      h.msg_iovlen = j - i;
      if (j - i > 1) {
        h.msg_control = cmsg_[m].data();
        h.msg_controllen = cmsg_[m].size();
        cmsghdr* c = CMSG_FIRSTHDR(&h);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        const auto gso_size = static_cast<uint16_t>(seg);
        std::memcpy(CMSG_DATA(c), &gso_size, sizeof gso_size);
      }
      segments_[m] = static_cast<uint32_t>(j - i);
      ++m;
      i = j;
    }
    counters_->syscalls.add();
    const int r = ::sendmmsg(fd, msgs_.data(), static_cast<unsigned>(m), MSG_DONTWAIT);
    const int e = r < 0 ? errno : 0;
    const size_t ok = r < 0 ? 0 : static_cast<size_t>(r);
    for (size_t k = 0; k < ok; ++k) {
      sent += segments_[k];
      counters_->datagrams.add(segments_[k]);
      if (segments_[k] > 1) counters_->gso_sends.add();
    }
    if (ok == m) continue;
    // The message at `ok` was refused: find out why with the socket's errno
    // (a partial sendmmsg reports it on the next call; ask again for it alone).
    int why = e;
    if (r >= 0) {
      const int again = ::sendmsg(fd, &msgs_[ok].msg_hdr, MSG_DONTWAIT);
      counters_->syscalls.add();
      if (again >= 0) {
        sent += segments_[ok];
        counters_->datagrams.add(segments_[ok]);
        continue;
      }
      why = errno;
    }
    if (transient(why)) {
      counters_->back_pressured.add();
      return sent;
    }
    if (segments_[ok] > 1 && (why == EIO || why == EINVAL || why == EOPNOTSUPP || why == ENOPROTOOPT)) {
      // The device or the route cannot segment: every datagram on its own from now on.
      gso_ = false;
      counters_->gso_fallbacks.add();
      last_errno_ = why;
      continue;
    }
    // Refused for good (no route, a firewall, a datagram too large): those
    // datagrams are lost on the wire, which retransmission recovers.
    sent += segments_[ok];
    counters_->send_errors.add(segments_[ok]);
    last_errno_ = why;
  }
  return sent;
}

}  // namespace mdcast::media::udp
