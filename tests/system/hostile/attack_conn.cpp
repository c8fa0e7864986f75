// The attacker's plumbing: reports, connections, skimming replies, resolving
// "shm:NAME" addresses.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <variant>

#include "attack.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/media/stream/stream_control.hpp"

namespace mdcast::attack {

volatile std::sig_atomic_t g_stop = 0;

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigemptyset(&sa.sa_mask);
  // No SA_RESTART: a poll() in progress returns, and the report is printed now.
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void sleep_ms(uint64_t ms) { sleep_ns(ms * kNsPerMs); }

Report& Report::add(std::string_view key, uint64_t v) {
  line_ += fmt::format("{}{}={}", line_.empty() ? "" : " ", key, v);
  return *this;
}
Report& Report::add(std::string_view key, double v) {
  line_ += fmt::format("{}{}={:.1f}", line_.empty() ? "" : " ", key, v);
  return *this;
}
Report& Report::add(std::string_view key, std::string_view v) {
  line_ += fmt::format("{}{}={}", line_.empty() ? "" : " ", key, v);
  return *this;
}
void Report::print() const {
  fmt::print("{}\n", line_);
  std::fflush(stdout);
}

std::string resolve_address(const std::string& address) {
  if (address.rfind("shm:", 0) != 0) return address;
  const std::string name = address.substr(4);
  // The library's own reader: whatever checks it makes of a ring, the
  // attacker passes them the way a subscriber of the same user would. A ring
  // still being created is waited for, as a subscriber waits.
  const uint64_t give_up = monotonic_ns() + 5 * kNsPerSec;
  std::optional<media::shm::RingReader> r;
  while (!r) {
    try {
      r.emplace(media::shm::find_ring(name));
    } catch (const Error&) {
      if (monotonic_ns() > give_up || g_stop) throw;
      sleep_ms(20);
    }
  }
  std::string control(r->header().control);
  if (control.empty()) fail("ring {} names no control address", r->path());
  return control;
}

uint64_t raise_fd_limit(uint64_t want) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur >= want) return rl.rlim_cur;
  if (rl.rlim_max < want) {
    rlimit more{want, want};
    if (::setrlimit(RLIMIT_NOFILE, &more) == 0) return want;  // privileged
  }
  rl.rlim_cur = std::min<rlim_t>(want, rl.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &rl);
  ::getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur;
}

// ---------------------------------------------------------------- skimmer --

namespace {
template <class S>
uint64_t credential_size(const S& s) {
  if constexpr (requires { s.credential; })
    return s.credential.size();
  else
    return 0;
}
}  // namespace

Answer FrameSkimmer::finish() {
  Answer a;
  a.type = static_cast<uint8_t>(buf_[wire::ctl::kType]);
  a.length = length_;
  ++frames_;
  if (length_ <= kKeep) {
    a.whole = true;
    std::string why;
    if (auto f = wire::parse_control(buf_, &why)) {
      std::visit(
          [&](const auto& b) {
            using T = std::decay_t<decltype(b)>;
            if constexpr (std::is_same_v<T, wire::SubscribeAck>) {
              a.kind = Answer::Kind::kAck;
              a.session = b.session;
              a.last_seq = b.last_seq;
              a.oldest = b.oldest_retransmit;
            } else if constexpr (std::is_same_v<T, wire::ErrorReply>) {
              a.kind = Answer::Kind::kError;
              a.error = b.code;
              a.text = b.text;
            } else if constexpr (std::is_same_v<T, wire::RetransmitReply>) {
              a.kind = Answer::Kind::kRetransmit;
              a.session = b.session;
              a.retransmit = b.status;
              a.oldest = b.oldest_available;
            } else if constexpr (std::is_same_v<T, wire::SnapshotData>) {
              a.kind = Answer::Kind::kSnapshotData;
            } else if constexpr (std::is_same_v<T, wire::SnapshotDone>) {
              a.kind = Answer::Kind::kSnapshotDone;
              a.session = b.session;
            } else if constexpr (std::is_same_v<T, wire::Subscribe>) {
              a.kind = Answer::Kind::kSubscribe;
              a.credential_bytes = credential_size(b);
            }
          },
          f->body);
    }
  } else if (a.type == static_cast<uint8_t>(wire::CtlType::kRetransmitReply)) {
    a.kind = Answer::Kind::kRetransmit;  // big: it carries datagrams, so it is an ok reply
  } else if (a.type == static_cast<uint8_t>(wire::CtlType::kSnapshotData)) {
    a.kind = Answer::Kind::kSnapshotData;
  }
  buf_.clear();
  length_ = 0;
  return a;
}

// ------------------------------------------------------------- connection --

std::optional<Conn> Conn::open(const std::string& address, std::string* why, int timeout_ms, const std::string& from) {
  media::SocketAddress sa;
  try {
    sa = media::SocketAddress::parse(address);
  } catch (const Error& e) {
    if (why) *why = e.what();
    return std::nullopt;
  }
  UniqueFd fd(::socket(sa.family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    if (why) *why = fmt::format("socket: {}", std::strerror(errno));
    return std::nullopt;
  }
  // A connect that waits for room in a full backlog gives up after this.
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (!from.empty()) {
    sockaddr_in src{};
    src.sin_family = AF_INET;
    if (sa.family != AF_INET || ::inet_pton(AF_INET, from.c_str(), &src.sin_addr) != 1 ||
        ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
      if (why) *why = fmt::format("bind {} for {}: {}", from, address, std::strerror(errno));
      return std::nullopt;
    }
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0) {
    if (why) *why = fmt::format("connect {}: {}", address, std::strerror(errno));
    return std::nullopt;
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  return Conn(std::move(fd));
}

Conn::Io Conn::write_some(std::span<const std::byte> bytes, size_t& n) {
  n = 0;
  const ssize_t r = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (r >= 0) {
    n = static_cast<size_t>(r);
    return Io::kOk;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Io::kAgain;
  closed_ = true;
  return Io::kClosed;
}

bool Conn::write_all(std::span<const std::byte> bytes, uint64_t deadline_ns) {
  while (!bytes.empty()) {
    size_t n = 0;
    const Io r = write_some(bytes, n);
    if (r == Io::kClosed) return false;
    bytes = bytes.subspan(n);
    if (r == Io::kAgain) {
      const uint64_t now = monotonic_ns();
      if (now >= deadline_ns || g_stop) return false;
      pollfd p{fd_.get(), POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline_ns - now) / kNsPerMs + 1, 100)));
    }
  }
  return true;
}

Conn::Io Conn::read_some(FrameSkimmer& s, std::vector<Answer>& out, size_t& n) {
  n = 0;
  std::byte buf[64 * 1024];
  const ssize_t r = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
  if (r == 0) {
    closed_ = true;
    return Io::kClosed;
  }
  if (r < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Io::kAgain;
    closed_ = true;
    return Io::kClosed;
  }
  n = static_cast<size_t>(r);
  // A stream we cannot frame any more is as good as closed for an attacker.
  if (!s.feed({buf, n}, [&](const Answer& a) { out.push_back(a); })) {
    closed_ = true;
    return Io::kClosed;
  }
  return Io::kOk;
}

std::optional<Answer> Conn::await(uint64_t deadline_ns) {
  for (;;) {
    if (!pending_.empty()) {
      Answer a = std::move(pending_.front());
      pending_.erase(pending_.begin());
      return a;
    }
    if (closed_ || g_stop) return std::nullopt;
    const uint64_t now = monotonic_ns();
    if (now >= deadline_ns) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline_ns - now) / kNsPerMs + 1, 100)));
    size_t n = 0;
    (void)read_some(skim_, pending_, n);
  }
}

bool Conn::wait_closed(uint64_t deadline_ns) {
  while (!closed_ && !g_stop) {
    const uint64_t now = monotonic_ns();
    if (now >= deadline_ns) return false;
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(std::min<uint64_t>((deadline_ns - now) / kNsPerMs + 1, 100)));
    size_t n = 0;
    (void)read_some(skim_, pending_, n);
    pending_.clear();
  }
  return closed_;
}

// ---------------------------------------------------------------- subscribe --

namespace {
// The credential leaves the Subscribe frame when authentication lands: this
// compiles either way, and sends one only while the wire still has a place for it.
template <class S>
void put_credential(S& s, std::string_view c) {
  if constexpr (requires { s.credential; }) s.credential = std::string(c);
}
}  // namespace

std::vector<std::byte> subscribe_frame(uint32_t request_id, std::string_view credential) {
  wire::Subscribe s;
  s.channel = 1;
  s.sender_id = 0xa77ac4;
  put_credential(s, credential);
  return wire::encode_control(request_id, s);
}

std::optional<Answer> subscribe(Conn& c, std::string_view credential, uint64_t deadline_ns) {
  if (!c.write_all(subscribe_frame(1, credential), deadline_ns)) return std::nullopt;
  while (auto a = c.await(deadline_ns)) {
    if (a->kind == Answer::Kind::kAck || a->kind == Answer::Kind::kError) return a;
  }
  return std::nullopt;
}

}  // namespace mdcast::attack
