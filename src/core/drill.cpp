#include "mdcast/core/drill.hpp"

#include <signal.h>
#include <unistd.h>

namespace mdcast {
namespace {
std::atomic<CrashDrill*> g_drill{nullptr};
}  // namespace

std::optional<DrillPoint> parse_drill_point(std::string_view s) noexcept {
  if (s.empty()) return DrillPoint::kNone;
  if (s == "fragment") return DrillPoint::kFragment;
  if (s == "snapshot") return DrillPoint::kSnapshot;
  return std::nullopt;
}

std::string_view drill_point_name(DrillPoint p) noexcept {
  switch (p) {
    case DrillPoint::kFragment: return "fragment";
    case DrillPoint::kSnapshot: return "snapshot";
    case DrillPoint::kNone: break;
  }
  return "";
}

void CrashDrill::crash() noexcept {
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();  // SIGKILL cannot be caught: never returns
}

void arm_on_sigusr1(CrashDrill& drill) {
  g_drill.store(&drill, std::memory_order_relaxed);
  struct sigaction sa {};
  sa.sa_handler = [](int) {
    if (CrashDrill* d = g_drill.load(std::memory_order_relaxed)) d->arm();
  };
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace mdcast
