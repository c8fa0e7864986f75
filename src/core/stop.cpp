#include "mdcast/core/stop.hpp"

#include <signal.h>

#include <atomic>

namespace mdcast {
namespace {

// What the handler requests: a signal handler can reach only a global, and
// may read only a lock-free atomic.
std::atomic<StopFlag*> g_signalled{nullptr};
static_assert(std::atomic<StopFlag*>::is_always_lock_free, "a signal handler may read only a lock-free atomic");

}  // namespace

void stop_on_signals(StopFlag& stop) {
  g_signalled.store(&stop, std::memory_order_relaxed);
  struct sigaction sa {};
  sa.sa_handler = [](int) {
    if (StopFlag* f = g_signalled.load(std::memory_order_relaxed)) f->request();
  };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace mdcast
