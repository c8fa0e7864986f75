// `mdcast doctor` (doctor.cpp): the host and fabric judged against the settings.
#pragma once

#include <string>

#include "settings.hpp"

namespace mdcast::app {

struct DoctorArgs {
  bool json = false;
  std::string root;  // read sysfs/procfs under this tree instead of "/" (tests; no libibverbs queries then)
};
int run_doctor(const Settings& s, const DoctorArgs& a);

}  // namespace mdcast::app
