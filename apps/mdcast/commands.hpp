// The subcommands of `mdcast` beyond publish/subscribe (runners.hpp).
#pragma once

#include <string>
#include <vector>

#include "mdcast/runtime/result_file.hpp"
#include "settings.hpp"

namespace mdcast::app {

struct DemoArgs {
  std::string config;                                         // --config file, handed to every child
  std::vector<std::pair<std::string, std::string>> settings;  // flags given, as (key, value)
};
int run_demo(Settings& s, const DemoArgs& a);

struct StatArgs {
  bool watch = false;
  bool all = false;
  bool clean = false;
  bool dry_run = false;       // --clean: say what would go, remove nothing
  bool json = false;          // one JSON document (per refresh with --watch)
  bool prometheus = false;    // the Prometheus text exposition format
  bool catalogue = false;     // every counter mdcast knows, as Markdown (docs/operations.md)
  bool subscribers = false;   // a publisher's table of its subscribers, a subscriber's loss report
  std::string shm_dir;        // --clean: where rings are (default /dev/hugepages and /dev/shm)
  double interval_s = 1.0;
  std::vector<uint64_t> pids;
};
int run_stat(const StatArgs& a);

// `mdcast doctor` (doctor.cpp): the host and fabric judged against the settings.
struct DoctorArgs {
  bool json = false;
  std::string root;  // read sysfs/procfs under this tree instead of "/" (tests; no libibverbs queries then)
};
int run_doctor(const Settings& s, const DoctorArgs& a);

int run_verify(const std::string& publisher_result, const std::vector<std::string>& subscriber_results,
               runtime::BookMatch match);

}  // namespace mdcast::app
