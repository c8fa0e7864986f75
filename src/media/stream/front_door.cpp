// The shared control endpoint (front_door.hpp): accept, read the channel the
// first frame names without taking a byte, hand the socket to that channel.
#include "mdcast/media/stream/front_door.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <span>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media {
namespace {

constexpr int kEventsPerWait = 64;

uint64_t elapsed(uint64_t now, uint64_t since) noexcept { return now > since ? now - since : 0; }

}  // namespace

// ------------------------------------------------------------------ inbox --

ConnectionInbox::~ConnectionInbox() {
  for (UniqueFd fd = pop(); fd; fd = pop()) {
  }
}

bool ConnectionInbox::push(UniqueFd& fd) noexcept {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail - head_.load(std::memory_order_acquire) == kCapacity) return false;
  fds_[tail % kCapacity] = fd.release();
  tail_.store(tail + 1, std::memory_order_release);
  return true;
}

UniqueFd ConnectionInbox::pop() noexcept {
  const uint64_t head = head_.load(std::memory_order_relaxed);
  if (head == tail_.load(std::memory_order_acquire)) return {};
  UniqueFd fd(fds_[head % kCapacity]);
  head_.store(head + 1, std::memory_order_release);
  return fd;
}

// ---------------------------------------------------------------- the door --

void FrontDoorConfig::validate() const {
  if (max_pending == 0 || accepts_per_poll == 0 || first_frame_timeout_ns == 0 || accept_pause_ns == 0)
    fail("control front door: max_pending ({}), accepts_per_poll ({}), the first-frame timeout and the accept "
         "pause must be positive",
         max_pending, accepts_per_poll);
}

ControlFrontDoor::ControlFrontDoor(const std::string& address, const FrontDoorConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  files_ = OpenFilesClaim(cfg_.max_pending, fmt::format("shared control endpoint {} (connections not yet named: {})",
                                                        address, cfg_.max_pending));
  listener_ = StreamListener(address, "shared control endpoint");
  listener_.admit_only(cfg_.peers);
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) fail_errno("shared control endpoint {}: epoll_create1", address);
  listening_ = false;
  watch_listener(true);
  if (!listening_) fail_errno("shared control endpoint {}: epoll_ctl", address);
}

ControlFrontDoor::~ControlFrontDoor() = default;

std::shared_ptr<ConnectionInbox> ControlFrontDoor::add_channel(uint16_t channel) {
  auto [it, fresh] = inboxes_.try_emplace(channel);
  if (!fresh) fail("shared control endpoint {}: channel {} added twice", address(), channel);
  it->second = std::make_shared<ConnectionInbox>(channel);
  return it->second;
}

std::vector<uint16_t> ControlFrontDoor::channels() const {
  std::vector<uint16_t> out;
  for (const auto& [id, inbox] : inboxes_) out.push_back(id);
  return out;
}

std::string ControlFrontDoor::channel_list() const { return wire::format_channel_ids(channels()); }

void ControlFrontDoor::watch_listener(bool on) {
  if (on == listening_) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (::epoll_ctl(epoll_.get(), on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listener_.fd(), &ev) == 0) listening_ = on;
}

void ControlFrontDoor::close_pending(std::map<uint64_t, Pending>::iterator it, Close why, uint32_t rid,
                                     const std::string& text) {
  switch (why) {
    case Close::kUnknownChannel: stats_.unknown_channel.add(); break;
    case Close::kBadFrame: stats_.bad_first_frame.add(); break;
    case Close::kTimeout: stats_.timeouts.add(); break;
    case Close::kEvicted: stats_.evicted.add(); break;
    case Close::kEvictedForDescriptor: stats_.descriptor_evictions.add(); break;
    case Close::kInboxFull: stats_.inbox_full.add(); break;
    case Close::kPeer: stats_.peer_closed.add(); break;
  }
  const int fd = it->second.fd.get();
  if (!text.empty()) {
    // What it sent is read first: closing a TCP socket with unread bytes
    // resets it, and the reset could overtake the reason.
    std::byte sink[4096];
    for (int i = 0; i < 16 && ::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
    }
    const auto code = why == Close::kUnknownChannel ? wire::ErrorCode::kUnknownChannel
                      : why == Close::kInboxFull    ? wire::ErrorCode::kOverloaded
                                                    : wire::ErrorCode::kMalformed;
    try {
      const auto f = wire::encode_control(rid, wire::ErrorReply{code, text});
      (void)::send(fd, f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    } catch (const std::bad_alloc&) {
      // Out of memory: closed without the reason; counted all the same.
    }
  }
  pending_.erase(it);  // closing it leaves the epoll set
}

void ControlFrontDoor::accept_all(uint64_t now, size_t& work) {
  for (size_t k = 0; k < cfg_.accepts_per_poll; ++k) {
    const int fd = listener_.accept();
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EACCES) {
        stats_.refused_peers.add();
        continue;
      }
      // Out of descriptors or memory: the listener stays readable, and a
      // level-triggered wait on it would spin. Look away for a while.
      stats_.accept_failures.add();
      watch_listener(false);
      resume_at_ = now + cfg_.accept_pause_ns;
      return;
    }
    UniqueFd owned(fd);
    if (listener_.on_reserve()) {
      // At the open-files limit: the oldest unnamed connection gives its
      // descriptor to this one; with none, this one is told why.
      if (pending_.empty()) {
        stats_.refused_descriptors.add();
        const auto f = wire::encode_control(
            0, wire::ErrorReply{wire::ErrorCode::kOverloaded,
                                "this publisher is out of file descriptors (raise its open-files limit): try again later"});
        (void)::send(fd, f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        watch_listener(false);
        resume_at_ = now + cfg_.accept_pause_ns;
        return;
      }
      close_pending(pending_.begin(), Close::kEvictedForDescriptor, 0, {});
    }
    stats_.accepted.add();
    ++work;
    if (pending_.size() >= cfg_.max_pending) close_pending(pending_.begin(), Close::kEvicted, 0, {});
    const uint64_t id = next_id_++;
    // Edge-triggered: the door only peeks, so the bytes stay and a
    // level-triggered entry would report them on every wait until the
    // channel is complete; each arrival (or the close) is one event.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      stats_.accept_failures.add();
      continue;
    }
    pending_.emplace(id, Pending{std::move(owned), now});
    examine(id, false, work);  // a client may have written before it was accepted
  }
}

void ControlFrontDoor::examine(uint64_t id, bool hung_up, size_t& work) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const int fd = it->second.fd.get();
  std::byte head[wire::ctl::kRouteBytes];
  const ssize_t n = ::recv(fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) {
    ++work;
    close_pending(it, Close::kPeer, 0, {});
    return;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    ++work;
    close_pending(it, Close::kPeer, 0, {});
    return;
  }
  const auto route = wire::route_first_frame({head, static_cast<size_t>(n)});
  using Kind = wire::FirstFrameRoute::Kind;
  if (route.kind == Kind::kNeedMore) {
    // The rest comes as another edge (or the timeout), unless it hung up.
    if (hung_up) {
      ++work;
      close_pending(it, Close::kPeer, 0, {});
    }
    return;
  }
  ++work;
  const uint32_t rid = load_le<uint32_t>(head + wire::ctl::kRequestId);
  if (route.kind == Kind::kBad) {
    close_pending(it, Close::kBadFrame, rid, fmt::format("shared control endpoint {}: {}", address(), route.why));
    return;
  }
  const auto inbox = inboxes_.find(route.channel);
  if (inbox == inboxes_.end()) {
    close_pending(it, Close::kUnknownChannel, rid,
                  fmt::format("this publisher's control endpoint {} serves channels {}; channel {} is not among them",
                              address(), channel_list(), route.channel));
    return;
  }
  // Out of this epoll set before it is another thread's: that thread's own
  // set reports the bytes waiting.
  (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  if (!inbox->second->push(it->second.fd)) {
    close_pending(it, Close::kInboxFull, rid,
                  fmt::format("channel {} has {} connections waiting to be taken up by its publishing thread: try "
                              "again shortly",
                              route.channel, ConnectionInbox::kCapacity));
    return;
  }
  stats_.routed.add();
  pending_.erase(it);
}

size_t ControlFrontDoor::poll(uint64_t now, uint64_t wait_ns) {
  size_t work = 0;
  if (!listening_ && now >= resume_at_) watch_listener(true);
  // Deadlines: the oldest pending connection's, and a paused listener's.
  while (!pending_.empty() && elapsed(now, pending_.begin()->second.since) >= cfg_.first_frame_timeout_ns) {
    ++work;
    close_pending(pending_.begin(), Close::kTimeout, 0,
                  fmt::format("shared control endpoint {}: no Subscribe or AuthHello naming a channel within {} ms",
                              address(), cfg_.first_frame_timeout_ns / kNsPerMs));
  }
  uint64_t wait = wait_ns;
  if (!pending_.empty()) wait = std::min(wait, pending_.begin()->second.since + cfg_.first_frame_timeout_ns - now);
  if (!listening_) wait = std::min(wait, resume_at_ > now ? resume_at_ - now : 0);
  // Rounded up, so a deadline is never polled for early in a loop.
  const int timeout_ms = wait == 0 ? 0 : static_cast<int>(std::min<uint64_t>((wait + kNsPerMs - 1) / kNsPerMs, 1000));
  epoll_event evs[kEventsPerWait];
  const int n = ::epoll_wait(epoll_.get(), evs, kEventsPerWait, timeout_ms);
  const uint64_t after = timeout_ms ? monotonic_ns() : now;
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == 0) accept_all(after, work);
    else examine(evs[i].data.u64, (evs[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0, work);
  }
  stats_.pending.set(pending_.size());
  return work;
}

}  // namespace mdcast::media
