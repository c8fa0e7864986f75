// What a dead publisher's medium leaves on disk (the shm ring: tens of MiB
// of tmpfs or huge pages), as that medium names and reads it. `mdcast stat
// --clean` (stats/clean.hpp) proves from it whose a ring is without knowing
// the medium's layout: a medium with rings gives a LeftRings (shm:
// media::shm::left_rings()), and the list of media (settings/media.hpp)
// hands it on.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mdcast::media {

// One ring, read from its header without mapping it.
struct LeftRing {
  std::string path;
  struct stat st {};
  bool complete = false;       // of the layout this build reads, and finished (its magic is written last)
  uint32_t version = 0;        // its layout version, for a ring of another mdcast
  uint64_t writer_pid = 0;
  uint64_t writer_start = 0;   // the writer's process start time (guards against pid reuse)
  std::string control_socket;  // the filesystem socket its header names; "" = none (abstract)
};

struct LeftRings {
  std::string_view what;       // "shm ring", in what a clean reports
  uint32_t layout_version = 0; // what this build reads
  // Where feed `name`'s ring is in `dir`.
  std::function<std::string(const std::string& dir, const std::string& name)> path;
  // Whether a file of this name is one of the medium's rings.
  std::function<bool(std::string_view file_name)> named;
  // The ring at path, if it is a regular file that starts like one.
  std::function<std::optional<LeftRing>(const std::string& path)> read;
};

}  // namespace mdcast::media
