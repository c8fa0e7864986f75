// Attacks on the control socket: request floods, clients that never read,
// idle sockets, a frame that never completes, wrong credentials.
#include <fmt/format.h>
#include <poll.h>

#include <memory>

#include "attack.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::attack {
namespace {

using Kind = Answer::Kind;

uint64_t deadline_after(double seconds) { return monotonic_ns() + static_cast<uint64_t>(seconds * 1e9); }

// ----------------------------------------------------------------- floods --

enum class FloodKind : uint8_t { kSnapshot, kRetransmit };

struct FloodStats {
  uint64_t connections = 0, disconnects = 0, connect_failures = 0, subscribe_failures = 0;
  uint64_t bytes_written = 0, bytes_read = 0, frames_read = 0;
  uint64_t errors = 0, overloaded = 0, snapshot_done = 0, retransmit_replies = 0, too_old = 0;
};

// 64 KiB of back-to-back requests, a whole number of frames, so a cursor
// cycling through it always resumes on a frame boundary.
std::vector<std::byte> request_block(FloodKind k, uint64_t session, uint64_t from, uint32_t count, size_t& frame_size) {
  std::vector<std::byte> one;
  if (k == FloodKind::kSnapshot) {
    one = wire::encode_control(0, wire::SnapshotRequest{});  // "all": every subscribed instrument
  } else {
    wire::RetransmitRequest r;
    set_session(r.session, session);
    r.from_seq = from;
    r.count = count;
    one = wire::encode_control(0, r);
  }
  frame_size = one.size();
  const size_t n = (64u << 10) / frame_size;
  std::vector<std::byte> block;
  block.reserve(n * frame_size);
  for (size_t i = 0; i < n; ++i) {
    store_le<uint32_t>(one.data() + wire::ctl::kRequestId, static_cast<uint32_t>(i + 1));
    block.insert(block.end(), one.begin(), one.end());
  }
  return block;
}

int flood(const FloodArgs& a, FloodKind k) {
  const std::string addr = resolve_address(a.address);
  const char* what = k == FloodKind::kSnapshot ? "snapshot" : "retransmit";
  fmt::print("{}-flood: {} for {} s, {}\n", what, addr, a.seconds, a.never_read ? "never reading" : "reading replies");
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = deadline_after(a.seconds);
  FloodStats st;
  size_t frame_size = 16;
  std::string last_error;
  while (!g_stop && monotonic_ns() < end) {
    std::string why;
    auto c = Conn::open(addr, &why);
    if (!c) {
      ++st.connect_failures;
      last_error = why;
      sleep_ms(10);
      continue;
    }
    auto ack = subscribe(*c, "", std::min(end, monotonic_ns() + 2 * kNsPerSec));
    if (!ack || ack->kind != Kind::kAck) {
      ++st.subscribe_failures;
      last_error = ack ? ack->text : "no answer to subscribe";
      sleep_ms(10);
      continue;
    }
    ++st.connections;
    // The whole ring, as far as the ack tells; too-old answers move it on.
    uint64_t from = ack->oldest ? ack->oldest : 1;
    auto count = static_cast<uint32_t>(ack->last_seq >= from ? std::min<uint64_t>(ack->last_seq - from + 1, 1u << 20) : 1);
    auto block = request_block(k, ack->session, from, count, frame_size);
    size_t off = 0;
    bool rebuild = false;
    FrameSkimmer skim;
    std::vector<Answer> answers;
    bool peer_closed = false;
    while (!g_stop && monotonic_ns() < end && !peer_closed) {
      pollfd p{c->fd(), static_cast<short>(POLLOUT | (a.never_read ? 0 : POLLIN)), 0};
      ::poll(&p, 1, 20);
      if (p.revents & (POLLHUP | POLLERR)) peer_closed = a.never_read;
      if (!a.never_read && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
        // Drain what is there: replies dwarf requests, so reading is the attacker's bottleneck.
        for (int i = 0; i < 64 && !peer_closed; ++i) {
          size_t n = 0;
          const auto r = c->read_some(skim, answers, n);
          st.bytes_read += n;
          if (r == Conn::Io::kClosed) peer_closed = true;
          if (r != Conn::Io::kOk) break;
        }
        for (const Answer& x : answers) {
          ++st.frames_read;
          if (x.kind == Kind::kError) {
            ++st.errors;
            if (x.error == wire::ErrorCode::kOverloaded) ++st.overloaded;
            if (last_error.empty() || x.error == wire::ErrorCode::kOverloaded) last_error = x.text;
          } else if (x.kind == Kind::kSnapshotDone) {
            ++st.snapshot_done;
          } else if (x.kind == Kind::kRetransmit) {
            ++st.retransmit_replies;
            if (x.whole && x.retransmit == wire::RetransmitStatus::kTooOld && x.oldest > from) {
              ++st.too_old;
              from = x.oldest;
              rebuild = true;
            }
          }
        }
        answers.clear();
      }
      if (!peer_closed && (p.revents & POLLOUT)) {
        size_t n = 0;
        const auto r = c->write_some(std::span(block).subspan(off), n);
        if (r == Conn::Io::kClosed) peer_closed = true;
        st.bytes_written += n;
        off = (off + n) % block.size();
        if (rebuild && off == 0) {
          block = request_block(k, ack->session, from, count, frame_size);
          rebuild = false;
        }
      }
    }
    if (peer_closed) ++st.disconnects;
  }
  if (!last_error.empty()) fmt::print("last error: {}\n", last_error);
  Report r;
  r.add("seconds", static_cast<double>(monotonic_ns() - t0) / 1e9)
      .add("connections", st.connections)
      .add("disconnects", st.disconnects)
      .add("connect_failures", st.connect_failures)
      .add("subscribe_failures", st.subscribe_failures)
      .add("requests_sent", st.bytes_written / frame_size)
      .add("bytes_written", st.bytes_written)
      .add("bytes_read", st.bytes_read)
      .add("frames_read", st.frames_read)
      .add("error_replies", st.errors)
      .add("overloaded", st.overloaded);
  if (k == FloodKind::kSnapshot)
    r.add("snapshots_done", st.snapshot_done);
  else
    r.add("retransmit_replies", st.retransmit_replies).add("too_old", st.too_old);
  r.print();
  return st.connections > 0 ? 0 : 1;
}

}  // namespace

int snapshot_flood(const FloodArgs& a) { return flood(a, FloodKind::kSnapshot); }
int retransmit_flood(const FloodArgs& a) { return flood(a, FloodKind::kRetransmit); }

// ------------------------------------------------------------- never read --

int never_read(const std::string& address, unsigned clients, double seconds) {
  const std::string addr = resolve_address(address);
  fmt::print("never-read: {} clients on {} for {} s: subscribe, ask for full snapshots, never read\n", clients, addr,
             seconds);
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = deadline_after(seconds);
  size_t frame_size = 16;
  const auto block = request_block(FloodKind::kSnapshot, 0, 0, 0, frame_size);
  struct Client {
    std::optional<Conn> c;
    size_t off = 0;
  };
  std::vector<Client> cs(clients);
  uint64_t connections = 0, disconnects = 0, connect_failures = 0, bytes_written = 0;
  while (!g_stop && monotonic_ns() < end) {
    for (Client& cl : cs) {
      if (!cl.c) {
        cl.c = Conn::open(addr, nullptr);
        if (!cl.c) {
          ++connect_failures;
          continue;
        }
        ++connections;
        cl.off = 0;
        // Subscribe without waiting for the ack: this client reads nothing, ever.
        if (!cl.c->write_all(subscribe_frame(1, ""), monotonic_ns() + kNsPerSec)) {
          cl.c.reset();
          ++disconnects;
          continue;
        }
      }
      // Requests until the socket takes no more; the publisher's answers
      // pile up on its side of the connection.
      for (int i = 0; i < 16; ++i) {
        size_t n = 0;
        const auto r = cl.c->write_some(std::span(block).subspan(cl.off), n);
        bytes_written += n;
        cl.off = (cl.off + n) % block.size();
        if (r == Conn::Io::kClosed) {
          cl.c.reset();
          ++disconnects;
        }
        if (r != Conn::Io::kOk) break;
      }
    }
    sleep_ms(5);
  }
  Report()
      .add("seconds", static_cast<double>(monotonic_ns() - t0) / 1e9)
      .add("clients", static_cast<uint64_t>(clients))
      .add("connections", connections)
      .add("disconnects", disconnects)
      .add("connect_failures", connect_failures)
      .add("requests_sent", bytes_written / frame_size)
      .add("bytes_written", bytes_written)
      .print();
  return connections > 0 ? 0 : 1;
}

// ----------------------------------------------------------- idle sockets --

int idle_sockets(const std::string& address, unsigned count, double seconds) {
  const std::string addr = resolve_address(address);
  const uint64_t limit = raise_fd_limit(count + 256);
  fmt::print("idle-sockets: {} connections to {} that send nothing, for {} s (fd limit {})\n", count, addr, seconds, limit);
  std::vector<Conn> conns;
  conns.reserve(count);
  uint64_t failed = 0;
  std::string first_error;
  for (unsigned i = 0; i < count && !g_stop; ++i) {
    std::string why;
    auto c = Conn::open(addr, &why, 1000);
    if (!c) {
      if (first_error.empty()) first_error = why;
      ++failed;
      continue;
    }
    conns.push_back(std::move(*c));
  }
  if (!first_error.empty()) fmt::print("first connect error: {}\n", first_error);
  // The scenario starts its subscribers once this line is out.
  fmt::print("ready opened={} failed={}\n", conns.size(), failed);
  std::fflush(stdout);
  const uint64_t t_ready = monotonic_ns();
  const uint64_t end = deadline_after(seconds);
  std::vector<uint64_t> closed_ms(conns.size(), 0);
  uint64_t closed = 0, first_close = 0, last_close = 0, answers = 0;
  std::vector<pollfd> pfds(conns.size());
  std::vector<Answer> got;
  while (!g_stop && monotonic_ns() < end && closed < conns.size()) {
    for (size_t i = 0; i < conns.size(); ++i) pfds[i] = {conns[i].closed() ? -1 : conns[i].fd(), POLLIN, 0};
    if (::poll(pfds.data(), pfds.size(), 50) <= 0) continue;
    for (size_t i = 0; i < conns.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      FrameSkimmer skim;
      size_t n = 0;
      if (conns[i].read_some(skim, got, n) != Conn::Io::kClosed) continue;
      const uint64_t ms = ms_since(t_ready);
      if (closed == 0) first_close = ms;
      last_close = ms;
      ++closed;
    }
    answers += got.size();
    got.clear();
  }
  Report()
      .add("count", static_cast<uint64_t>(count))
      .add("opened", static_cast<uint64_t>(conns.size()))
      .add("failed", failed)
      .add("closed_by_peer", closed)
      .add("first_close_ms", first_close)
      .add("last_close_ms", last_close)
      .add("still_open", conns.size() - closed)
      .add("answers", answers)
      .add("fd_limit", limit)
      .print();
  return conns.empty() ? 1 : 0;
}

// ------------------------------------------------------------- half frame --

int half_frame(const std::string& address, double seconds, uint32_t length, bool subscribe_first) {
  const std::string addr = resolve_address(address);
  std::string why;
  auto c = Conn::open(addr, &why);
  if (!c) {
    fmt::print("half-frame: {}\n", why);
    Report().add("connected", uint64_t{0}).print();
    return 1;
  }
  bool subscribed = false;
  if (subscribe_first) {
    auto ack = subscribe(*c, "", monotonic_ns() + 2 * kNsPerSec);
    subscribed = ack && ack->kind == Kind::kAck;
    if (!subscribed) fmt::print("half-frame: subscribe was not granted: {}\n", ack ? ack->text : "no answer");
  }
  // A header announcing `length` bytes, and a few body bytes: the rest never comes.
  std::vector<std::byte> part(wire::ctl::kHeaderSize + 8);
  store_le<uint32_t>(part.data() + wire::ctl::kLength, length);
  store_le<uint8_t>(part.data() + wire::ctl::kType, static_cast<uint8_t>(wire::CtlType::kSubscribe));
  store_le<uint8_t>(part.data() + wire::ctl::kVersion, 1);
  store_le<uint32_t>(part.data() + wire::ctl::kRequestId, 7);
  const bool sent = c->write_all(part, monotonic_ns() + kNsPerSec);
  fmt::print("half-frame: {} {}: sent {} of a {}-byte frame, waiting up to {} s for the publisher to close\n", addr,
             subscribed ? "(subscribed first)" : "(not subscribed)", part.size(), length, seconds);
  const uint64_t t_sent = monotonic_ns();
  const bool closed = sent ? c->wait_closed(deadline_after(seconds)) : true;
  const uint64_t ms = ms_since(t_sent);
  Report r;
  r.add("length", static_cast<uint64_t>(length))
      .add("subscribed", static_cast<uint64_t>(subscribed))
      .add("sent_bytes", sent ? static_cast<uint64_t>(part.size()) : 0)
      .add("closed", static_cast<uint64_t>(closed));
  if (closed)
    r.add("closed_after_ms", ms);
  else
    r.add("waited_ms", ms);
  r.print();
  return 0;
}

// -------------------------------------------------------- bad credentials --

namespace {

// One attempt at being admitted with a credential we do not have. Today that
// is a Subscribe carrying a wrong credential string; once the challenge-
// response handshake lands (AuthHello / AuthChallenge / AuthProof), this
// class alone changes: start() sends the hello, on_answer() answers the
// challenge with a made-up proof and waits for the verdict.
// One guess through the challenge-response handshake: a hello naming an
// identity (a real one or not: the publisher's challenge looks the same),
// then a proof the guesser cannot compute (it has no secret), and the
// publisher's verdict. A guesser learns one bit per attempt; the publisher's
// growing delay bounds how many attempts it gets per second.
class CredentialAttempt {
 public:
  enum class Outcome : uint8_t { kPending, kRejected, kAccepted, kOtherError };
  static bool supported() { return true; }
  void start(Conn& c, uint64_t n) {
    wire::AuthHello h;
    h.channel = 1;
    h.identity = n % 2 ? "good" : fmt::format("guess-{:08x}", n);  // the real identity, and invented ones
    wire::random_bytes(h.client_nonce);
    (void)c.write_all(wire::encode_auth(static_cast<uint32_t>(n), h), monotonic_ns() + kNsPerSec);
  }
  Outcome on_answer(Conn& c, const Answer& a) {
    if (a.type == static_cast<uint8_t>(wire::CtlType::kAuthChallenge)) {
      wire::AuthProof p;
      wire::random_bytes(p.client_proof);  // a guess
      (void)c.write_all(wire::encode_auth(2, p), monotonic_ns() + kNsPerSec);
      return Outcome::kPending;
    }
    if (a.kind == Kind::kAck) return Outcome::kAccepted;
    if (a.kind != Kind::kError) return Outcome::kPending;
    return a.error == wire::ErrorCode::kBadCredential ? Outcome::kRejected : Outcome::kOtherError;
  }
};

}  // namespace

int bad_credentials(const std::string& address, double seconds, unsigned clients) {
  const std::string addr = resolve_address(address);
  if (!CredentialAttempt::supported()) {
    fmt::print("bad-credentials: this build's Subscribe carries no credential: the handshake attack is not written "
               "yet (CredentialAttempt in tests/system/hostile/attack_control.cpp)\n");
    return 2;
  }
  fmt::print("bad-credentials: {} client(s) present wrong credentials to {} for {} s\n", clients, addr, seconds);
  struct Client {
    std::optional<Conn> c;
    CredentialAttempt attempt;
    bool waiting = false;
    uint64_t deadline = 0;
    FrameSkimmer skim;
  };
  std::vector<Client> cs(clients);
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = deadline_after(seconds);
  // Long enough for any deliberate delay a publisher might add before it
  // answers: an attempt still unanswered after this counts as unanswered.
  constexpr uint64_t kPatience = 6 * kNsPerSec;
  uint64_t attempts = 0, answered = 0, rejected = 0, accepted = 0, other = 0, unanswered = 0, cut_off = 0;
  uint64_t connections = 0;
  std::string other_text;
  std::vector<Answer> got;
  std::vector<pollfd> pfds(clients);
  while (!g_stop && monotonic_ns() < end) {
    for (Client& cl : cs) {
      if (!cl.c) {
        cl.c = Conn::open(addr, nullptr);
        cl.skim = FrameSkimmer();
        cl.waiting = false;
        if (!cl.c) continue;
        ++connections;
      }
      if (!cl.waiting) {
        cl.attempt.start(*cl.c, ++attempts);
        cl.waiting = true;
        cl.deadline = monotonic_ns() + kPatience;
      }
    }
    for (size_t i = 0; i < clients; ++i) pfds[i] = {cs[i].c ? cs[i].c->fd() : -1, POLLIN, 0};
    ::poll(pfds.data(), pfds.size(), 10);
    const uint64_t now = monotonic_ns();
    for (size_t i = 0; i < clients; ++i) {
      Client& cl = cs[i];
      if (!cl.c) continue;
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        size_t n = 0;
        const auto r = cl.c->read_some(cl.skim, got, n);
        for (const Answer& a : got) {
          if (!cl.waiting) continue;
          const auto o = cl.attempt.on_answer(*cl.c, a);
          if (o == CredentialAttempt::Outcome::kPending) continue;
          cl.waiting = false;
          ++answered;
          if (o == CredentialAttempt::Outcome::kRejected) ++rejected;
          if (o == CredentialAttempt::Outcome::kAccepted) ++accepted;
          if (o == CredentialAttempt::Outcome::kOtherError) {
            ++other;
            other_text = a.text;
          }
        }
        got.clear();
        if (r == Conn::Io::kClosed) {
          // Cut off after too many errors: the attempt in flight is lost, not ignored.
          if (cl.waiting) ++cut_off;
          cl.c.reset();
          continue;
        }
      }
      if (cl.waiting && now > cl.deadline) {
        ++unanswered;
        cl.c.reset();
      }
    }
  }
  const double secs = static_cast<double>(monotonic_ns() - t0) / 1e9;
  if (!other_text.empty()) fmt::print("other error: {}\n", other_text);
  Report()
      .add("seconds", secs)
      .add("clients", static_cast<uint64_t>(clients))
      .add("connections", connections)
      .add("attempts", attempts)
      .add("answered", answered)
      .add("rejected", rejected)
      .add("accepted", accepted)
      .add("other_errors", other)
      .add("unanswered", unanswered)
      .add("cut_off", cut_off)
      .add("answered_per_s", static_cast<double>(answered) / std::max(secs, 1e-3))
      .print();
  return 0;
}

}  // namespace mdcast::attack
