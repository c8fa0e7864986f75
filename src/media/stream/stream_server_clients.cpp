// The stream control server's connections (stream_server.hpp): accepted
// from its own listener or adopted from a shared front door, admitted,
// refused for room, cut, dropped.
#include <sys/epoll.h>
#include <sys/socket.h>

#include <cerrno>

#include "mdcast/core/error.hpp"
#include "mdcast/media/stream/stream_server.hpp"

namespace mdcast::media {

// -------------------------------------------------------- connections ----

void StreamControlServer::cut(ClientId id, Conn& c, Cut why) {
  if (c.dead) return;
  c.dead = true;
  switch (why) {
    case Cut::kSlow: stats_.slow_disconnects.add(); break;
    case Cut::kMemory: stats_.memory_cutoffs.add(); break;
    case Cut::kBadStream: stats_.bad_stream_disconnects.add(); break;
    case Cut::kOversize:
      stats_.bad_stream_disconnects.add();
      stats_.oversize_disconnects.add();
      break;
    case Cut::kHandler: stats_.handler_disconnects.add(); break;
    case Cut::kPeer: stats_.peer_disconnects.add(); break;
    case Cut::kEvicted: stats_.evicted_unadmitted.add(); break;
    case Cut::kRefusedAdmission: stats_.refused_admission.add(); break;
    case Cut::kRefusedShare: stats_.refused_peer_share.add(); break;
    case Cut::kEvictedForDescriptor: stats_.descriptor_evictions.add(); break;
    case Cut::kTimeoutUnadmitted: stats_.timeouts_unadmitted.add(); break;
    case Cut::kTimeoutPartial: stats_.timeouts_partial_frame.add(); break;
    case Cut::kTimeoutIdle: stats_.timeouts_idle.add(); break;
  }
  if (c.admitted) count_admitted(c, false);
  else unadmitted_.erase(id);
  // Out of descriptors, the one it holds is needed now.
  if (why == Cut::kEvictedForDescriptor) c.fd.reset();
  // Its memory goes now, not when the handler hears of it: a cut on the
  // global budget must bring the total down at once.
  freed_since_trim_ += c.out_bytes + c.in.capacity();
  total_out_ -= c.out_bytes;
  c.out_bytes = 0;
  c.out_off = 0;
  std::deque<std::vector<std::byte>>().swap(c.out);
  std::vector<std::vector<std::byte>>().swap(c.held);
  c.holding = false;
  c.in.clear();
  dying_.push_back(id);
}

void StreamControlServer::drop(ClientId id, ControlHandler& h) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  h.on_disconnect(id);
  conns_.erase(it);  // closing the socket removes it from the epoll set
  stats_.disconnected.add();
}

void StreamControlServer::evict_unadmitted(Cut why) {
  // The oldest that never sent a frame, else the oldest: a subscriber half
  // way through authenticating has sent something.
  auto victim = unadmitted_.begin();
  for (auto it = unadmitted_.begin(); it != unadmitted_.end(); ++it)
    if (conns_.at(*it).frames == 0) {
      victim = it;
      break;
    }
  const ClientId id = *victim;
  cut(id, conns_.at(id), why);
}

void StreamControlServer::say(int fd, uint32_t rid, const std::string& text) {
  const auto f = wire::encode_control(rid, wire::ErrorReply{wire::ErrorCode::kOverloaded, text});
  (void)::send(fd, f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void StreamControlServer::say_full(int fd, uint32_t rid) {
  say(fd, rid,
      fmt::format("this publisher admits {} control clients (control.max_clients) and has {}: try again later, or "
                  "raise control.max_clients",
                  cfg_.max_clients, admitted_count_));
}

bool StreamControlServer::over_share(const Conn& c) const {
  if (cfg_.max_clients_per_peer == 0 || c.peer.owner) return false;
  const auto it = per_peer_.find(c.peer.key);
  return it != per_peer_.end() && it->second >= cfg_.max_clients_per_peer;
}

void StreamControlServer::count_admitted(const Conn& c, bool admitted) {
  if (admitted) ++admitted_count_;
  else --admitted_count_;
  if (c.peer.owner) return;
  if (admitted) {
    ++per_peer_[c.peer.key];
  } else if (const auto it = per_peer_.find(c.peer.key); it != per_peer_.end() && --it->second == 0) {
    per_peer_.erase(it);
  }
}

void StreamControlServer::set_admitted(ClientId id, Conn& c, bool admitted, uint64_t now, uint32_t rid) {
  if (admitted == c.admitted || c.dead) return;
  if (admitted) {
    if (admitted_count_ >= cfg_.max_clients) {
      if (c.out.empty()) say_full(c.fd.get(), rid);
      cut(id, c, Cut::kRefusedAdmission);
      return;
    }
    if (over_share(c)) {
      if (c.out.empty())
        say(c.fd.get(), rid,
            fmt::format("this publisher admits {} control clients of one peer (control.max_clients_per_peer), and "
                        "yours has them: close some, or raise control.max_clients_per_peer",
                        cfg_.max_clients_per_peer));
      cut(id, c, Cut::kRefusedShare);
      return;
    }
    unadmitted_.erase(id);
    count_admitted(c, true);
    c.admitted = true;
    c.last_frame_ns = now;
    c.in.set_max_frame(cfg_.max_frame_admitted);
  } else {
    // Back out of admission (it unsubscribed): held to the short leash again.
    count_admitted(c, false);
    unadmitted_.insert(id);
    c.admitted = false;
    c.unadmitted_since = now;
    c.in.set_max_frame(cfg_.max_frame_unadmitted);
  }
}

void StreamControlServer::accept_all(ControlHandler& h, uint64_t now, size_t& work) {
  // Connections left in the backlog (this poll's quota spent, or accept
  // failing) wake nobody again: the next poll asks epoll without the ring.
  for (size_t k = 0; k < cfg_.accepts_per_poll; ++k) {
    const int fd = listen_.accept();
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EACCES) {
        stats_.refused_peers.add();
        continue;
      }
      stats_.accept_failures.add();  // out of descriptors or memory: the connection waits in the backlog
      rescan_ = true;
      return;
    }
    if (listen_.on_reserve()) {
      // At the open-files limit: an idle un-admitted connection gives its
      // descriptor to this one, or this one is told why and closed.
      if (unadmitted_.empty()) {
        stats_.refused_descriptors.add();
        say(fd, 0, "this publisher is out of file descriptors (raise its open-files limit): try again later");
        ::close(fd);
        rescan_ = true;
        return;
      }
      evict_unadmitted(Cut::kEvictedForDescriptor);
    }
    add_client(UniqueFd(fd), h, now, work);
  }
  rescan_ = true;
}

void StreamControlServer::adopt_all(ControlHandler& h, uint64_t now, size_t& work) {
  // What is left (the quota spent) is still there at the next poll's look.
  for (size_t k = 0; k < cfg_.accepts_per_poll; ++k) {
    UniqueFd fd = inbox_->pop();
    if (!fd) return;
    add_client(std::move(fd), h, now, work);
  }
}

void StreamControlServer::add_client(UniqueFd owned, ControlHandler& h, uint64_t now, size_t& work) {
  if (admitted_count_ >= cfg_.max_clients) {
    stats_.refused.add();
    say_full(owned.get(), 0);
    return;
  }
  const ClientId id = next_id_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = id;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, owned.get(), &ev) != 0) {
    stats_.accept_failures.add();
    return;
  }
  // Bytes that came before the ADD (over a shared endpoint, always: the
  // first frame) are epoll's to report; whether the ADD also wakes the ring
  // is its detail: one epoll_wait is cheaper than relying on it.
  rescan_ = true;
  auto [it, fresh] = conns_.try_emplace(id);
  sweep_ids_.push_back(id);
  Conn& c = it->second;
  c.fd = std::move(owned);
  c.peer = identify_peer(c.fd.get());
  c.connected_ns = c.unadmitted_since = c.last_frame_ns = now;
  c.in.set_max_frame(cfg_.max_frame_unadmitted);
  h.on_connect(id, now);
  h.on_peer(id, describe_peer(c.fd.get()));
  stats_.accepted.add();
  ++work;
  if (h.admitted(id)) {
    set_admitted(id, c, true, now);
    return;
  }
  if (unadmitted_.size() >= cfg_.max_unadmitted) evict_unadmitted();
  unadmitted_.insert(id);
}

}  // namespace mdcast::media
