// What every `mdcast` subcommand returns (docs/operations.md, "Exit codes"):
// a script or a supervisor tells "fix the command line" from "fix the host"
// from "the feed lost data" without reading the log.
#pragma once

namespace mdcast::app::exit_code {

inline constexpr int kOk = 0;
// The feed was not delivered whole: a subscriber lost data, its books differ,
// its publisher went away before the end, `verify` found a difference.
inline constexpr int kDataLost = 1;
// The command line or a settings file is wrong (unknown flag, bad value).
inline constexpr int kUsage = 2;
// The host or the fabric refused: no device, no memory, a ring or socket
// that cannot be created, a peer that cannot be reached; `doctor` found an
// error in the host's setup.
inline constexpr int kSetup = 3;
// Stopped by SIGINT or SIGTERM before the end (128 + SIGINT, as shells do).
inline constexpr int kInterrupted = 130;
// Its output's reader went away (`| head`): stdout or stderr is a closed
// pipe. 128 + SIGPIPE, what a shell reports for a command SIGPIPE ended.
inline constexpr int kOutputClosed = 141;

}  // namespace mdcast::app::exit_code
