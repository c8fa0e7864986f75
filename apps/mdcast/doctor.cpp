// mdcast doctor: the library's checks (mdcast/doctor/doctor.hpp) against the feed's settings, as
// text or JSON; exit 0 with warnings, kSetup (3) when any finding is an error.
#include "commands.hpp"

#include <fmt/format.h>

#include "exit_codes.hpp"
#include "mdcast/settings/doctor.hpp"
#include "settings.hpp"

namespace mdcast::app {

int run_doctor(const Settings& s, const DoctorArgs& a) {
  doctor::Options o = doctor_options(s);
  if (!a.root.empty()) {  // a recorded /sys and /proc: nothing is asked of the devices
    o.root = a.root;
    o.query_verbs = false;
  }
  const doctor::Report r = doctor::diagnose(o);
  fmt::print("{}", a.json ? doctor::format_json(r) : doctor::format_text(r));
  return r.has_errors() ? exit_code::kSetup : exit_code::kOk;
}

}  // namespace mdcast::app
