// The ring's file, apart from what is in it: who may create it, whom a
// reader believes, and the space it takes. Anyone can create files in
// /dev/shm, so the file's owner and mode are the ring's credentials: a
// publisher creates its ring exclusively and never touches another user's
// file; a reader checks owner, mode and size before it reads a byte.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "mdcast/core/fd.hpp"
#include "mdcast/core/mapped_memory.hpp"

namespace mdcast::media::shm::detail {

// "alice", or "no such user" for a uid without a passwd entry.
[[nodiscard]] std::string user_name(uid_t uid);
// A group by name or number. Throws Error for an unknown group.
[[nodiscard]] gid_t group_id(const std::string& group);

// What a publisher finds at `path` before it creates its ring (`target`)
// or beside it: nothing, or a leftover of its own user whose writer is dead
// (removed). Throws Error naming path, owner and what to do for a ring of
// ours whose writer still lives and, at the target, for a file of another
// user or one that is not a regular file. Elsewhere those are left alone:
// readers look for their publisher's file, not any file of that name.
void clear_leftover(const std::string& path, uid_t me, bool target);

// Creates `path` exclusively (mode 0600; 0640 and the group when given),
// reserves `bytes` for it on its file system and maps it, populated.
// Refuses first when `bytes` do not fit (core/resources.hpp: free space, and
// available memory for tmpfs). Removes the file again if anything fails.
[[nodiscard]] MappedMemory create_ring_file(const std::string& path, const std::string& dir, uint64_t bytes,
                                            std::optional<gid_t> group);

// A ring file opened by a reader, checked: a regular file owned by `owner`,
// writable by no one else. `writable`: opened read-write (the reader may use
// the header's reader slots); readers of a group's ring get read-only.
struct CheckedFile {
  UniqueFd fd;
  bool writable = false;
  struct stat st {};
};
[[nodiscard]] CheckedFile open_checked(const std::string& path, uid_t owner);

}  // namespace mdcast::media::shm::detail
