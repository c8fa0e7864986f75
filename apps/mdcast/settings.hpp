// The command line's view of the library's settings (mdcast/settings/): the
// subcommands, the bench included, name them unqualified.
#pragma once

#include "mdcast/settings/media.hpp"
#include "mdcast/settings/plans.hpp"
#include "mdcast/settings/settings.hpp"
#include "mdcast/settings/values.hpp"

namespace mdcast::app {
using namespace mdcast::settings;  // NOLINT(google-build-using-namespace): one vocabulary for apps/
}  // namespace mdcast::app
