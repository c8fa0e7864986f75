// `mdcast record` and `mdcast replay` (docs/recording.md): a subscriber that
// writes what it is delivered into nanosecond pcap files, and a publisher
// that publishes such a recording again. A wrong argument is fail_usage()'s
// (exit_code::kUsage); everything else thrown is the host's or the file's.
#pragma once

#include <string>
#include <vector>

#include "settings.hpp"

namespace mdcast::app {

struct RecordArgs {
  std::string out;            // base name: files <out>.<n>.pcap (+ .idx)
  std::string rotate_size = "0";  // "1G": next file once this one holds this much (0: never)
  std::string rotate_time = "0";  // "1h": next file once its first frame is this old (0: never)
  uint32_t index_every = 1024;
  std::string min_free;       // refuse to start with less free space than this
};
int run_record(Settings& s, const RecordArgs& a);

struct ReplayArgs {
  std::vector<std::string> files;  // recording files, or bases (<base>.0000.pcap, .0001, ...)
  std::string speed = "1";         // a multiple of the original pace, or "max"
  std::string from;                // SEQ, ISO time (2026-12-01T17:00:00.5Z) or an offset (30s)
};
int run_replay(Settings& s, const ReplayArgs& a);

}  // namespace mdcast::app
