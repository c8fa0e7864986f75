#include "mdcast/runtime/child_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/stats/counters_file.hpp"

extern char** environ;

namespace mdcast::runtime {

ChildProcess ChildProcess::spawn(const std::string& exe, const std::vector<std::string>& args, std::string log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);  // a group of its own
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ChildProcess c;
  const int rc = posix_spawn(&c.pid_, exe.c_str(), &fa, &at, argv.data(), environ);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    c.pid_ = -1;
    errno = rc;
    fail_errno("cannot start {} {} (log {})", exe, args.empty() ? "" : args[0], log);
  }
  c.log_ = std::move(log);
  return c;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), status_(std::exchange(o.status_, -1)), log_(std::move(o.log_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    ChildProcess gone(std::move(*this));  // kills and reaps what this held
    pid_ = std::exchange(o.pid_, -1);
    status_ = std::exchange(o.status_, -1);
    log_ = std::move(o.log_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ < 0 || status_ >= 0) return;
  ::kill(pid_, SIGKILL);
  wait();
}

bool ChildProcess::reaped() noexcept {
  if (pid_ < 0) return true;
  if (status_ >= 0) return true;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return false;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return true;
}

void ChildProcess::wait() noexcept {
  if (pid_ < 0 || status_ >= 0) return;
  int st = 0;
  pid_t r;
  do r = ::waitpid(pid_, &st, 0);
  while (r < 0 && errno == EINTR);
  status_ = r != pid_ ? 128 + SIGKILL : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void ChildProcess::signal(int sig) noexcept {
  if (pid_ >= 0 && status_ < 0) ::kill(pid_, sig);
}

std::string ChildProcess::log_tail(size_t lines) const {
  std::FILE* f = std::fopen(log_.c_str(), "r");
  if (!f) return {};
  std::vector<std::string> all;
  char buf[1024];
  while (std::fgets(buf, sizeof buf, f)) all.emplace_back(buf);
  std::fclose(f);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "    | " + all[i];
  return out;
}

ChildStart await_running(ChildProcess& child, uint64_t deadline_ns, const StopFlag* stop) {
  const std::string path = fmt::format("{}/mdcast-{}.stat", stats::stat_dir(), child.pid());
  for (;;) {
    try {
      if (stats::read_counters(path).state == stats::ProcessState::kRunning) return ChildStart::kRunning;
    } catch (const Error&) {  // not written yet
    }
    if (child.reaped()) return ChildStart::kExited;
    if (stop && stop->requested()) return ChildStart::kStopped;
    if (monotonic_ns() > deadline_ns) return ChildStart::kTimedOut;
    sleep_ns(20 * kNsPerMs);
  }
}

bool all_reaped(std::span<ChildProcess* const> kids) noexcept {
  bool all = true;
  for (ChildProcess* c : kids) all &= c->reaped();
  return all;
}

void terminate_all(std::span<ChildProcess* const> kids, uint64_t grace_ns) noexcept {
  for (ChildProcess* c : kids) c->signal(SIGTERM);
  for (const uint64_t until = monotonic_ns() + grace_ns; !all_reaped(kids) && monotonic_ns() < until;)
    sleep_ns(20 * kNsPerMs);
  for (ChildProcess* c : kids) c->signal(SIGKILL);
  for (ChildProcess* c : kids) c->wait();
}

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail("cannot find this process's executable (/proc/self/exe): {}", ec.message());
  return p.string();
}

}  // namespace mdcast::runtime
