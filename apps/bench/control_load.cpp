#include "control_load.hpp"

#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <variant>

#include "mdcast/core/error.hpp"

namespace mdcast::app::bench {
namespace {

// Reads per readable socket per round: one client with a long snapshot does
// not keep the others waiting (epoll is level-triggered: it comes back).
constexpr int kReadsPerEvent = 4;
constexpr int kEventsPerWait = 256;
// A client whose socket stopped taking its frames keeps at most this much;
// past it, frames are dropped and counted (the publisher is not reading).
constexpr size_t kMaxBuffered = 256u << 10;
// Problems kept in words; the rest are only counted.
constexpr size_t kMaxProblems = 8;
// A connect the listen backlog refused is tried again this much later.
constexpr uint64_t kRetryNs = kNsPerMs;

std::string errno_text(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

}  // namespace

ControlLoad::ControlLoad(ControlLoadConfig cfg)
    : cfg_(std::move(cfg)), addr_(media::SocketAddress::parse(cfg_.address)), c_(cfg_.clients), rbuf_(64u << 10) {
  if (cfg_.clients == 0) fail("control load: 0 clients");
  if (cfg_.max_handshakes == 0) fail("control load: max_handshakes must be at least 1");
  if (cfg_.status_interval_ns == 0) fail("control load: the status interval must be positive");
  epoll_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_) fail_errno("control load: epoll_create1");
  stats_.clients = cfg_.clients;
}

void ControlLoad::note(std::string what) {
  if (problems_.size() < kMaxProblems) problems_.push_back(std::move(what));
}

bool ControlLoad::settled() const noexcept {
  return next_open_ == cfg_.clients && handshakes_ == 0 && idle_retry_ == 0;
}

void ControlLoad::watch(uint32_t i, bool out) {
  Client& c = c_[i];
  if (c.want_out == out) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (out ? EPOLLOUT : 0u);
  ev.data.u64 = i;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) != 0) {
    finish(i, State::kFailed, "epoll_ctl: " + errno_text(errno));
    return;
  }
  c.want_out = out;
}

void ControlLoad::open(uint32_t i, uint64_t now) {
  Client& c = c_[i];
  const media::SocketAddress& sa = addr_;
  c.fd = UniqueFd(::socket(sa.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!c.fd) {
    const int e = errno;
    c.state = State::kFailed;
    ++stats_.connect_failures;
    note(fmt::format("client {}: socket: {}{}", i, errno_text(e),
                     e == EMFILE || e == ENFILE ? " (out of file descriptors: raise ulimit -n)" : ""));
    return;
  }
  if (::connect(c.fd.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0 && errno != EINPROGRESS) {
    const int e = errno;
    c.fd.reset();
    if (e == EAGAIN || e == EINTR) {
      // A Unix listener's backlog is full: the publisher accepts a few per poll.
      c.state = State::kIdle;
      c.retry_at = now + kRetryNs;
      ++stats_.connect_retries;
      ++idle_retry_;
      return;
    }
    c.state = State::kFailed;
    ++stats_.connect_failures;
    note(fmt::format("client {}: connect to {}: {}", i, cfg_.address, errno_text(e)));
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT;
  ev.data.u64 = i;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.fd.get(), &ev) != 0) {
    const int e = errno;
    c.fd.reset();
    c.state = State::kFailed;
    ++stats_.connect_failures;
    note(fmt::format("client {}: epoll_ctl: {}", i, errno_text(e)));
    return;
  }
  c.want_out = true;
  c.state = State::kConnecting;
  ++handshakes_;
}

void ControlLoad::open_more(uint64_t now) {
  for (uint32_t i = 0; i < next_open_ && idle_retry_ > 0 && handshakes_ < cfg_.max_handshakes; ++i)
    if (c_[i].state == State::kIdle && c_[i].retry_at <= now) {
      --idle_retry_;
      open(i, now);
    }
  while (next_open_ < cfg_.clients && handshakes_ < cfg_.max_handshakes) open(next_open_++, now);
}

// The connection is up (a Unix connect is at once, TCP's when the socket
// turns writable): subscribe to this client's slice of the instruments.
void ControlLoad::connected(uint32_t i) {
  Client& c = c_[i];
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    ++stats_.connect_failures;
    finish(i, State::kFailed, fmt::format("connect to {}: {}", cfg_.address, errno_text(err)));
    return;
  }
  ++stats_.connects;
  c.state = State::kSubscribing;
  wire::Subscribe s;
  s.channel = cfg_.channel;
  s.sender_id = 0;
  s.instruments.all = false;
  const uint32_t n = std::max<uint32_t>(1, cfg_.instruments);
  for (uint32_t k = 0; k < std::min(n, std::max<uint32_t>(1, cfg_.instruments_per_client)); ++k)
    s.instruments.ids.push_back(static_cast<uint32_t>((uint64_t{i} * cfg_.instruments_per_client + k) % n));
  std::sort(s.instruments.ids.begin(), s.instruments.ids.end());
  s.instruments.ids.erase(std::unique(s.instruments.ids.begin(), s.instruments.ids.end()), s.instruments.ids.end());
  c.subscribe_rid = c.next_rid++;
  send(i, wire::encode_control(c.subscribe_rid, s), stats_.sent_subscribe);
  if (c.state == State::kSubscribing) watch(i, !c.out.empty());
}

void ControlLoad::finish(uint32_t i, State why, std::string what) {
  Client& c = c_[i];
  if (c.state == State::kConnecting || c.state == State::kSubscribing) {
    --handshakes_;
    // Closed before the acknowledgement: the publisher refused it (at its
    // admission limit, evicting un-admitted connections, ...).
    if (why == State::kCut) why = State::kRefused;
  }
  if (c.state == State::kActive) --stats_.active;
  if (why == State::kRefused) ++stats_.refused;
  if (why == State::kCut) ++stats_.cut;
  const char* kind = why == State::kRefused ? "refused" : why == State::kCut ? "cut" : "failed";
  note(fmt::format("client {} {}: {}", i, kind, what));
  c.state = why;
  c.fd.reset();  // leaves the epoll set with it
  c.in.clear();
  std::vector<std::byte>().swap(c.out);
  c.out_off = 0;
  c.want_out = false;
}

void ControlLoad::close_all() noexcept {
  for (auto& c : c_) {
    if (c.state == State::kActive) --stats_.active;
    if (c.state == State::kConnecting || c.state == State::kSubscribing) --handshakes_;
    c.fd.reset();
    if (c.state != State::kRefused && c.state != State::kCut && c.state != State::kFailed) c.state = State::kIdle;
  }
  idle_retry_ = 0;
  next_open_ = cfg_.clients;
  stats_.pending = 0;
}

void ControlLoad::send(uint32_t i, std::vector<std::byte> frame, uint64_t& counter) {
  Client& c = c_[i];
  if (c.out.size() - c.out_off + frame.size() > kMaxBuffered) {
    ++stats_.send_dropped;
    return;
  }
  if (c.out_off == c.out.size()) {
    c.out = std::move(frame);
    c.out_off = 0;
  } else {
    c.out.insert(c.out.end(), frame.begin(), frame.end());
  }
  ++counter;
  flush(i);
}

void ControlLoad::flush(uint32_t i) {
  Client& c = c_[i];
  while (c.out_off < c.out.size()) {
    const ssize_t n = ::send(c.fd.get(), c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      finish(i, State::kCut, "send: " + errno_text(errno));
      return;
    }
    stats_.sent_bytes += static_cast<uint64_t>(n);
    c.out_off += static_cast<size_t>(n);
  }
  if (c.out_off == c.out.size()) {
    c.out.clear();
    c.out_off = 0;
  } else if (c.out_off > (64u << 10)) {
    c.out.erase(c.out.begin(), c.out.begin() + static_cast<ptrdiff_t>(c.out_off));
    c.out_off = 0;
  }
  if (c.state == State::kSubscribing || c.state == State::kActive) watch(i, !c.out.empty());
}

void ControlLoad::on_writable(uint32_t i) {
  if (c_[i].state == State::kConnecting) {
    connected(i);
    return;
  }
  flush(i);
}

void ControlLoad::on_readable(uint32_t i) {
  Client& c = c_[i];
  for (int r = 0; r < kReadsPerEvent; ++r) {
    const ssize_t n = ::recv(c.fd.get(), rbuf_.data(), rbuf_.size(), MSG_DONTWAIT);
    if (n == 0) {
      finish(i, State::kCut, "the publisher closed the connection");
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      finish(i, State::kCut, "recv: " + errno_text(errno));
      return;
    }
    stats_.reply_bytes += static_cast<uint64_t>(n);
    c.in.append({rbuf_.data(), static_cast<size_t>(n)});
    for (;;) {
      std::span<const std::byte> frame;
      const auto st = c.in.next(frame);
      if (st == wire::FrameAssembler::Status::kNeedMore) break;
      if (st == wire::FrameAssembler::Status::kBadFrame) {
        ++stats_.malformed;
        finish(i, State::kFailed, "an unparseable byte stream from the publisher");
        return;
      }
      on_frame(i, frame);
      if (c.state != State::kSubscribing && c.state != State::kActive) return;
    }
    if (static_cast<size_t>(n) < rbuf_.size()) return;
  }
}

void ControlLoad::on_frame(uint32_t i, std::span<const std::byte> frame) {
  Client& c = c_[i];
  ++stats_.replies;
  std::string why;
  const auto f = wire::parse_control(frame, &why);
  if (!f) {
    ++stats_.malformed;
    note(fmt::format("client {}: unparseable reply: {}", i, why));
    return;
  }
  std::visit(
      [&](const auto& b) {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, wire::SubscribeAck>) {
          ++stats_.acks;
          session_ = b.session;
          newest_ = std::max(newest_, b.last_seq);
          if (c.state == State::kSubscribing && f->request_id == c.subscribe_rid) {
            c.state = State::kActive;
            --handshakes_;
            ++stats_.subscribed;
            ++stats_.active;
          }
        } else if constexpr (std::is_same_v<T, wire::ErrorReply>) {
          ++stats_.errors;
          if (b.code == wire::ErrorCode::kOverloaded) ++stats_.overloaded;
          if (c.state == State::kSubscribing && f->request_id == c.subscribe_rid)
            finish(i, State::kRefused, fmt::format("{}: {}", wire::to_string(b.code), b.text));
          else if (b.code != wire::ErrorCode::kOverloaded)
            note(fmt::format("client {}: {}: {}", i, wire::to_string(b.code), b.text));
        } else if constexpr (std::is_same_v<T, wire::RetransmitReply>) {
          ++stats_.retransmit_replies;
          stats_.retransmitted_datagrams += b.datagrams.size();
          if (b.session == session_) newest_ = std::max(newest_, b.from_seq + b.datagrams.size());
        } else if constexpr (std::is_same_v<T, wire::SnapshotData>) {
          ++stats_.snapshot_data;
        } else if constexpr (std::is_same_v<T, wire::SnapshotDone>) {
          ++stats_.snapshot_done;
        } else if constexpr (std::is_same_v<T, wire::SessionStatus>) {
          ++stats_.session_status;
          session_ = b.session;
          newest_ = std::max(newest_, b.last_seq);
        } else {
          ++stats_.unexpected;
        }
      },
      f->body);
}

uint32_t ControlLoad::next_active(uint32_t& cursor, uint32_t stride) const noexcept {
  const uint32_t n = cfg_.clients;
  for (uint32_t k = 0; k < n; ++k) {
    cursor = static_cast<uint32_t>((uint64_t{cursor} + stride) % n);
    if (c_[cursor].state == State::kActive) return cursor;
  }
  return n;
}

// What is due on the schedules that started at the first poll: client k's
// status at start + (j N + k) / N intervals, the requests evenly at their
// rates over clients in turn. A round that comes late sends what it missed,
// up to one interval's worth.
void ControlLoad::send_due(uint64_t now) {
  const uint64_t t = now - start_;
  const uint64_t n = cfg_.clients;
  const uint64_t due = static_cast<uint64_t>(static_cast<long double>(t) * n / cfg_.status_interval_ns);
  if (due > statuses_ + n) statuses_ = due - n;
  for (; statuses_ < due; ++statuses_) {
    const auto i = static_cast<uint32_t>(statuses_ % n);
    if (c_[i].state != State::kActive) continue;
    wire::StatusReport r;
    r.position = newest_ + 1;
    send(i, wire::encode_control(c_[i].next_rid++, r), stats_.sent_status);
  }
  const auto rate_due = [&](double per_s) { return static_cast<uint64_t>(static_cast<double>(t) * per_s / 1e9); };
  // Strides coprime with most client counts, so requests spread over them.
  for (const uint64_t d = rate_due(cfg_.retransmits_per_s); retransmits_ < d; ++retransmits_) {
    const uint32_t i = next_active(retransmit_cursor_, 7919);
    if (i == n || session_ == 0) continue;
    wire::RetransmitRequest q;
    q.session = session_;
    q.from_seq = newest_ > 64 ? newest_ - 63 : 1;
    q.count = cfg_.retransmit_count;
    send(i, wire::encode_control(c_[i].next_rid++, q), stats_.sent_retransmit);
  }
  for (const uint64_t d = rate_due(cfg_.snapshots_per_s); snapshots_ < d; ++snapshots_) {
    const uint32_t i = next_active(snapshot_cursor_, 104729);
    if (i == n) continue;
    send(i, wire::encode_control(c_[i].next_rid++, wire::SnapshotRequest{}), stats_.sent_snapshot);
  }
  for (const uint64_t d = rate_due(cfg_.session_queries_per_s); queries_ < d; ++queries_) {
    const uint32_t i = next_active(query_cursor_, 613);
    if (i == n) continue;
    send(i, wire::encode_control(c_[i].next_rid++, wire::SessionQuery{}), stats_.sent_session_query);
  }
}

void ControlLoad::poll(uint64_t now, int timeout_ms) {
  if (start_ == 0) start_ = now;
  open_more(now);
  epoll_event ev[kEventsPerWait];
  const int n = ::epoll_wait(epoll_.get(), ev, kEventsPerWait, timeout_ms);
  if (n < 0 && errno != EINTR) fail_errno("control load: epoll_wait");
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<uint32_t>(ev[k].data.u64);
    if (!c_[i].fd) continue;  // closed earlier in this batch
    if (ev[k].events & EPOLLOUT) on_writable(i);
    if (c_[i].fd && (ev[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
      if (c_[i].state == State::kConnecting) on_writable(i);  // a refused connect reports as an error
      else on_readable(i);
    }
  }
  send_due(monotonic_ns());
  stats_.pending = (cfg_.clients - next_open_) + handshakes_ + idle_retry_;
}

std::string raise_open_files(uint64_t needed) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return "getrlimit(RLIMIT_NOFILE): " + errno_text(errno);
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= needed) return "";
  const bool hard_short = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < needed;
  const rlim_t soft = hard_short ? rl.rlim_max : static_cast<rlim_t>(needed);
  const rlim_t was = rl.rlim_cur;
  rl.rlim_cur = soft;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0)
    return fmt::format("cannot raise the open-files limit (RLIMIT_NOFILE) from {} to {}: {}", was, soft, errno_text(errno));
  if (hard_short)
    return fmt::format("the open-files hard limit (RLIMIT_NOFILE) is {}, below the {} descriptors needed{}: raise "
                       "the hard limit (ulimit -Hn as root, LimitNOFILE= for a service)",
                       rl.rlim_max, needed, was < soft ? fmt::format(" (the soft limit is raised from {} to it)", was) : "");
  return "";
}

}  // namespace mdcast::app::bench
