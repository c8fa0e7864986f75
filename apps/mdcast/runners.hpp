// The publisher and subscriber processes: the library's agents over the
// medium the settings name (mdcast/settings/media.hpp), with counters files, result files
// and a clean end on SIGINT/SIGTERM.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <string>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/runtime/result_file.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
#include "settings.hpp"

namespace mdcast::app {

using runtime::BookDigest;
using runtime::BookVerdict;
using runtime::compare_books;
using runtime::rate_shortfall;
using runtime::read_result;
using runtime::RunResult;
using runtime::write_result;

// Set by SIGINT/SIGTERM; loops end cleanly (result file written). Atomic,
// not a volatile sig_atomic_t: a publisher's threads all read it.
extern std::atomic<int> g_stop;
// The same request, as the library's runtime takes it.
extern StopFlag g_stop_flag;
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may store only to a lock-free atomic");
void install_signal_handlers();

int run_publish(Settings& s);
// publisher.threads, or one per publisher.cpus entry, or 1 (UsageError when
// they do not fit feed.channels or each other).
uint32_t publishing_threads(const Settings& s);
int run_subscribe(Settings& s);

// When a subscriber gives up (subscriber.duration, .wait, .give_up; the stop flag).
inline runtime::SubscriberLimits subscriber_limits(const Settings& s) {
  return {s.feed.stop, s.sub.duration_ns, s.sub.wait_ns, s.sub.give_up_ns};
}

// Whether a subscriber's own loop (record) should end at `now`, and why
// (`outcome`, a result file's word): its duration reached, refused, the
// publisher silent; interrupted leaves `outcome` as it was.
template <class Agent>
bool subscriber_done(const Agent& a, const Settings& s, uint64_t t0, uint64_t now, std::string& outcome) {
  runtime::SubscriberEnding why{};
  std::string error;
  if (!runtime::subscriber_should_end(a, subscriber_limits(s), t0, now, why, error)) return false;
  if (why == runtime::SubscriberEnding::kRefused)
    outcome = "error: " + error;
  else if (why != runtime::SubscriberEnding::kStopped)
    outcome = to_string(why);
  return true;
}

// publisher.session, or 64 fresh random bits.
uint64_t pick_session(const Settings& s);
// The synthetic order flow of `mdcast publish`.
book::GeneratorConfig generator_config(const Settings& s);

}  // namespace mdcast::app
