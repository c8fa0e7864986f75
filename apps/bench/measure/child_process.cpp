#include "child_process.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>

#include "cpu.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::app::bench {

SharedRegion::SharedRegion(size_t bytes) : n_(bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail_errno("cannot map {} bytes of shared memory", bytes);
  p_ = static_cast<std::byte*>(p);
}

void SharedRegion::release() noexcept {
  if (p_) ::munmap(p_, n_);
  p_ = nullptr;
  n_ = 0;
}

ChildProcess ChildProcess::spawn(std::string label, int cpu, const std::function<int()>& body) {
  std::fflush(nullptr);  // or the child's exit would print the parent's buffered output again
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) fail_errno("cannot fork {}", label);
  if (pid == 0) {
    int rc = 1;
    try {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
      if (cpu >= 0) pin_this_thread(cpu);
      rc = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mdcast bench: %s: %s\n", label.c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "mdcast bench: %s: unknown exception\n", label.c_str());
    }
    std::fflush(nullptr);
    ::_exit(rc);  // no atexit handlers, no destructors of the parent's objects
  }
  ChildProcess c;
  c.label_ = std::move(label);
  c.pid_ = pid;
  return c;
}

void ChildProcess::reap(bool block) noexcept {
  if (pid_ <= 0) return;
  int st = 0;
  rusage ru{};
  pid_t r;
  do {
    r = ::wait4(pid_, &st, block ? 0 : WNOHANG, &ru);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    usage_ = ru;
    pid_ = -1;
  } else if (r < 0) {
    pid_ = -1;  // not our child any more (ECHILD): nothing to wait for
  }
}

bool ChildProcess::poll() noexcept {
  reap(false);
  return pid_ <= 0;
}

void ChildProcess::kill() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  reap(true);
}

void ChildProcess::stop(uint64_t grace_ns) noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const uint64_t end = monotonic_ns() + grace_ns;
  while (!poll() && monotonic_ns() < end) {
    timespec ts{0, 5'000'000};
    nanosleep(&ts, nullptr);
  }
  kill();
}

}  // namespace mdcast::app::bench
