// The publisher and subscriber processes: the library's agents over the
// medium the settings name (registry.hpp), with counters files, result files
// and a clean end on SIGINT/SIGTERM.
#pragma once

#include <csignal>
#include <string>

#include "mdcast/book/generator.hpp"
#include "settings.hpp"

namespace mdcast::app {

// Set by SIGINT/SIGTERM; loops end cleanly (result file written).
extern volatile std::sig_atomic_t g_stop;
void install_signal_handlers();

int run_publish(Settings& s);
int run_subscribe(Settings& s);

// publisher.session, or 64 fresh random bits.
uint64_t pick_session(const Settings& s);
// The synthetic order flow of `mdcast publish`.
book::GeneratorConfig generator_config(const Settings& s);

}  // namespace mdcast::app
