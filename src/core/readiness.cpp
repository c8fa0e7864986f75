// ReadinessRing (see readiness.hpp): a multishot poll in a small io_uring,
// read from the completion queue's memory.
#include "mdcast/core/readiness.hpp"

#include <liburing.h>
#include <poll.h>
#include <pthread.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace mdcast {
namespace {

// user_data of a poll removal's own completion; polls count from 1.
constexpr uint64_t kRemoveTag = 0;
// Overflow flushes per check(): each may let new completions overflow again
// while the caller is not consuming; past this the caller is simply told
// "ready" and the rest waits for the next check.
constexpr int kMaxFlushes = 4;

std::string setup_advice(int err) {
  const char* what = "";
  switch (err) {
    case EPERM:
    case EACCES:
      what = ": sysctl kernel.io_uring_disabled forbids it (1: only members of kernel.io_uring_group), or a "
             "seccomp profile does (containers: allow io_uring_setup/io_uring_enter)";
      break;
    case ENOSYS: what = ": the kernel has no io_uring (before 5.1) or a seccomp filter hides it"; break;
    case ENOMEM:
      what = ": kernels before 5.12 charge the ring to RLIMIT_MEMLOCK (raise `ulimit -l`), later ones to the "
             "memory cgroup";
      break;
    case EMFILE:
    case ENFILE: what = ": out of file descriptors (raise the open-files limit)"; break;
    default: break;
  }
  return fmt::format("io_uring_queue_init: {}{}; idle control polls make a system call each", std::strerror(err), what);
}

}  // namespace

struct ReadinessRing::State {
  io_uring ring{};
  bool ring_ok = false;
  int fd = -1;
  uint64_t gen = 0;      // user_data of the poll armed now
  pthread_t owner{};     // the thread that armed it: the kernel completes it there
  bool pending = false;  // report ready once: just armed

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (ring_ok) io_uring_queue_exit(&ring);  // cancels the poll: the file it holds is let go
  }

  // Arms a new multishot poll, removing the one armed before if asked.
  // Returns 0 or -errno.
  int arm(bool remove_old) noexcept {
    if (remove_old) {
      io_uring_sqe* rm = io_uring_get_sqe(&ring);
      if (!rm) return -EBUSY;
      io_uring_prep_poll_remove(rm, gen);
      io_uring_sqe_set_data64(rm, kRemoveTag);
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (!sqe) return -EBUSY;
    io_uring_prep_poll_multishot(sqe, fd, POLLIN);
    io_uring_sqe_set_data64(sqe, ++gen);
    const int want = remove_old ? 2 : 1;
    const int rc = io_uring_submit(&ring);
    if (rc < 0) return rc;
    if (rc != want) return -EAGAIN;
    owner = pthread_self();
    return 0;
  }
};

ReadinessRing::ReadinessRing() noexcept = default;
ReadinessRing::ReadinessRing(ReadinessRing&&) noexcept = default;
ReadinessRing& ReadinessRing::operator=(ReadinessRing&&) noexcept = default;
ReadinessRing::~ReadinessRing() = default;

ReadinessRing::ReadinessRing(int fd, unsigned entries) {
  auto s = std::make_unique<State>();
  s->fd = fd;
  // No flags: completions run as task work signalled to the arming thread
  // (TWA_SIGNAL), so they land in memory while it spins in user space.
  // COOP_TASKRUN or DEFER_TASKRUN would hold them until its next system call.
  if (const int rc = io_uring_queue_init(entries, &s->ring, 0); rc < 0) {
    reason_ = setup_advice(-rc);
    return;
  }
  s->ring_ok = true;
  if (const int rc = s->arm(false); rc < 0) {
    reason_ = fmt::format("io_uring: arming a poll on fd {}: {}; idle control polls make a system call each", fd,
                          std::strerror(-rc));
    return;
  }
  // A kernel without multishot poll (before 5.13) refuses it at submission:
  // its completion is already there. Others (fd ready now) stay for check().
  unsigned head = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&s->ring, head, cqe) {
    if (cqe->res < 0) {
      reason_ = fmt::format("io_uring: multishot poll on fd {} refused: {}{}; idle control polls make a system "
                            "call each",
                            fd, std::strerror(-cqe->res), cqe->res == -EINVAL ? " (it needs Linux 5.13 or later)" : "");
      return;
    }
  }
  s->pending = true;
  state_ = std::move(s);
}

ReadinessRing ReadinessRing::disabled(std::string why) {
  ReadinessRing r;
  r.reason_ = std::move(why);
  return r;
}

std::string ReadinessRing::reason() const {
  if (state_) return {};
  if (failed_)
    return fmt::format("io_uring: {}: {}; idle control polls make a system call each from then on", failed_,
                       std::strerror(failed_errno_));
  return reason_.empty() ? std::string("not armed") : reason_;
}

void ReadinessRing::give_up(const char* what, int err) noexcept {
  failed_ = what;
  failed_errno_ = err;
  state_.reset();
}

bool ReadinessRing::check() noexcept {
  State* s = state_.get();
  if (!s) return true;
  bool ready = s->pending;
  s->pending = false;
  if (!pthread_equal(s->owner, pthread_self())) {
    // Completions interrupt the thread that armed the poll: move it here.
    // What happened meanwhile is in the level the caller polls next.
    if (const int rc = s->arm(true); rc < 0) {
      give_up("moving the poll to the polling thread", -rc);
      return true;
    }
    ++rearms_;
    ready = true;
  }
  bool ended = false;
  int err = 0;
  for (int flushes = 0;;) {
    unsigned head = 0, n = 0;
    io_uring_cqe* cqe = nullptr;
    io_uring_for_each_cqe(&s->ring, head, cqe) {
      ++n;
      ready = true;
      if (cqe->user_data != s->gen) continue;  // a poll replaced since, or a removal
      if (!(cqe->flags & IORING_CQE_F_MORE)) ended = true;
      if (cqe->res < 0 && cqe->res != -ECANCELED) err = -cqe->res;
    }
    io_uring_cq_advance(&s->ring, n);
    // Completions the kernel could not post (queue full) wait in its
    // overflow list, out of reach of memory reads: fetch them.
    if (!(IO_URING_READ_ONCE(*s->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW)) break;
    ready = true;
    if (++flushes > kMaxFlushes) break;
    if (const int rc = io_uring_get_events(&s->ring); rc < 0 && rc != -EINTR && rc != -EAGAIN) {
      give_up("fetching overflowed completions", -rc);
      return true;
    }
  }
  if (err != 0) {
    give_up("the multishot poll failed", err);
    return true;
  }
  if (ended) {
    // The poll ended (queue overflow, cancelled): wakeups from here to the
    // new poll are in the level the caller polls now, since ready is true.
    if (const int rc = s->arm(false); rc < 0) {
      give_up("re-arming the poll", -rc);
      return true;
    }
    ++rearms_;
  }
  return ready;
}

}  // namespace mdcast
