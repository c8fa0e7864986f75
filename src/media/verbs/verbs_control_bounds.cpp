// The verbs control server's bounds (see ServerLimits in verbs_control.hpp):
// frames per poll, the reply budget, admission, eviction and timeouts. Control
// code on the publisher's thread, like the rest of the server.
#include <fmt/format.h>

#include <string>

#include "mdcast/core/error.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "rc_stream.hpp"
#include "verbs_server_conn.hpp"

namespace mdcast::media::verbs {

using namespace detail;

size_t VerbsControlServer::live_count(bool admitted) const noexcept {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += !c->closing && c->admitted == admitted;
  return n;
}

size_t VerbsControlServer::peer_count(uint64_t peer) const noexcept {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += !c->closing && c->admitted && c->peer == peer;
  return n;
}

void VerbsControlServer::mark_cut(ClientId c, Connection& conn, Counter& reason, std::string_view why) {
  if (conn.closing) return;
  conn.closing = true;
  to_cut_.push_back(c);
  reason.add();
  // Evictions and un-admitted timeouts come in floods: counted, not logged.
  if (!why.empty()) log(fmt::format("control client {} cut off: {}", c, why));
}

void VerbsControlServer::set_admitted(ClientId c, Connection& conn, bool admitted, uint64_t now) {
  if (admitted == conn.admitted || conn.closing) return;
  if (admitted) {
    if (live_count(true) >= limits_.max_clients) {
      mark_cut(c, conn, counters_.cut_refused_admission,
               fmt::format("{} clients already admitted (the limit)", limits_.max_clients));
      return;
    }
    if (limits_.max_clients_per_peer && peer_count(conn.peer) >= limits_.max_clients_per_peer) {
      mark_cut(c, conn, counters_.cut_refused_share,
               fmt::format("its address already holds {} admitted clients (control.max_clients_per_peer)",
                           limits_.max_clients_per_peer));
      return;
    }
    conn.admitted = true;
    conn.last_frame_ns = now;
    conn.stream().assembler().set_max_frame(limits_.max_frame_admitted);
  } else {
    conn.admitted = false;
    conn.unadmitted_since = now;
    conn.stream().assembler().set_max_frame(limits_.max_frame_unadmitted);
  }
}

void VerbsControlServer::evict_unadmitted(ClientId newcomer) {
  // The oldest that never sent a frame, else the oldest (ids grow with age).
  ClientId oldest = 0, silent = 0;
  for (const auto& [id, c] : conns_) {
    if (id == newcomer || c->closing || c->admitted) continue;
    if (!oldest || id < oldest) oldest = id;
    if (c->frames == 0 && (!silent || id < silent)) silent = id;
  }
  const ClientId victim = silent ? silent : oldest;
  if (victim) mark_cut(victim, *conns_.at(victim), counters_.evicted_unadmitted, {});
}

void VerbsControlServer::enforce_budget() {
  for (;;) {
    size_t live = 0;
    ClientId worst = 0;
    Connection* wc = nullptr;
    for (auto& [id, c] : conns_) {
      if (c->closing) continue;
      const size_t b = c->stream().backlog();
      live += b;
      if (!wc || b > wc->stream().backlog()) {
        wc = c.get();
        worst = id;
      }
    }
    if (!wc || live <= limits_.reply_budget_bytes) return;
    mark_cut(worst, *wc, counters_.cut_memory,
             fmt::format("replies to all clients passed {} bytes, {} of them its own", limits_.reply_budget_bytes,
                         wc->stream().backlog()));
  }
}

void VerbsControlServer::note_pending(ClientId c, Connection& conn, ControlHandler& svc) {
  conn.pending = svc.has_pending(c);
  if (conn.pending && !conn.in_writable && conn.stream().backlog() < opts_.max_client_backlog / 2) {
    conn.in_writable = true;
    writable_.push_back(c);
  }
}

void VerbsControlServer::serve(ClientId c, Connection& conn, ControlHandler& svc, uint64_t now) {
  if (conn.budget_poll != poll_no_) {
    conn.budget_poll = poll_no_;
    conn.frames_this_poll = 0;
  }
  auto& in = conn.stream().assembler();
  std::span<const std::byte> frame;
  while (!conn.closing) {
    const auto st = in.peek();
    if (st == wire::FrameAssembler::Status::kNeedMore) break;
    if (st == wire::FrameAssembler::Status::kBadFrame) {
      // The stream cannot be resynchronised: say why, then hang up.
      const size_t len = in.declared_length();
      const bool oversize = len > in.max_frame();
      conn.stream().queue(wire::encode_control(
          0, oversize ? wire::ErrorReply{wire::ErrorCode::kTooLarge,
                                         fmt::format("control frame of {} bytes announced, over the limit of {}{}; "
                                                     "disconnecting",
                                                     len, in.max_frame(), conn.admitted ? "" : " before admission")}
                      : wire::ErrorReply{wire::ErrorCode::kMalformed,
                                         "malformed control stream (bad frame length); disconnecting"}));
      conn.closing = true;
      conn.close_deadline = now + opts_.malformed_grace_ns;
      counters_.cut_malformed.add();
      if (oversize) counters_.cut_oversize.add();
      log(fmt::format("control client {}: {}; cutting it off", c,
                      oversize ? fmt::format("a {}-byte frame announced", len) : std::string("malformed stream")));
      return;
    }
    if (conn.frames_this_poll >= limits_.frames_per_client_per_poll || frames_left_ == 0) {
      // Its turn is over: the rest waits, and so does the client (its
      // receive slots stay held until these frames are handled).
      counters_.budget_deferred.add();
      if (!conn.in_ready) {
        conn.in_ready = true;
        ready_.push_back(c);
      }
      return;
    }
    (void)in.next(frame);
    ++conn.frames_this_poll;
    --frames_left_;
    ++conn.frames;
    conn.last_frame_ns = now;
    conn.partial_since = 0;
    counters_.frames_in.add();
    if (!svc.on_frame(c, frame, now, *this)) {
      // The service gave up on it (too many errors); its error reply is queued.
      if (!conn.closing) {
        conn.closing = true;
        conn.close_deadline = now + opts_.malformed_grace_ns;
        counters_.cut_malformed.add();
        log(fmt::format("control client {}: too many bad requests; cutting it off", c));
      }
      return;
    }
    if (conn.closing) return;  // cut inside on_frame (its replies passed its share, or the budget)
    set_admitted(c, conn, svc.admitted(c), now);
    if (!conn.closing) note_pending(c, conn, svc);
  }
  if (conn.closing) return;
  if (in.buffered() == 0) conn.partial_since = 0;
  else if (conn.partial_since == 0) conn.partial_since = now;
  // Every whole frame is handled: the client may send more.
  for (const uint32_t slot : conn.held) {
    if (conn.stream().repost(slot)) {
      counters_.post_errors.add();
      mark_cut(c, conn, counters_.cut_errors, "ibv_post_recv failed");
      break;
    }
  }
  conn.held.clear();
}

void VerbsControlServer::serve_ready(ControlHandler& svc, uint64_t now) {
  for (size_t n = ready_.size(); n > 0 && frames_left_ > 0; --n) {
    const ClientId c = ready_.front();
    ready_.pop_front();
    auto it = conns_.find(c);
    if (it == conns_.end()) continue;
    Connection& conn = *it->second;
    conn.in_ready = false;
    if (!conn.closing) serve(c, conn, svc, now);
  }
}

void VerbsControlServer::serve_writable(ControlHandler& svc, uint64_t now) {
  size_t calls = 0;
  for (size_t n = writable_.size(); n > 0 && calls < limits_.writable_calls_per_poll; --n) {
    const ClientId c = writable_.front();
    writable_.pop_front();
    auto it = conns_.find(c);
    if (it == conns_.end()) continue;
    Connection& conn = *it->second;
    conn.in_writable = false;
    if (conn.closing || !(conn.pending = svc.has_pending(c))) continue;
    if (conn.stream().backlog() >= opts_.max_client_backlog / 2) continue;  // the pump loop queues it again
    ++calls;
    counters_.writable_calls.add();
    svc.on_writable(c, now, *this);
    if (!conn.closing) note_pending(c, conn, svc);
  }
}

void VerbsControlServer::sweep(ControlHandler& svc, uint64_t now) {
  last_sweep_ = now;
  swept_ = true;
  for (auto& [c, cp] : conns_) {
    Connection& conn = *cp;
    if (conn.closing) continue;
    set_admitted(c, conn, svc.admitted(c), now);
    if (conn.closing) continue;
    if (!conn.admitted && elapsed(now, conn.unadmitted_since) >= limits_.unadmitted_timeout_ns) {
      mark_cut(c, conn, counters_.timeouts_unadmitted, {});
    } else if (conn.partial_since && elapsed(now, conn.partial_since) >= limits_.partial_frame_timeout_ns) {
      mark_cut(c, conn, counters_.timeouts_partial_frame,
               fmt::format("a frame begun and not finished within {} ms", limits_.partial_frame_timeout_ns / kNsPerMs));
    } else if (conn.admitted && elapsed(now, conn.last_frame_ns) >= limits_.idle_timeout_ns) {
      mark_cut(c, conn, counters_.timeouts_idle,
               fmt::format("no frame for {} s (subscribers report status every 250 ms)",
                           limits_.idle_timeout_ns / kNsPerSec));
    } else if (!conn.in_writable) {
      note_pending(c, conn, svc);
    }
  }
}

}  // namespace mdcast::media::verbs
