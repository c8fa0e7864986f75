#include "mdcast/core/process.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mdcast {

uint64_t process_start_time(uint64_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%llu/stat", static_cast<unsigned long long>(pid));
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  // Field 22 (starttime) counts from the last ')' (the command may hold spaces).
  const char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  unsigned long long v = 0;
  int field = 2;
  for (const char* q = p + 1; *q; ++q) {
    if (*q == ' ') {
      ++field;
      if (field == 22) {
        v = std::strtoull(q + 1, nullptr, 10);
        break;
      }
    }
  }
  return v;
}

bool process_alive(uint64_t pid, uint64_t start_time) noexcept {
  if (pid == 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  return process_start_time(pid) == start_time;
}

}  // namespace mdcast
