// The publisher and subscriber processes: duty loops over a medium driver
// (shm_driver.hpp and its siblings), with counters files, result files and
// clean shutdown on SIGINT/SIGTERM.
#pragma once

#include <csignal>
#include <string>

#include "settings.hpp"

namespace mdcast::app {

// Set by SIGINT/SIGTERM; loops end cleanly (result file written).
extern volatile std::sig_atomic_t g_stop;
void install_signal_handlers();

int run_publish(Settings& s);
int run_subscribe(Settings& s);

}  // namespace mdcast::app
