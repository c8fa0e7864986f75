// The publisher and subscriber processes: the library's agents over the
// medium the settings name (mdcast/settings/media.hpp), with counters files, result files
// and a clean end on SIGINT/SIGTERM.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <unistd.h>

#include <memory>

#include "mdcast/core/error.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/runtime/result_file.hpp"
#include "mdcast/runtime/subscriber_runtime.hpp"
#include "settings.hpp"

namespace mdcast::app {

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

// Channel index k's medium as subscribe and record open it: behind the fault
// injector (subscriber.inject_loss: the tests drop datagrams to show they are
// recovered; one branch per poll, not per datagram, when no fault is set).
template <class E>
std::shared_ptr<media::fault::FaultyMedium<typename E::Subscriber>> open_faulty(const Settings& s, uint32_t k) {
  using Inner = typename E::Subscriber;
  struct Both {  // teardown: the injector, then the medium it wraps
    Both(std::unique_ptr<Inner> i, const media::fault::FaultProfile& f) : inner(std::move(i)), faulty(*inner, f) {}
    std::unique_ptr<Inner> inner;
    media::fault::FaultyMedium<Inner> faulty;
  };
  const Settings cs = channel_settings<E>(s, k);
  auto make = [&] { return E::subscriber(cs); };
  auto inner = s.feed.channels > 1 ? with_context(fmt::format("channel {}", cs.feed.channel), make) : make();
  auto both = std::make_shared<Both>(std::move(inner), injected_faults(s, static_cast<uint64_t>(::getpid()) + k));
  return {both, &both->faulty};
}

}  // namespace mdcast::app
