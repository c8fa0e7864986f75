// mdcast_attack: a hostile client, built only for the tests in this folder.
//
// Each subcommand does one thing an attacker on this host could do to a
// publisher (its control socket, its shm ring) and prints what it did and saw,
// ending with one line of key=value numbers that the scenario scripts read.
// It links the library's own codecs, so its frames are exactly what the
// publisher parses, and a change of the wire structs shows up here at compile
// time rather than as an attack that silently stopped working.
//
// Nothing here is on a data path: clarity over speed, except where the attack
// itself is speed (the floods write 64 KiB at a time and skim replies).
#pragma once

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::attack {

// Set by SIGINT/SIGTERM: a long attack stops and still prints its report.
extern volatile std::sig_atomic_t g_stop;
void install_signal_handlers();

inline uint64_t ms_since(uint64_t t0) { return (monotonic_ns() - t0) / kNsPerMs; }
void sleep_ms(uint64_t ms);

// The last line a subcommand prints: "key=value key=value ...".
class Report {
 public:
  Report& add(std::string_view key, uint64_t v);
  Report& add(std::string_view key, double v);
  Report& add(std::string_view key, std::string_view v);
  void print() const;  // stdout, flushed

 private:
  std::string line_;
};

// Control addresses as the library spells them ("unix:@name", "unix:/path",
// "tcp:host:port"), plus "shm:NAME": whatever the header of ring NAME names,
// which is how a local attacker finds a publisher whose socket name is not
// guessable. Throws mdcast::Error.
std::string resolve_address(const std::string& address);

// Raises RLIMIT_NOFILE to at least `want` descriptors (the hard limit too,
// when privileged). Returns the soft limit in force afterwards.
uint64_t raise_fd_limit(uint64_t want);

// Sessions widen from 32 to 64 bits: every session this tool handles is held
// as uint64_t and converted to whatever width the wire struct has.
template <class Field>
void set_session(Field& f, uint64_t s) {
  f = static_cast<Field>(s);
}

// What the peer said, decoded from a small frame (a squatter decodes what
// subscribers send it the same way). Large frames (snapshot
// data, full retransmit replies) are only counted: copying them would make
// the attacker, not the publisher, the bottleneck.
struct Answer {
  enum class Kind : uint8_t { kAck, kError, kRetransmit, kSnapshotData, kSnapshotDone, kSubscribe, kOther };
  Kind kind = Kind::kOther;
  uint8_t type = 0;
  uint32_t length = 0;
  uint64_t session = 0;
  uint64_t last_seq = 0;            // SubscribeAck
  uint64_t oldest = 0;              // SubscribeAck: oldest retransmittable; RetransmitReply: oldest available
  wire::ErrorCode error = wire::ErrorCode::kMalformed;
  std::string text;                 // ErrorReply
  wire::RetransmitStatus retransmit = wire::RetransmitStatus::kOk;
  uint64_t credential_bytes = 0;    // Subscribe (what a squatter sees of a subscriber)
  bool whole = false;               // the frame was small enough to be decoded
};

// Splits a reply stream into frames without keeping the big ones.
class FrameSkimmer {
 public:
  static constexpr size_t kKeep = 4096;  // frames up to this size are decoded
  // Feeds received bytes; calls fn(const Answer&) per complete frame.
  // Returns false once a length prefix was out of range (stream unusable).
  template <class Fn>
  bool feed(std::span<const std::byte> in, Fn&& fn);
  [[nodiscard]] uint64_t frames() const noexcept { return frames_; }

 private:
  Answer finish();
  std::vector<std::byte> buf_;  // header + body of the current frame while it is kept
  uint32_t length_ = 0;         // of the current frame, 0 while its header is incomplete
  uint64_t skip_ = 0;           // body bytes of a big frame still to skip
  uint64_t frames_ = 0;
  bool broken_ = false;
};

// A client connection to a control address. Move-only.
class Conn {
 public:
  enum class Io : uint8_t { kOk, kAgain, kClosed };

  // Connects (blocking, up to timeout_ms) and makes the socket non-blocking.
  // nullopt with `why` set on failure.
  // `from`: a TCP client's source address (an IPv4 literal; "" = the kernel's choice).
  static std::optional<Conn> open(const std::string& address, std::string* why, int timeout_ms = 2000,
                                  const std::string& from = {});

  [[nodiscard]] int fd() const noexcept { return fd_.get(); }
  // Non-blocking write: n = bytes taken (0 on kAgain).
  Io write_some(std::span<const std::byte> bytes, size_t& n);
  // Writes everything or gives up at the deadline / when the peer closed.
  bool write_all(std::span<const std::byte> bytes, uint64_t deadline_ns);
  // Reads what is there (one recv): n = bytes read.
  Io read_some(FrameSkimmer& s, std::vector<Answer>& out, size_t& n);
  // Waits for the next decodable answer until the deadline: nullopt on
  // timeout or close (closed() tells which).
  std::optional<Answer> await(uint64_t deadline_ns);
  [[nodiscard]] bool closed() const noexcept { return closed_; }
  // Waits up to deadline for the peer to close: true if it did.
  bool wait_closed(uint64_t deadline_ns);

 private:
  explicit Conn(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  FrameSkimmer skim_;
  std::vector<Answer> pending_;
  bool closed_ = false;
};

// Sends a Subscribe for every instrument (with `credential`, where this
// build's Subscribe still carries one) and waits for the answer.
std::optional<Answer> subscribe(Conn& c, std::string_view credential, uint64_t deadline_ns);
std::vector<std::byte> subscribe_frame(uint32_t request_id, std::string_view credential);

// Subcommands (attack_control.cpp, attack_garbage.cpp, attack_shm.cpp).
struct FloodArgs {
  std::string address;
  double seconds = 3;
  bool never_read = false;
};
int snapshot_flood(const FloodArgs& a);
int retransmit_flood(const FloodArgs& a);
int never_read(const std::string& address, unsigned clients, double seconds);
int idle_sockets(const std::string& address, unsigned count, double seconds);
int half_frame(const std::string& address, double seconds, uint32_t length, bool subscribe_first);
int garbage(const std::string& address, uint64_t seed, unsigned timeout_ms);
int bad_credentials(const std::string& address, double seconds, unsigned clients);
// `count` connections, one after another, each subscribing and then held
// (read never again) for `seconds`: one peer asking for every slot.
int subscribers(const std::string& address, unsigned count, double seconds, const std::string& from);
// Joins `group` on `interface`, hears one real sequenced datagram, then
// sends copies of it with the next sequences, per_ms a millisecond.
int forge_chain(const std::string& group, const std::string& interface, double seconds, unsigned per_ms);
// Becomes user `uid` (root only), with that id as its group and no others.
void become_user(unsigned uid);

// attack_announce.cpp: forged control-address announcements on a UDP group.
struct AnnounceArgs {
  std::string group;                    // "239.1.2.3:PORT"
  std::string interface_ip = "127.0.0.1";  // the interface sent from
  std::string listen_ip = "127.0.0.1";  // where our TCP listener binds (port chosen by the kernel)
  uint16_t channel = 1;
  uint64_t session = 1;
  unsigned interval_ms = 5;
  double seconds = 60;
  bool close = false;  // accept and close at once; otherwise accept and never answer
  bool refuse = false;  // answer each hello with a challenge whose proof is made of nothing
};
int announce(const AnnounceArgs& a);

struct RingTarget {
  std::string name;
  std::string dir;  // "" = where the library looks (find_ring)
};
int squat(const RingTarget& t, double seconds, unsigned uid, const std::string& control);
int scribble_position(const RingTarget& t, uint64_t value, double seconds);
// As `uid` when given (root only): what another local user can do to the ring.
int truncate_ring(const RingTarget& t, uint64_t bytes, std::optional<unsigned> uid);

// ---------------------------------------------------------------- inline --

template <class Fn>
bool FrameSkimmer::feed(std::span<const std::byte> in, Fn&& fn) {
  size_t i = 0;
  while (i < in.size() && !broken_) {
    if (skip_ > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, in.size() - i));
      skip_ -= n;
      i += n;
      if (skip_ == 0) fn(finish());
      continue;
    }
    if (length_ == 0) {
      const size_t n = std::min(wire::ctl::kHeaderSize - buf_.size(), in.size() - i);
      buf_.insert(buf_.end(), in.begin() + static_cast<std::ptrdiff_t>(i), in.begin() + static_cast<std::ptrdiff_t>(i + n));
      i += n;
      if (buf_.size() < wire::ctl::kHeaderSize) continue;
      const uint32_t len = load_le<uint32_t>(buf_.data());
      if (len < wire::ctl::kHeaderSize || len > wire::ctl::kMaxFrame) {
        broken_ = true;
        break;
      }
      length_ = len;
      if (len > kKeep) skip_ = len - wire::ctl::kHeaderSize;
      if (len == wire::ctl::kHeaderSize) fn(finish());
      continue;
    }
    const size_t n = std::min<size_t>(length_ - buf_.size(), in.size() - i);
    buf_.insert(buf_.end(), in.begin() + static_cast<std::ptrdiff_t>(i), in.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
    if (buf_.size() == length_) fn(finish());
  }
  return !broken_;
}

}  // namespace mdcast::attack
