// What `mdcast doctor` checks for a feed, from the settings it would run
// with: the medium they name, its paths, sizes and addresses, and the memory
// the verbs medium would register.
#pragma once

#include "mdcast/doctor/doctor.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

doctor::Options doctor_options(const Settings& s);

}  // namespace mdcast::settings
