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
#include "settings.hpp"

namespace mdcast::app {

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

// Whether a subscriber's loop (subscribe, record) should end at `now`, and
// why (`outcome`): interrupted, its duration reached, refused, or the
// publisher silent past subscriber.give_up (or never heard within
// subscriber.wait: a live one sends a heartbeat every 100 ms).
template <class Agent>
bool subscriber_done(const Agent& a, const Settings& s, uint64_t t0, uint64_t now, std::string& outcome) {
  if (g_stop) return true;
  if (s.sub.duration_ns && now - t0 >= s.sub.duration_ns) {
    outcome = "duration";
    return true;
  }
  // One agent, or several channels' (feed::SubscriberChannels).
  bool never = true;
  auto check = [&](const auto& sub) {
    if (sub.subscribe_refused() && outcome.rfind("error:", 0) != 0) outcome = "error: " + sub.last_error();
    never &= sub.counters().datagrams_received.get() == 0;
  };
  if constexpr (requires { a.agent(0); }) {
    for (size_t i = 0; i < a.size(); ++i) check(a.agent(i).subscriber());
  } else {
    check(a.subscriber());
  }
  if (outcome.rfind("error:", 0) == 0) return true;
  if (now - a.last_data_ns() > s.sub.give_up_ns || (never && now - t0 > s.sub.wait_ns)) {
    outcome = "publisher-lost";
    return true;
  }
  return false;
}

// publisher.session, or 64 fresh random bits.
uint64_t pick_session(const Settings& s);
// The synthetic order flow of `mdcast publish`.
book::GeneratorConfig generator_config(const Settings& s);

}  // namespace mdcast::app
