// Output whose reader may go away: `mdcast subscribe --print | head -3`,
// `mdcast publish 2>&1 | head -1`. SIGPIPE is ignored (a control socket's
// peer may vanish too), so a write to a closed pipe fails with EPIPE and
// fmt::print throws std::system_error: from a noexcept handler that would be
// std::terminate, from main's catch an abort mid-report. Instead the command
// ends quietly with exit_code::kOutputClosed (141, the shell's 128 + SIGPIPE).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <system_error>

#include "runners.hpp"

namespace mdcast::app {

// Whether e is a write to a pipe whose reader went away.
inline bool closed_pipe(const std::system_error& e) noexcept { return e.code().value() == EPIPE; }

// Set once stdout (or stderr) has lost its reader; later prints to it are
// skipped. Atomics: a subscriber's handlers and the conductor both print.
inline std::atomic<bool> g_stdout_closed{false}, g_stderr_closed{false};

// Runs print (which writes to `to`, stdout or stderr) where nothing may
// throw: a closed pipe marks the stream and, for stdout - what the command
// is run for - asks the command to stop as SIGINT would; any other write
// error is dropped (there is nowhere left to report it).
template <class Print>
void print_noexcept(std::FILE* to, Print&& print) noexcept {
  std::atomic<bool>& closed = to == stdout ? g_stdout_closed : g_stderr_closed;
  if (closed.load(std::memory_order_relaxed)) return;
  try {
    print();
  } catch (const std::system_error& e) {
    if (closed_pipe(e) && !closed.exchange(true) && to == stdout) g_stop.request();
  } catch (...) {
  }
}

// A last word on stderr that cannot itself fail loudly (main's catch).
inline void report_noexcept(std::string_view what) noexcept {
  if (g_stderr_closed.load(std::memory_order_relaxed)) return;
  std::string_view prefix = "mdcast: ";
  if (std::fwrite(prefix.data(), 1, prefix.size(), stderr) != prefix.size() ||
      std::fwrite(what.data(), 1, what.size(), stderr) != what.size() || std::fputc('\n', stderr) == EOF)
    g_stderr_closed.store(true, std::memory_order_relaxed);
}

}  // namespace mdcast::app
