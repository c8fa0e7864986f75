// Is a process that left its pid somewhere (a ring header, a counters file)
// still the one that wrote it? A pid alone is not enough: pids are reused, so
// its start time is recorded beside it and compared.
#pragma once

#include <cstdint>

namespace mdcast {

// /proc/<pid>/stat start time (clock ticks since boot), 0 if the process is gone.
[[nodiscard]] uint64_t process_start_time(uint64_t pid) noexcept;
[[nodiscard]] bool process_alive(uint64_t pid, uint64_t start_time) noexcept;

}  // namespace mdcast
