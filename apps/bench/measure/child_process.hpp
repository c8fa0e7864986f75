// Child processes and the memory they share with the parent, for benchmarks
// that need publisher and subscribers in separate, pinned processes.
//
// fork() rather than exec: the child runs a function of the parent's binary
// with the parent's settings already parsed, and a MAP_SHARED anonymous
// mapping made before the fork is the result board both sides see. The
// parent must not have other threads running when it forks.
//
// Every child dies with its parent (PR_SET_PDEATHSIG) and with its
// ChildProcess handle (SIGKILL + reap in the destructor): a benchmark that is
// interrupted, times out or throws leaves no process behind.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace mdcast::app::bench {

// Zeroed memory shared with children forked after its creation. Move-only.
class SharedRegion {
 public:
  SharedRegion() noexcept = default;
  explicit SharedRegion(size_t bytes);  // throws Error
  SharedRegion(SharedRegion&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  SharedRegion& operator=(SharedRegion&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion() { release(); }

  [[nodiscard]] std::byte* data() const noexcept { return p_; }
  [[nodiscard]] size_t size() const noexcept { return n_; }

 private:
  void release() noexcept;
  std::byte* p_ = nullptr;
  size_t n_ = 0;
};

// One T constructed in shared memory (T must be usable across processes:
// no pointers into either address space, no heap members).
template <class T>
class Shared {
  static_assert(std::is_standard_layout_v<T>, "shared across processes: plain layout only");

 public:
  Shared() : region_(sizeof(T)) { new (region_.data()) T(); }
  ~Shared() {
    if (region_.data()) get()->~T();
  }
  Shared(Shared&&) noexcept = default;
  Shared& operator=(Shared&&) = delete;

  T* get() const noexcept { return std::launder(reinterpret_cast<T*>(region_.data())); }
  T* operator->() const noexcept { return get(); }
  T& operator*() const noexcept { return *get(); }

 private:
  SharedRegion region_;
};

class ChildProcess {
 public:
  ChildProcess() noexcept = default;
  // Forks. The child pins itself to `cpu` (< 0: leaves affinity alone), runs
  // body and exits with its return value; an exception prints its text to
  // stderr prefixed with `label` and exits 1. Never returns in the child.
  // Throws Error if fork fails.
  static ChildProcess spawn(std::string label, int cpu, const std::function<int()>& body);

  ChildProcess(ChildProcess&& o) noexcept
      : label_(std::move(o.label_)), pid_(std::exchange(o.pid_, -1)), status_(o.status_), usage_(o.usage_) {}
  ChildProcess& operator=(ChildProcess&& o) noexcept {
    if (this != &o) {
      kill();
      label_ = std::move(o.label_);
      pid_ = std::exchange(o.pid_, -1);
      status_ = o.status_;
      usage_ = o.usage_;
    }
    return *this;
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill(); }

  // Reaps the child if it has exited; true once it has (or was never started).
  bool poll() noexcept;
  // SIGKILL and reap; no-op if gone.
  void kill() noexcept;
  // SIGTERM, then SIGKILL after grace_ns if still there.
  void stop(uint64_t grace_ns) noexcept;

  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] const std::string& label() const noexcept { return label_; }
  // After exit: 0..255 exit code, 128+N for signal N, -1 before.
  [[nodiscard]] int status() const noexcept { return status_; }
  // After exit: the child's resource usage (CPU time, involuntary switches).
  [[nodiscard]] const rusage& usage() const noexcept { return usage_; }

 private:
  void reap(bool block) noexcept;
  std::string label_;
  pid_t pid_ = -1;
  int status_ = -1;
  rusage usage_{};
};

}  // namespace mdcast::app::bench
