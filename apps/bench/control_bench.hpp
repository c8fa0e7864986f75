// `mdcast bench --control-clients N` (the control section): the feed at a
// fixed rate with one latency subscriber, run twice in one invocation, with
// no control clients and with N (control_load.hpp, one process, connected
// and active throughout the measured window), so the publish path's
// latency and CPU per message can be set side by side. The runs themselves
// are the bench's usual ones (processes.hpp, feed_children.hpp); this file
// is the load process's body and what the section reports.
#pragma once

#include <string>
#include <vector>

#include "control_figures.hpp"
#include "measure/json_writer.hpp"
#include "medium.hpp"
#include "plan.hpp"
#include "settings.hpp"

namespace mdcast::app::bench {

struct RunBoard;
struct Rep;
class Summary;

// The load process of a run: connects spec.control_clients clients to the
// publisher's control address on the board, says ready once all are
// settled (or after 10 s, with what it has), keeps them active until the
// window has closed, then leaves. Its figures go to the board.
int control_load_child(const Settings& s, const RunSpec& spec, RunBoard& b);

// The section's numbers under "control.<clients>.*" and the ratios under
// "control.ratio.*" (summary.cpp calls this).
void collect_control_metrics(Rep& rep);
// Its table in the text report.
void print_control(const Summary& S, const std::vector<Rep>& reps, const Plan& plan);
// What to warn of: clients not admitted throughout, a load that shares the
// latency subscriber's CPU.
void control_warnings(const Rep& rep, size_t ncpus, std::vector<std::string>& out);
// The figures of one run, as a JSON object.
void json_control(JsonWriter& j, const ControlRunFigures& f);

}  // namespace mdcast::app::bench
