// The publisher and subscriber processes: the library's agents over the
// medium the settings name (mdcast/settings/media.hpp), with counters files, result files
// and a clean end on SIGINT/SIGTERM.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>

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

// Requested by SIGINT/SIGTERM (install_signal_handlers, which also ignores
// SIGPIPE); loops end cleanly (result file written).
extern StopFlag g_stop;
void install_signal_handlers();

int run_publish(Settings& s);
int run_subscribe(Settings& s);
// `mdcast relay` (relay.cpp): s is its downstream (a publisher's settings), upstream the feed it subscribes to.
int run_relay(Settings& s, const Settings& upstream);

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

}  // namespace mdcast::app
