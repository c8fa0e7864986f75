// What a dead mdcast process leaves behind, and removing it: its counters
// file and, for a publisher over shm, its ring (tens of MiB of tmpfs or huge
// pages) and a filesystem control socket, if it listened on one.
//
// Anyone can create files in /dev/shm, so a file is removed only with proof
// that the dead process made it, never on its name alone:
//   counters file  stale (its pid is gone, or reused: start time differs),
//                  its header names the pid of its file name, a regular file.
//   ring           a complete ring (its magic is written last) whose header
//                  names a writer that is gone, and either
//                  - its header names the same pid and start time as a stale
//                    publisher's counters file of the same feed and owner, or
//                  - it belongs to the user running the clean (only that user
//                    or root could have made it; the same rule a publisher
//                    applies to a leftover of its own name, ring_file.hpp).
//   control socket named "unix:/path" in such a ring's header, a socket, of
//                  the ring's owner.
// Another user's files are removed (by root) only through the pairing above:
// a lone counters file or ring of another user proves nothing and is kept,
// with the reason. Files of live processes are never touched.
// The ring's naming and header are the medium's: CleanOptions::rings, from
// the list of media (settings::clean_options(), settings/media.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mdcast/media/left_rings.hpp"

namespace mdcast::stats {

struct CleanOptions {
  std::vector<uint64_t> pids;         // only these processes; empty: all
  // Where rings are looked for: the shm medium's defaults, or shm.dir.
  std::vector<std::string> ring_dirs = {"/dev/hugepages", "/dev/shm"};
  // How the medium names and reads its rings; without it (no read), only
  // counters files are cleaned.
  media::LeftRings rings;
  bool dry_run = false;                // report, remove nothing
};

struct CleanItem {
  std::string path;
  std::string what;    // "counters file of publisher pid 123 (feed1)", "shm ring of ..."
  uint64_t bytes = 0;  // the file's size
  std::string error;   // why it was kept or could not be removed; empty: removed
};

struct CleanReport {
  std::vector<CleanItem> removed;
  std::vector<CleanItem> kept;    // stale, but not proven ours, or unlink failed
  uint64_t counters_files = 0, rings = 0, sockets = 0, bytes = 0;
  bool failed = false;            // an unlink we tried failed (not a file kept on purpose)
};

// Removes what dead processes left (see above). Never throws for a single
// file: what cannot be read or removed is reported in kept.
CleanReport clean_stale(const CleanOptions& o);

}  // namespace mdcast::stats
