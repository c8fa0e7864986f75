// The shm medium's control duty: the control socket, the writer's liveness
// stamp, the check that the control peer is the ring's writer, and readers
// following a restarted publisher to its new ring.
#include "mdcast/media/shm/shm_medium.hpp"

#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "mdcast/core/error.hpp"
#include "ring_file.hpp"

namespace mdcast::media::shm {
namespace {

RingOptions ring_options(const Options& o) {
  RingOptions r;
  r.name = o.name;
  r.dir = o.dir;
  r.slots = o.slots;
  r.max_datagram = o.max_datagram;
  r.huge_pages = o.huge_pages;
  r.group = o.group;
  r.max_bytes = o.max_bytes;
  r.readers = o.readers;
  return r;
}

// The ring appears when its publisher starts: poll for it until the deadline.
// While it is absent, only a stat: a thousand subscribers waiting for their
// host's relay would otherwise throw and catch 50,000 Errors a second. Once
// it is there (or time is up) opening it says what is wrong, if anything.
RingReader wait_for_ring(const Options& o, uid_t owner) {
  const uint64_t deadline = monotonic_ns() + o.wait_ns;
  for (;;) {
    const std::string path = find_ring(o.name, o.dir, owner);
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 || monotonic_ns() >= deadline) {
      try {
        return RingReader(path, owner);
      } catch (const Error&) {
        if (monotonic_ns() >= deadline) throw;
      }
    }
    if (o.cancelled && o.cancelled()) fail("no shm ring {} of feed '{}' yet, and stopped while waiting for it", path, o.name);
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

// The control socket admits whom the ring's file mode admits (its owner,
// shm.group) and root: its abstract name is listed in /proc/net/unix, so
// the name hides nothing.
PeerPolicy control_peers(const Options& o) {
  PeerPolicy p;
  p.uid = ::geteuid();
  if (!o.group.empty()) p.gid = detail::group_id(o.group);
  return p;
}

StreamServerConfig server_config(const Options& o) {
  StreamServerConfig c = o.control_server;
  c.peers = control_peers(o);
  return c;
}

// After a refused peer, the same address is not tried again for this long:
// a squatter on it costs a connection a second, not one per backoff step.
constexpr uint64_t kRefusedHoldNs = kNsPerSec;

}  // namespace

std::string new_control_address(const Options& o) {
  if (!o.control.empty()) return o.control;
  uint64_t r = 0;
  auto* p = reinterpret_cast<unsigned char*>(&r);
  size_t got = 0;
  while (got < sizeof r) {
    const ssize_t n = ::getrandom(p + got, sizeof r - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("control socket name for feed '{}': getrandom", o.name);
    }
    got += static_cast<size_t>(n);
  }
  return fmt::format("unix:@mdcast/{}.{:016x}", o.name, r);
}

std::string channel_ring_name(std::string_view feed, uint32_t channels, uint32_t index) {
  return channels > 1 ? fmt::format("{}.{}", feed, index) : std::string(feed);
}

std::unique_ptr<ControlFrontDoor> open_control_door(const Options& o, const FrontDoorConfig& cfg) {
  FrontDoorConfig c = cfg;
  c.peers = control_peers(o);
  return std::make_unique<ControlFrontDoor>(new_control_address(o), c);
}

// ------------------------------------------------------------- publisher --

namespace {
std::string shared_or_new_address(const Options& o) {
  if (o.control_inbox && o.control.empty())
    fail("shm ring of feed '{}': a control inbox without the shared endpoint's address (Options::control)", o.name);
  return new_control_address(o);
}
}  // namespace

PublisherMedium::PublisherMedium(const Options& o, uint64_t session)
    : server_(shared_or_new_address(o), server_config(o), o.control_inbox),
      ring_(ring_options(o), session, o.channel, server_.address()),
      sink_(ring_),
      session_(session) {}

PublisherFit PublisherMedium::configure(PublisherFit c) const {
  if (c.session != session_)
    fail("shm ring {} names session {:016x}, the engine publishes session {:016x}: build both with the same session",
         ring_.path(), session_, c.session);
  if (c.max_datagram > ring_.max_datagram())
    fail("max_datagram {} is more than a slot of shm ring {} holds ({} bytes): lower it, or raise shm.max_datagram",
         c.max_datagram, ring_.path(), ring_.max_datagram());
  if (c.max_datagram == 0) c.max_datagram = ring_.max_datagram();
  c.retransmit_bytes = ring_.ring_memory().size();
  c.open_data_plane = false;  // only the ring's owner writes it (docs/security.md 3): no tags
  return c;
}

size_t PublisherMedium::poll_control(ControlHandler& h, uint64_t now) {
  const size_t work = server_.poll(h, now);
  ring_.touch(now);
  return work;
}

std::string PublisherMedium::describe() const {
  return fmt::format("shm ring {} ({} pages, packed records), control {} (idle polls: {}){}{}", ring_.path(),
                     ring_.huge_pages() ? "2 MiB huge" : "4 KiB", server_.address(), server_.readiness_mode(),
                     server_.open_files_shortfall().empty() ? "" : "; warning: ", server_.open_files_shortfall());
}

std::vector<CounterGroup> PublisherMedium::counter_groups() const {
  return {counter_group("control", server_.stats())};
}

// ------------------------------------------------------------ subscriber --

namespace {
// A pair's member ring is followed only while its writer lives: a ring
// left by a dead run (another session, perhaps) is never read.
std::optional<RingReader> live_ring(const std::string& name, const std::string& dir, uid_t owner) {
  const std::string path = find_ring(name, dir, owner);
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  try {
    RingReader r(path, owner);
    if (r.current()) return r;
  } catch (const Error&) {
  }
  return std::nullopt;
}

// A pair subscriber starts with whichever member is there; the other's
// ring is attached when it appears. Until one is, as wait_for_ring.
void wait_for_a_member(const Options& o, uid_t owner, ReaderRail (&rails)[2]) {
  const uint64_t deadline = monotonic_ns() + o.wait_ns;
  for (;;) {
    for (auto& r : rails)
      if (!r.reader) r.reader = live_ring(r.name, o.dir, owner);
    if (rails[0].reader || rails[1].reader) return;
    if (monotonic_ns() >= deadline)
      fail("no live publisher wrote shm ring {} or {} within {} s: start a member of the pair (mdcast publish --name "
           "{}), or check shm.dir and shm.publisher_user",
           find_ring(o.name, o.dir, owner), find_ring(o.rail_b, o.dir, owner), o.wait_ns / kNsPerSec, o.name);
    if (o.cancelled && o.cancelled()) fail("stopped while waiting for the shm rings of feed '{}'", o.name);
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
  }
}

// Without a verified control connection for this long, a pair subscriber
// goes to the other member if that one's writer lives: a member that died
// but was not reaped yet still counts as alive, and its socket refuses.
constexpr uint64_t kUnverifiedMoveNs = kNsPerSec;
}  // namespace

SubscriberMedium::SubscriberMedium(const Options& o)
    : opts_(o), owner_(ring_owner_uid(o.publisher_user)), two_(!o.rail_b.empty()) {
  rails_[0].name = o.name;
  rails_[1].name = o.rail_b;
  if (two_) {
    if (o.rail_b == o.name) fail("shm.rail_b '{}' is the feed's own ring: name the pair's other member", o.rail_b);
    wait_for_a_member(o, owner_, rails_);
    ctl_ = rails_[0].reader ? 0 : 1;
  } else {
    rails_[0].reader.emplace(wait_for_ring(o, owner_));
  }
  client_ = std::make_unique<StreamControlClient>(control_of(ctl_));
  channel_.client = client_.get();
}

size_t SubscriberMedium::poll_control(ControlEvents& e, uint64_t now) {
  size_t work = 0;
  if (now >= hold_until_) {
    std::optional<Peer> verdict;
    // The peer is checked before the first frame is taken or sent, whether
    // the connection shows up as an event or as a frame first.
    auto admit = [&] {
      if (channel_.verified || verdict) return;
      verdict = check_peer();
      if (*verdict == Peer::kWriter) {
        channel_.verified = true;
        unverified_since_ = 0;
        e.on_control_connected(now);
        ++work;
      }
    };
    const auto ev = client_->poll(now, [&](std::span<const std::byte> f) {
      admit();
      if (!channel_.verified) return;  // from a peer that is not the ring's writer: not listened to
      ++work;
      e.on_control_frame(f, now);
    });
    if (ev.disconnected && channel_.verified) {
      channel_.verified = false;
      e.on_control_disconnected();
      ++work;
      // A pair's member went away (it died, or left the session to its
      // peer): the other one serves the same session.
      if (two_ && lives(ctl_ ^ 1)) move_control(ctl_ ^ 1, e, now);
    }
    if (ev.connected && client_->connected()) admit();
    if (verdict && *verdict != Peer::kWriter) {
      // Closed here, after the client's poll (not inside its frame loop).
      client_->set_address(control_of(ctl_));
      hold_until_ = now + (*verdict == Peer::kRefused ? kRefusedHoldNs : 100 * kNsPerMs);
    }
  }
  if (!channel_.verified && unverified_since_ == 0) unverified_since_ = now;
  // A file system lookup: every 100 ms is soon enough to notice a restart.
  if (now - last_check_ > 100 * kNsPerMs) {
    last_check_ = now;
    for (int i = 0; i < (two_ ? 2 : 1); ++i) {
      ReaderRail& rail = rails_[i];
      if (!rail.reader) {
        attach(rail);
        continue;
      }
      rail.reader->refresh(now);
      source_.sync_implausible(rail);
      follow_restarted_writer(rail, e);
    }
    if (two_ && !channel_.verified && now - unverified_since_ > kUnverifiedMoveNs && lives(ctl_ ^ 1))
      move_control(ctl_ ^ 1, e, now);
  }
  return work;
}

bool SubscriberMedium::lives(int rail) const { return rails_[rail].reader && rails_[rail].reader->current(); }

void SubscriberMedium::move_control(int to, ControlEvents& e, uint64_t now) {
  if (channel_.verified) {
    channel_.verified = false;
    e.on_control_disconnected();
  }
  ctl_ = to;
  counters_.control_moved.add();
  hold_until_ = 0;
  unverified_since_ = now;
  client_->set_address(control_of(ctl_));
}

std::string SubscriberMedium::control_of(int rail) const {
  return opts_.control.empty() ? std::string(rails_[rail].reader->header().control) : opts_.control;
}

// The ring's header names the control socket; the socket must be the ring's
// writer's: SO_PEERCRED tells who listens there (the kernel says, not the
// peer), and it must be the pid in the header and the uid owning the file.
SubscriberMedium::Peer SubscriberMedium::check_peer() {
  const auto cred = client_->peer();
  const RingReader& reader = *rails_[ctl_].reader;
  const auto& h = reader.header();
  if (cred && static_cast<uint64_t>(cred->pid) == h.writer_pid && cred->uid == reader.owner()) return Peer::kWriter;
  // A publisher that restarted under an address we still use (feed.control
  // set): its new ring comes with the next check, not a refusal.
  if (cred && !reader.current()) return Peer::kStale;
  std::string why =
      cred ? fmt::format("control socket {} is served by pid {} (uid {}), but shm ring {} was written by pid {} "
                         "(uid {}): not the ring's publisher, so nothing is sent to it (shm.peer_refused)",
                         control_of(ctl_), cred->pid, cred->uid, reader.path(), h.writer_pid, reader.owner())
           : fmt::format("control address {} of shm ring {} is not a Unix socket: who serves it cannot be "
                         "checked, so nothing is sent to it (shm.peer_refused); leave feed.control empty",
                         control_of(ctl_), reader.path());
  counters_.peer_refused.add();
  if (why != peer_error_) {
    log(why);
    peer_error_ = std::move(why);
  }
  return Peer::kRefused;
}

void SubscriberMedium::log(std::string_view what) const {
  if (opts_.log) opts_.log(what);
  else fmt::print(stderr, "mdcast-shm: {}\n", what);
}

// A pair's member that started after this subscriber (or restarted into a
// new ring): read its ring from its start, as a restarted writer's. What it
// holds of the session (a joining member's replay) arrives as duplicates.
void SubscriberMedium::attach(ReaderRail& rail) {
  rail.reader = live_ring(rail.name, opts_.dir, owner_);
  if (!rail.reader) return;
  rail.lapped_seen = 0;
  rail.implausible_seen = rail.reader->implausible();
  counters_.reattached.add();
}

// A restarted publisher creates a new ring file under the same name: read
// the new session from its start (the engine resynchronises on the session).
void SubscriberMedium::follow_restarted_writer(ReaderRail& rail, ControlEvents& e) {
  if (rail.reader->current()) return;
  try {
    RingReader fresh(find_ring(rail.name, opts_.dir, owner_), owner_);
    if (fresh.header().writer_pid == rail.reader->header().writer_pid &&
        fresh.header().writer_start == rail.reader->header().writer_start)
      return;
    // A pair's member ring is taken only from a writer that lives.
    if (two_ && !fresh.current()) return;
    source_.sync_implausible(rail);
    rail.reader.emplace(std::move(fresh));
    rail.lapped_seen = 0;
    rail.implausible_seen = rail.reader->implausible();
    counters_.reattached.add();
    if (&rail != &rails_[ctl_]) return;
    // A new connection, to be verified against the new writer.
    if (two_ && channel_.verified) e.on_control_disconnected();
    channel_.verified = false;
    hold_until_ = 0;
    client_->set_address(control_of(ctl_));
  } catch (const Error&) {
    // No new publisher yet: the engine reports the silence.
  }
}

std::string SubscriberMedium::describe() const {
  if (!two_) return fmt::format("shm ring {}", rails_[0].reader->path());
  auto path = [&](const ReaderRail& r) {
    return r.reader ? r.reader->path() : fmt::format("{} (once its member starts)", find_ring(r.name, opts_.dir, owner_));
  };
  return fmt::format("shm rings {} (rail A) and {} (rail B), a publisher pair", path(rails_[0]), path(rails_[1]));
}

std::vector<CounterGroup> SubscriberMedium::counter_groups() const { return {counter_group("shm", counters_)}; }

}  // namespace mdcast::media::shm
