// A process this one started and supervises (`mdcast demo`'s publisher and
// subscribers; an application's feed processes under a harness): its output
// in a log file, stdin from /dev/null, and its own process group, so a
// terminal's Ctrl-C reaches only the supervisor, which decides what each
// child is told (a publisher asked first, to end its session, and its
// subscribers left to finish with everything it sent).
//
// Move-only. A child still running when its owner goes is killed and reaped,
// so a supervisor that fails during setup leaves no process behind.
//
//   auto pub = runtime::ChildProcess::spawn(runtime::self_executable(), {"publish", ...}, dir + "/pub.log");
//   pub.signal(SIGTERM);                 // ends its session
//   while (!pub.reaped()) wait_a_little();
//   if (pub.status() != 0) fmt::print("{}", pub.log_tail(15));
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/stop.hpp"

namespace mdcast::runtime {

class ChildProcess {
 public:
  // Starts `exe` with `args` (argv[1..]); stdout and stderr to `log`
  // (created or truncated). Error (with errno's text) when it cannot start.
  static ChildProcess spawn(const std::string& exe, const std::vector<std::string>& args, std::string log);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  [[nodiscard]] pid_t pid() const noexcept { return pid_; }
  [[nodiscard]] const std::string& log() const noexcept { return log_; }

  // Whether it has exited (reaped now if it just did); never blocks.
  bool reaped() noexcept;
  // Blocks until it has exited.
  void wait() noexcept;
  // Its exit code, or 128 + the signal that ended it; -1 until reaped.
  [[nodiscard]] int status() const noexcept { return status_; }
  // Sends `sig` unless it was reaped (a reaped pid may belong to another process by now).
  void signal(int sig) noexcept;
  // The last `lines` lines of its log, each prefixed "    | ", for an operator's report.
  [[nodiscard]] std::string log_tail(size_t lines = 15) const;

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  std::string log_;
};

// Until the child's counters file (stats/counters_file.hpp) says it is
// running: what a supervisor waits for before starting what depends on it
// (a publisher before its subscribers).
enum class ChildStart { kRunning, kExited, kTimedOut, kStopped };
[[nodiscard]] ChildStart await_running(ChildProcess& child, uint64_t deadline_ns, const StopFlag* stop = nullptr);

// Whether every child has exited (reaping those that just did); never blocks.
[[nodiscard]] bool all_reaped(std::span<ChildProcess* const> kids) noexcept;
// Asks every child still running to stop (SIGTERM: an mdcast process ends
// its session and writes its result), kills those still running after
// grace_ns, and returns once all are reaped.
void terminate_all(std::span<ChildProcess* const> kids, uint64_t grace_ns) noexcept;

// This process's executable (/proc/self/exe), to start more of itself.
std::string self_executable();

}  // namespace mdcast::runtime
