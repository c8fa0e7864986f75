// What a run of `mdcast bench --control-clients N` measured of the control
// plane beside the usual figures: the load client's side (what its clients
// sent and heard, who was admitted, refused or cut) and the publisher's
// (its control server's and control service's counters). Plain data: it
// travels through the bench's shared board.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "bench/control_load.hpp"
#include "measure/usage.hpp"

namespace mdcast::app::bench {

struct LoadFigures {
  ControlLoadStats ready;          // when it told the parent it was ready (all settled, or setup ran out)
  ControlLoadStats window_start;   // as the measured window opened
  ControlLoadStats window_end;     // as it closed (the clients still connected)
  uint64_t window_ns = 0;
  Usage usage;                     // the load process over the window
  static constexpr size_t kProblems = 4;
  char problems[kProblems][200]{};  // the first problems, in words

  void set_problem(size_t i, std::string_view s) noexcept {
    if (i >= kProblems) return;
    const size_t n = std::min(s.size(), sizeof problems[i] - 1);
    std::memcpy(problems[i], s.data(), n);
    problems[i][n] = 0;
  }
};

// The publisher's control plane as the measured window closed.
struct PublisherControlFigures {
  bool measured = false;           // the medium's control is a stream server
  uint64_t max_clients = 0;        // control.max_clients of the run
  uint64_t clients_open = 0;       // control.clients
  uint64_t subscribed = 0;         // clients the control service has subscribed
  uint64_t accepted = 0, refused = 0, refused_admission = 0, evicted_unadmitted = 0, accept_failures = 0;
  uint64_t cut = 0;                // slow, memory, bad stream, handler, idle/partial timeouts
  uint64_t frames_window = 0;      // control frames received inside the window
  uint64_t polls_window = 0;       // control polls inside the window
  uint64_t status_reports = 0, retransmit_requests = 0, snapshot_requests = 0, session_queries = 0;
  uint64_t overloaded = 0;         // requests answered "over budget, retry later"
  uint64_t longest_poll_ns = 0;    // the longest control poll inside the window (ctl.longest_poll_ns)
};

// Both, with where the load ran, for one run's result.
struct ControlRunFigures {
  uint32_t clients = 0;            // asked for
  bool load_ok = false;
  std::string load_outcome;
  int load_cpu = -1;
  bool load_shares_cpu = false;    // with the latency subscriber (no CPU of its own)
  bool max_clients_raised = false; // the run raised control.max_clients to fit its clients
  LoadFigures load;
  PublisherControlFigures pub;

  // Every client admitted at the start of the window and still there at its end.
  [[nodiscard]] bool all_admitted() const noexcept {
    return load_ok && load.window_start.active == clients && load.window_end.active == clients &&
           load.window_end.refused == 0 && load.window_end.cut == 0 && load.window_end.connect_failures == 0 &&
           load.window_end.pending == 0;
  }
};

}  // namespace mdcast::app::bench
