// Standalone acquire and release fences, for seqlocks whose payload words
// are relaxed atomics (a counters file's histograms and tables, the shm
// ring, the history log's claim).
//
// ThreadSanitizer does not model standalone fences, and GCC refuses them in
// its builds (-Werror=tsan). There they become compiler barriers, which is
// all an acquire or release fence is on x86; the payload words stay atomic,
// so TSan still checks every access for a race, it only cannot tell whether
// the ordering the fence gives is enough. scripts/check-fences.sh keeps
// every other file off std::atomic_thread_fence.
#pragma once

#include <atomic>

namespace mdcast {

#if defined(__SANITIZE_THREAD__)
#define MDCAST_TSAN_FENCES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MDCAST_TSAN_FENCES 1
#endif
#endif

inline void release_fence() noexcept {
#if defined(MDCAST_TSAN_FENCES)
  std::atomic_signal_fence(std::memory_order_release);
#else
  std::atomic_thread_fence(std::memory_order_release);
#endif
}

inline void acquire_fence() noexcept {
#if defined(MDCAST_TSAN_FENCES)
  std::atomic_signal_fence(std::memory_order_acquire);
#else
  std::atomic_thread_fence(std::memory_order_acquire);
#endif
}

}  // namespace mdcast
