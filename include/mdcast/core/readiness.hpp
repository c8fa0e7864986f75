// ReadinessRing: "has this descriptor become readable since I last looked?"
// answered from memory, without a system call.
//
// One small io_uring holds a multishot poll (POLLIN) on a descriptor, usually
// an epoll fd: every wakeup of that descriptor posts a completion into the
// ring's memory, and check() reads the completion queue there. A duty loop
// that polls every 100 us asks the kernel only when something happened,
// instead of ~10 000 empty epoll_wait calls a second.
//
// What it reports is a wakeup, not a level: a descriptor that stays readable
// without a new wakeup (bytes the caller left in a socket, more epoll events
// than it fetched) posts nothing more. The caller must remember such work
// itself and look again without asking check(). check() may say "ready" when
// nothing is (a wakeup already consumed by the caller's last epoll_wait): the
// caller then finds nothing, which costs one system call.
//
// Where io_uring cannot be used (kernel.io_uring_disabled, a seccomp profile
// in a container, a kernel without multishot poll, no memory for the ring)
// the ring is unavailable: available() is false, reason() says why and what
// to do, and check() always says "ready", so the caller polls as it did
// without the ring. Never an error: a publisher runs either way.
//
// The kernel runs a poll's completion on the thread that armed it. check()
// moves the poll to the calling thread the first time it is called from
// another one (one system call), so completions interrupt the polling
// thread, which is awake, not the one that built the owner.
//
// Single-threaded: one thread at a time calls check(). The descriptor is not
// owned and must outlive the ring (the poll holds a reference to its file
// until the ring is destroyed: point it at an epoll fd, not at a socket whose
// close must be seen by the peer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mdcast {

class ReadinessRing {
 public:
  // Completion-queue entries come out as twice this; a multishot poll that
  // finds the queue full ends and is re-armed (reported ready once).
  static constexpr unsigned kDefaultEntries = 4;

  // Unavailable ("not armed"): check() always says ready.
  ReadinessRing() noexcept;
  // Arms a multishot POLLIN on fd. Unavailable (see reason()) when io_uring
  // cannot be set up or refuses the poll; throws only std::bad_alloc.
  explicit ReadinessRing(int fd, unsigned entries = kDefaultEntries);
  // Unavailable by choice (an operator's setting, a test): reason() is why.
  static ReadinessRing disabled(std::string why);

  ReadinessRing(ReadinessRing&&) noexcept;
  ReadinessRing& operator=(ReadinessRing&&) noexcept;
  ReadinessRing(const ReadinessRing&) = delete;
  ReadinessRing& operator=(const ReadinessRing&) = delete;
  ~ReadinessRing();

  // True when fd may have become ready since the last call that returned
  // true (and on the first call after arming or re-arming). Consumes the
  // completions. No system call, except to re-arm a poll that ended, to
  // move it to this thread, or to fetch completions the kernel held back
  // (completion queue overflow). Always true when unavailable.
  [[nodiscard]] bool check() noexcept;

  [[nodiscard]] bool available() const noexcept { return state_ != nullptr; }
  // Why it is unavailable: what failed, errno text, what to do. Empty when available.
  [[nodiscard]] std::string reason() const;
  // Polls armed again after one ended (queue overflow, a cancellation, a
  // move to another thread): each cost a system call.
  [[nodiscard]] uint64_t rearms() const noexcept { return rearms_; }

 private:
  struct State;
  // After a failure in check(): no allocation there, reason() words it later.
  void give_up(const char* what, int err) noexcept;

  std::unique_ptr<State> state_;
  std::string reason_;          // set up unavailable: why
  const char* failed_ = nullptr;  // gave up in check(): what failed, with errno failed_errno_
  int failed_errno_ = 0;
  uint64_t rearms_ = 0;
};

}  // namespace mdcast
