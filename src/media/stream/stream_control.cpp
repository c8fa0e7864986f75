#include "mdcast/media/stream/stream_control.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/un.h>

#include <algorithm>
#include <cstring>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::media {
namespace {

void tune(int fd, int family) {
  if (family == AF_INET) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
}

}  // namespace

// ------------------------------------------------------------------ client --

StreamControlClient::StreamControlClient(std::string address, bool use_io_uring)
    : address_(std::move(address)), rbuf_(64u << 10) {
  (void)SocketAddress::parse(address_);  // fail early on a malformed address
  if (!use_io_uring) {
    ready_ring_ = ReadinessRing::disabled("off (use_io_uring = false): a recv every poll");
    return;
  }
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) {
    ready_ring_ = ReadinessRing::disabled(fmt::format("epoll_create1: {}: a recv every poll", std::strerror(errno)));
    return;
  }
  ready_ring_ = ReadinessRing(epoll_.get());
}

std::string StreamControlClient::readiness_mode() const {
  return ready_ring_.available() ? std::string("io_uring") : "recv per poll (" + ready_ring_.reason() + ")";
}

void StreamControlClient::close() noexcept {
  fd_.reset();  // leaves epoll_ with it
  watched_ = false;
  connected_ = false;
  connecting_ = false;
  in_ = wire::FrameAssembler();
  out_.clear();
  out_off_ = 0;
}

bool StreamControlClient::send(std::span<const std::byte> frame) {
  if (!connected_) return false;
  out_.insert(out_.end(), frame.begin(), frame.end());
  return flush();
}

bool StreamControlClient::flush() noexcept {
  while (out_off_ < out_.size()) {
    const ssize_t n = ::send(fd_.get(), out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
      return false;
    }
    out_off_ += static_cast<size_t>(n);
  }
  out_.clear();
  out_off_ = 0;
  return true;
}

std::optional<ucred> StreamControlClient::peer() const noexcept {
  if (!fd_ || !connected_) return std::nullopt;
  sockaddr_storage ss{};
  socklen_t sl = sizeof ss;
  if (::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &sl) != 0 || ss.ss_family != AF_UNIX) return std::nullopt;
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_PEERCRED, &c, &len) != 0 || len != sizeof c) return std::nullopt;
  return c;
}

StreamControlClient::Events StreamControlClient::poll(uint64_t now,
                                                      const std::function<void(std::span<const std::byte>)>& on_frame) {
  Events ev;
  if (!fd_) {
    if (now < next_attempt_) return ev;
    backoff_ns_ = std::min<uint64_t>(backoff_ns_ ? backoff_ns_ * 2 : 50 * kNsPerMs, kNsPerSec);
    next_attempt_ = now + backoff_ns_;
    try {
      const SocketAddress sa = SocketAddress::parse(address_);
      fd_ = UniqueFd(::socket(sa.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!fd_) return ev;
      tune(fd_.get(), sa.family);
      if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) == 0) {
        connected_ = true;
      } else if (errno == EINPROGRESS) {
        connecting_ = true;
      } else {
        last_error_ = fmt::format("connect {}: {}", address_, std::strerror(errno));
        fd_.reset();
        return ev;
      }
    } catch (const Error& e) {
      last_error_ = e.what();
      fd_.reset();
      return ev;
    }
    if (connected_) {
      backoff_ns_ = 0;
      ev.connected = true;
    }
  }
  if (connecting_) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      last_error_ = fmt::format("connect {}: {}", address_, std::strerror(err));
      close();
      return ev;
    }
    // Writable means connected; probe with a zero-length send.
    if (::send(fd_.get(), nullptr, 0, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == ENOTCONN) return ev;
    connecting_ = false;
    connected_ = true;
    backoff_ns_ = 0;
    ev.connected = true;
  }
  if (!flush()) {
    close();
    ev.disconnected = true;
    return ev;
  }
  if (!watched_) {
    // Bytes that came before the ADD may wake nobody: read once regardless.
    epoll_event e{};
    e.events = EPOLLIN;
    watched_ = ready_ring_.available() && ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd_.get(), &e) == 0;
    rescan_ = true;
  }
  // Completions consumed before recv: data after it posts a new one.
  const bool woke = ready_ring_.check();
  if (!woke && !rescan_ && watched_) {
    ++idle_polls_;
    return ev;
  }
  rescan_ = false;
  bool drained = false;
  for (int round = 0; round < 64; ++round) {
    ++recvs_;
    const ssize_t n = ::recv(fd_.get(), rbuf_.data(), rbuf_.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      last_error_ = n == 0 ? "publisher closed the control connection" : std::strerror(errno);
      close();
      ev.disconnected = true;
      ev.connected = false;
      return ev;
    }
    if (n < 0) {
      drained = errno != EINTR;
      break;
    }
    in_.append({rbuf_.data(), static_cast<size_t>(n)});
    std::span<const std::byte> frame;
    for (;;) {
      const auto st = in_.next(frame);
      if (st == wire::FrameAssembler::Status::kNeedMore) break;
      if (st == wire::FrameAssembler::Status::kBadFrame) {
        last_error_ = "publisher sent an unparseable control stream";
        close();
        ev.disconnected = true;
        return ev;
      }
      on_frame(frame);
    }
    if (static_cast<size_t>(n) < rbuf_.size()) {
      drained = true;
      break;
    }
  }
  // What stays in the socket keeps it readable but posts nothing new.
  if (!drained) rescan_ = true;
  return ev;
}

}  // namespace mdcast::media
