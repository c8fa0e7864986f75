// What `mdcast doctor` checks for a feed, from the settings it would run
// with: the medium they name, its paths, sizes and addresses, and the memory
// the verbs medium would register.
#pragma once

#include "mdcast/doctor/doctor.hpp"
#include "mdcast/settings/settings.hpp"

namespace mdcast::settings {

// Options::media included.
doctor::Options doctor_options(const Settings& s);

// What the media of this build tell the doctor (doctor::MediumFacts), from
// the list (settings/media.hpp): for Options made by hand, a test's on a
// fake tree.
doctor::MediumFacts doctor_media();

}  // namespace mdcast::settings
