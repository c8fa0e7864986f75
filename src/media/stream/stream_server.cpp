// The publisher's stream control server (see stream_server.hpp): what each
// client may cost in work, memory, connections and time is bounded here.
#include "mdcast/media/stream/stream_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/stream/stream_control.hpp"

namespace mdcast::media {
namespace {

// The readiness ring's size: 128 completions (2 KiB) between two polls
// before the multishot poll ends and costs a re-arm, where a burst of
// subscribers connecting or reporting at once would overflow a small one.
constexpr unsigned kReadinessEntries = 64;
// Events per epoll_wait; a full batch means more may be waiting.
constexpr int kEventsPerWait = 64;
// Reads per client per serve: a client that keeps its socket full is read
// again at its next turn (epoll is level-triggered), never drained in one go.
constexpr int kMaxReadsPerServe = 4;
// Clients a sweep looks at per poll: a pass over a thousand clients (~80 us)
// is spread over polls, so that no poll stalls the feed for all of them.
constexpr size_t kSweepPerPoll = 128;
// Freed reply memory after which the allocator is asked to give pages back
// (glibc keeps freed heap; four slow clients left 0.5 GB resident behind).
constexpr size_t kTrimAfterBytes = 8u << 20;

uint64_t elapsed(uint64_t now, uint64_t since) noexcept { return now > since ? now - since : 0; }

StreamServerConfig legacy_config(size_t client_reply_bytes, size_t max_clients) {
  StreamServerConfig c;
  c.client_reply_bytes = client_reply_bytes;
  c.reply_budget_bytes = std::max(c.reply_budget_bytes, client_reply_bytes);
  c.max_clients = max_clients;
  return c;
}

}  // namespace

void StreamServerConfig::validate() const {
  if (frames_per_poll == 0 || frames_per_client_per_poll == 0)
    fail("control server: frames_per_poll ({}) and frames_per_client_per_poll ({}) must be at least 1",
         frames_per_poll, frames_per_client_per_poll);
  if (client_reply_bytes == 0 || reply_budget_bytes < client_reply_bytes)
    fail("control server: the reply budget ({} bytes) must be at least one client's share ({} bytes, > 0)",
         reply_budget_bytes, client_reply_bytes);
  if (writable_low_bytes > client_reply_bytes)
    fail("control server: writable_low_bytes ({}) above the client share ({}): on_writable would come while "
         "the client is being cut off",
         writable_low_bytes, client_reply_bytes);
  if (max_clients == 0 || max_unadmitted == 0 || accepts_per_poll == 0)
    fail("control server: max_clients ({}), max_unadmitted ({}) and accepts_per_poll ({}) must be at least 1 "
         "(every client starts un-admitted)",
         max_clients, max_unadmitted, accepts_per_poll);
  if (max_frame_unadmitted < wire::ctl::kHeaderSize || max_frame_admitted < max_frame_unadmitted ||
      max_frame_admitted > wire::ctl::kMaxFrame)
    fail("control server: inbound frame limits {} (un-admitted) and {} (admitted) must satisfy {} <= un-admitted "
         "<= admitted <= {}",
         max_frame_unadmitted, max_frame_admitted, wire::ctl::kHeaderSize, wire::ctl::kMaxFrame);
  if (unadmitted_timeout_ns == 0 || partial_frame_timeout_ns == 0 || idle_timeout_ns == 0 || sweep_interval_ns == 0)
    fail("control server: timeouts and the sweep interval must be positive");
}

StreamControlServer::StreamControlServer(const std::string& address, size_t client_reply_bytes, size_t max_clients)
    : StreamControlServer(address, legacy_config(client_reply_bytes, max_clients)) {}

StreamControlServer::StreamControlServer(const std::string& address, const StreamServerConfig& cfg,
                                         std::shared_ptr<ConnectionInbox> shared)
    : cfg_(cfg), address_(address), inbox_(std::move(shared)), rbuf_(64u << 10) {
  cfg_.validate();
  // Admitted clients, and (when it accepts itself) connections not yet admitted.
  files_ = OpenFilesClaim(
      cfg_.max_clients + (inbox_ ? 0 : cfg_.max_unadmitted),
      inbox_ ? fmt::format("control server {} (control.max_clients {})", address, cfg_.max_clients)
             : fmt::format("control server {} (control.max_clients {} + control.max_unadmitted {})", address,
                           cfg_.max_clients, cfg_.max_unadmitted));
  if (!inbox_) {
    listen_ = StreamListener(address, "control server");
    listen_.admit_only(cfg_.peers);
    address_ = listen_.address();
  }
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) fail_errno("control server {}: epoll_create1", address);
  if (!inbox_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;  // the listening socket; clients are 1, 2, ...
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listen_.fd(), &ev) != 0)
      fail_errno("control server {}: epoll_ctl", address);
  }
  ready_ring_ = cfg_.use_io_uring ? ReadinessRing(epoll_.get(), kReadinessEntries)
                                  : ReadinessRing::disabled("off (use_io_uring = false): an epoll_wait every poll");
  stats_.io_uring.set(ready_ring_.available() ? 1 : 0);
}

StreamControlServer::~StreamControlServer() = default;

std::string StreamControlServer::readiness_mode() const {
  return ready_ring_.available() ? std::string("io_uring") : "epoll_wait per poll (" + ready_ring_.reason() + ")";
}

size_t StreamControlServer::writable_low() const noexcept {
  return cfg_.writable_low_bytes ? cfg_.writable_low_bytes : cfg_.client_reply_bytes / 2;
}

size_t StreamControlServer::queued_bytes(ClientId c) const noexcept {
  const auto it = conns_.find(c);
  if (it == conns_.end() || it->second.dead) return 0;
  return it->second.out_bytes - it->second.out_off;
}

size_t StreamControlServer::buffered_in_bytes() const noexcept {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += c.in.buffered();
  return n;
}

size_t StreamControlServer::buffer_capacity_bytes() const noexcept {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += c.in.capacity();
  return n;
}

// ------------------------------------------------------------ replies ----

void StreamControlServer::send(ClientId id, std::vector<std::byte> frame) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.dead) {
    stats_.replies_dropped.add();
    return;
  }
  Conn& c = it->second;
  if (c.holding) {
    c.held.push_back(std::move(frame));
    return;
  }
  const size_t size = frame.size();
  c.out.push_back(std::move(frame));
  c.out_bytes += size;
  total_out_ += size;
  stats_.frames_out.add();
  flush(id, c);
  if (c.dead) return;
  // What the socket did not take stays queued. A client that cannot keep up
  // with its own replies loses its connection, not the publisher's memory.
  if (c.out_bytes > cfg_.client_reply_bytes) {
    cut(id, c, Cut::kSlow);
    return;
  }
  if (total_out_ > cfg_.reply_budget_bytes) enforce_budget();
}

void StreamControlServer::enforce_budget() {
  // Many clients each under their share can still exhaust the publisher:
  // the one holding the most goes first, until the rest fit.
  while (total_out_ > cfg_.reply_budget_bytes) {
    ClientId worst = 0;
    Conn* wc = nullptr;
    for (auto& [id, c] : conns_)
      if (!c.dead && (!wc || c.out_bytes > wc->out_bytes)) {
        worst = id;
        wc = &c;
      }
    if (!wc || wc->out_bytes == 0) break;
    cut(worst, *wc, Cut::kMemory);
  }
}

void StreamControlServer::flush(ClientId id, Conn& c) {
  while (!c.out.empty() && !c.dead) {
    auto& f = c.out.front();
    const ssize_t n = ::send(c.fd.get(), f.data() + c.out_off, f.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) rescan_ = true;  // the socket may have room: let epoll say so
      else if (errno != EAGAIN && errno != EWOULDBLOCK) cut(id, c, Cut::kPeer);
      break;
    }
    stats_.bytes_out.add(static_cast<uint64_t>(n));
    c.out_off += static_cast<size_t>(n);
    if (c.out_off == f.size()) {
      c.out_bytes -= f.size();
      total_out_ -= f.size();
      c.out.pop_front();
      c.out_off = 0;
    }
  }
  if (c.dead) return;
  // Ask to hear when the socket has room only while replies wait for it.
  const bool want = !c.out.empty();
  if (want != c.want_out) {
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) != 0) {
      cut(id, c, Cut::kPeer);
      return;
    }
    c.want_out = want;
    // A MOD that finds the socket ready wakes the epoll fd only if the entry
    // is not on epoll's ready list already, where level-triggered entries
    // stay after epoll_wait reported them: the ring may hear nothing.
    rescan_ = true;
  }
  if (c.pending && !c.in_writable && c.out_bytes < writable_low()) {
    c.in_writable = true;
    writable_.push_back(id);
  }
}

// -------------------------------------------------------------- input ----

void StreamControlServer::after_frame(ClientId id, Conn& c, ControlHandler& h, uint64_t now, uint32_t rid) {
  const bool admit = h.admitted(id);
  if (c.holding) {
    c.holding = false;
    if (admit) {
      // No room after all: what the handler said (an acknowledgement) is
      // never heard; the Error is.
      std::vector<std::vector<std::byte>>().swap(c.held);
    } else {
      // Still on its way (a handshake step): its replies go out as usual.
      for (auto& f : std::exchange(c.held, {})) {
        send(id, std::move(f));
        if (c.dead) return;
      }
    }
  }
  set_admitted(id, c, admit, now, rid);
  if (!c.dead) note_pending(id, c, h);
}

void StreamControlServer::note_pending(ClientId id, Conn& c, ControlHandler& h) {
  c.pending = h.has_pending(id);
  if (c.pending && !c.in_writable && c.out_bytes < writable_low()) {
    c.in_writable = true;
    writable_.push_back(id);
  }
}

void StreamControlServer::serve(ClientId id, Conn& c, ControlHandler& h, uint64_t now, size_t& work) {
  if (c.budget_poll != poll_no_) {
    c.budget_poll = poll_no_;
    c.frames_this_poll = 0;
  }
  const auto over_budget = [&] { return c.frames_this_poll >= cfg_.frames_per_client_per_poll || frames_left_ == 0; };
  bool socket_empty = false;
  for (int reads = 0;; ++reads) {
    // Frames already buffered first: whole ones are handled while the
    // budgets last, the rest wait their turn in ready_ (epoll will not wake
    // for bytes already read).
    for (;;) {
      const auto st = c.in.peek();
      if (st == wire::FrameAssembler::Status::kNeedMore) break;
      if (st == wire::FrameAssembler::Status::kBadFrame) {
        cut(id, c, c.in.declared_length() > c.in.max_frame() ? Cut::kOversize : Cut::kBadStream);
        return;
      }
      if (over_budget()) {
        stats_.budget_deferred.add();
        if (!c.in_ready) {
          c.in_ready = true;
          ready_.push_back(id);
        }
        return;
      }
      std::span<const std::byte> frame;
      (void)c.in.next(frame);
      ++c.frames_this_poll;
      --frames_left_;
      ++c.frames;
      ++work;
      stats_.frames_in.add();
      c.last_frame_ns = now;
      c.partial_since = 0;
      const uint32_t rid = frame.size() >= wire::ctl::kHeaderSize ? load_le<uint32_t>(frame.data() + wire::ctl::kRequestId) : 0;
      c.holding = !c.admitted && (admitted_count_ >= cfg_.max_clients || over_share(c));
      const bool keep = h.on_frame(id, frame, now, *this);
      if (c.dead) return;  // cut inside on_frame (its replies passed its share, or the budget)
      if (!keep) {
        cut(id, c, Cut::kHandler);
        return;
      }
      after_frame(id, c, h, now, rid);
      if (c.dead) return;
    }
    // A frame begun: its clock runs from when it was first seen incomplete.
    if (c.in.buffered() == 0) c.partial_since = 0;
    else if (c.partial_since == 0) c.partial_since = now;
    // Read only while under budget; what stays in the socket keeps epoll
    // ready, but wakes nobody again: the next poll asks epoll regardless.
    if (socket_empty) return;
    if (reads == kMaxReadsPerServe || over_budget()) {
      rescan_ = true;
      return;
    }
    const size_t want = std::min(rbuf_.size(), std::max<size_t>(2 * c.in.max_frame(), 4096));
    const ssize_t n = ::recv(c.fd.get(), rbuf_.data(), want, MSG_DONTWAIT);
    if (n == 0) {
      cut(id, c, Cut::kPeer);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) rescan_ = true;
      else if (errno != EAGAIN && errno != EWOULDBLOCK) cut(id, c, Cut::kPeer);
      return;
    }
    stats_.bytes_in.add(static_cast<uint64_t>(n));
    c.in.append({rbuf_.data(), static_cast<size_t>(n)});
    socket_empty = static_cast<size_t>(n) < want;
  }
}

void StreamControlServer::serve_ready(ControlHandler& h, uint64_t now, size_t& work) {
  // Round robin: who comes back (budget spent, frames still buffered) goes
  // to the back; who was not reached when the poll's budget ran out keeps
  // its place for the next poll.
  for (size_t n = ready_.size(); n > 0 && frames_left_ > 0; --n) {
    const ClientId id = ready_.front();
    ready_.pop_front();
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    c.in_ready = false;
    if (!c.dead) serve(id, c, h, now, work);
  }
}

void StreamControlServer::serve_writable(ControlHandler& h, uint64_t now, size_t& work) {
  size_t calls = 0;
  for (size_t n = writable_.size(); n > 0 && calls < cfg_.writable_calls_per_poll; --n) {
    const ClientId id = writable_.front();
    writable_.pop_front();
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    c.in_writable = false;
    if (c.dead) continue;
    if (!h.has_pending(id)) {
      c.pending = false;
      continue;
    }
    c.pending = true;
    if (c.out_bytes >= writable_low()) continue;  // flush() queues it again once drained
    ++calls;
    ++work;
    stats_.writable_calls.add();
    h.on_writable(id, now, *this);
    if (!c.dead) note_pending(id, c, h);  // more to come: at the back, for the next poll
  }
}

void StreamControlServer::sweep(ControlHandler& h, uint64_t now) {
  if (sweep_pos_ == sweep_ids_.size()) {
    // A new pass over every client, kSweepPerPoll a poll; the ids of those
    // gone since the last pass leave the list now (walking conns_ itself
    // instead cost ~100 us of cache misses per thousand clients).
    last_sweep_ = now;
    swept_ = true;
    std::erase(sweep_ids_, ClientId{0});
    sweep_pos_ = 0;
#if defined(__GLIBC__)
    if (freed_since_trim_ >= kTrimAfterBytes) {
      freed_since_trim_ = 0;
      ::malloc_trim(0);
    }
#endif
  }
  // Live clients count towards the share of a poll; one gone is met once.
  for (size_t live = 0; sweep_pos_ < sweep_ids_.size() && live < kSweepPerPoll; ++sweep_pos_) {
    const ClientId id = sweep_ids_[sweep_pos_];
    if (id == 0) continue;
    const auto it = conns_.find(id);
    if (it == conns_.end()) {
      sweep_ids_[sweep_pos_] = 0;
      continue;
    }
    ++live;
    Conn& c = it->second;
    if (c.dead) continue;
    // Admission may change outside a frame (the handler's own timers).
    set_admitted(id, c, h.admitted(id), now);
    if (c.dead) continue;
    if (!c.admitted && elapsed(now, c.unadmitted_since) >= cfg_.unadmitted_timeout_ns) {
      cut(id, c, Cut::kTimeoutUnadmitted);
    } else if (c.partial_since != 0 && elapsed(now, c.partial_since) >= cfg_.partial_frame_timeout_ns) {
      cut(id, c, Cut::kTimeoutPartial);
    } else if (c.admitted && elapsed(now, c.last_frame_ns) >= cfg_.idle_timeout_ns) {
      cut(id, c, Cut::kTimeoutIdle);
    } else if (!c.in_writable) {
      note_pending(id, c, h);  // a streamed reply the handler began outside a frame
    }
  }
}

size_t StreamControlServer::poll(ControlHandler& h, uint64_t now) {
  ++poll_no_;
  frames_left_ = cfg_.frames_per_poll;
  size_t work = 0;
  // Connections the front door routed here (shared endpoint): one load when none came.
  if (inbox_ && !inbox_->empty()) adopt_all(h, now, work);
  // The ring's completions are consumed before epoll_wait: a wakeup after it
  // posts a new one, seen next poll. rescan_: the last poll left readiness
  // that level-triggered epoll reports again but that wakes nobody (a full
  // batch of events, connections left in the backlog, bytes left in a
  // socket, an EPOLL_CTL_MOD).
  const bool woke = ready_ring_.check();
  int n = 0;
  epoll_event evs[kEventsPerWait];
  if (woke || rescan_) {
    rescan_ = false;
    stats_.epoll_waits.add();
    n = ::epoll_wait(epoll_.get(), evs, kEventsPerWait, 0);
    if (n < 0 || n == kEventsPerWait) rescan_ = true;
  } else {
    stats_.idle_polls.add();
  }
  for (int i = 0; i < n; ++i) {
    const ClientId id = evs[i].data.u64;
    if (id == 0) {
      accept_all(h, now, work);
      continue;
    }
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.dead) continue;
    Conn& c = it->second;
    if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c.in_ready) {
      c.in_ready = true;
      ready_.push_back(id);
    }
    if (evs[i].events & EPOLLOUT) flush(id, c);
  }
  serve_ready(h, now, work);
  serve_writable(h, now, work);
  if (sweep_pos_ < sweep_ids_.size() || !swept_ || elapsed(now, last_sweep_) >= cfg_.sweep_interval_ns) sweep(h, now);
  // Cut clients: those marked during this poll, or by a reply queued between polls.
  for (size_t i = 0; i < dying_.size(); ++i) drop(dying_[i], h);
  work += dying_.size();
  dying_.clear();
  stats_.clients.set(conns_.size());
  stats_.unadmitted.set(unadmitted_.size());
  stats_.queued_bytes.set(total_out_);
  stats_.readiness_rearms.set(ready_ring_.rearms());
  stats_.io_uring.set(ready_ring_.available() ? 1 : 0);
  return work;
}

}  // namespace mdcast::media
