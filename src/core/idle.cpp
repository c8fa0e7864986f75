#include "mdcast/core/idle.hpp"

#include <sys/prctl.h>

namespace mdcast {

void set_low_timer_slack() noexcept { prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); }

}  // namespace mdcast
