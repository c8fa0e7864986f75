#include "ring_file.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "mdcast/core/error.hpp"
#include "mdcast/core/process.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace detail {
namespace {

const char* file_type(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a regular file";
}

bool exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

// Why a ring may be missing when the feed is there: its channels are rings
// of their own (mdcast-NAME.0.ring ...), or a feed of one channel was asked
// for channel rings. "" when neither. The rings may be in either directory.
std::string channels_hint(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string file = path.substr(slash + 1);
  if (file.size() < 13 || file.compare(0, 7, "mdcast-") != 0 || file.compare(file.size() - 5, 5, ".ring") != 0) return {};
  const std::string stem = file.substr(7, file.size() - 12);  // NAME or NAME.K
  std::vector<std::string> dirs{path.substr(0, slash), "/dev/hugepages", "/dev/shm"};
  for (const std::string& d : dirs) {
    uint32_t n = 0;
    while (n < 64 && exists(fmt::format("{}/mdcast-{}.{}.ring", d, stem, n))) ++n;
    if (n)
      return fmt::format(": feed '{}' has channels ({} rings mdcast-{}.0.ring ... in {}): subscribe with --channels {} "
                         "(feed.channels), as it was published",
                         stem, n, stem, d, n);
    const auto dot = stem.rfind('.');
    if (dot != std::string::npos && exists(fmt::format("{}/mdcast-{}.ring", d, stem.substr(0, dot))))
      return fmt::format(": feed '{}' has one channel (ring mdcast-{}.ring in {}): subscribe without --channels",
                         stem.substr(0, dot), stem.substr(0, dot), d);
  }
  return {};
}

// A number, all digits, that fits: "1000" yes, "10a", "" no.
std::optional<unsigned long> number(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::strtoul(s.c_str(), nullptr, 10);
}

std::string who(uid_t uid) { return fmt::format("uid {} ({})", uid, user_name(uid)); }

}  // namespace

std::string user_name(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* res = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_name;
  return "no such user";
}

gid_t group_id(const std::string& group) {
  if (const auto n = number(group)) return static_cast<gid_t>(*n);
  std::vector<char> buf(65536);
  struct group gr {};
  struct group* res = nullptr;
  if (::getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &res) == 0 && res) return res->gr_gid;
  fail("shm group '{}' is not a group on this host (see `getent group`); name the group whose members may read "
       "the ring, or leave shm.group empty for a ring only this user reads",
       group);
}

void clear_leftover(const std::string& path, uid_t me, bool target) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    // Not there, or in a place this user cannot search (creating it there
    // fails with its own message).
    if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) return;
    fail_errno("cannot inspect {}", path);
  }
  if (!target && (st.st_uid != me || !S_ISREG(st.st_mode))) return;
  // Another user's file is theirs, whatever it holds: never used, never
  // removed (in sticky /dev/shm we could not, and must not try).
  if (st.st_uid != me)
    fail("shm ring {} already exists and belongs to {}, not to this publisher ({}): another user's file is never "
         "used or removed. If that user runs a feed of this name, pick another --name; otherwise ask them or root "
         "to remove it (rm {})",
         path, who(st.st_uid), who(me), path);
  if (!S_ISREG(st.st_mode))
    fail("{} exists and is {}, not a ring: remove it (rm {}) or pick another --name", path, file_type(st.st_mode), path);
  UniqueFd old(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (old) {
    RingHeaderView h{};
    if (::pread(old.get(), &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && is_ring_magic(h.magic) &&
        process_alive(h.writer_pid, h.writer_start) && h.writer_pid != static_cast<uint64_t>(::getpid()))
      fail("shm ring {} is in use by a live publisher (pid {}); pick another --name", path, h.writer_pid);
  }
  // A dead writer's leftover (ours: we checked), or one we are replacing.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail_errno("cannot remove the old shm ring {}", path);
}

MappedMemory create_ring_file(const std::string& path, const std::string& dir, uint64_t bytes,
                              std::optional<gid_t> group) {
  check_room(bytes, dir, "shm ring " + path,
             "lower shm.slots (--shm-slots), shm.max_datagram or shm.readers, or put the ring elsewhere (shm.dir)");
  // Exclusive: a file someone created in between is never ours to use.
  UniqueFd f(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!f) {
    struct stat st;
    if (errno == EEXIST && ::lstat(path.c_str(), &st) == 0)
      fail("shm ring {} was created by {} while this publisher was starting: not ours to use; find out who "
           "races for this name, or pick another --name",
           path, who(st.st_uid));
    fail_errno("cannot create shm ring {}", path);
  }
  try {
    if (group && ::fchown(f.get(), static_cast<uid_t>(-1), *group) != 0)
      fail_errno("cannot give shm ring {} to group {}: this user must be a member of it (usermod -aG), or leave "
                 "shm.group empty",
                 path, *group);
    // Explicit, whatever the umask: owner read-write, the group read, no one else.
    if (::fchmod(f.get(), group ? 0640 : 0600) != 0) fail_errno("cannot set the mode of shm ring {}", path);
    reserve_file(f.get(), bytes, "shm ring " + path);
    return MappedMemory::shared(f.get(), bytes, true, "shm ring " + path);
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
}

CheckedFile open_checked(const std::string& path, uid_t owner) {
  CheckedFile c;
  // No link followed; O_NONBLOCK so that a FIFO planted here cannot hang us.
  constexpr int kFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  c.fd = UniqueFd(::open(path.c_str(), O_RDWR | kFlags));
  c.writable = c.fd.valid();
  if (!c.writable) c.fd = UniqueFd(::open(path.c_str(), O_RDONLY | kFlags));
  if (!c.fd) {
    if (errno == ENOENT) {
      if (const std::string hint = channels_hint(path); !hint.empty()) fail("shm ring {} not found{}", path, hint);
      fail("shm ring {} not found: is a publisher running with the same --name (and on this host)?", path);
    }
    if (errno == ELOOP) fail("{} is a symbolic link, not a ring a publisher created: refusing it", path);
    fail_errno("cannot open shm ring {}", path);
  }
  if (::fstat(c.fd.get(), &c.st) != 0) fail_errno("cannot stat shm ring {}", path);
  if (!S_ISREG(c.st.st_mode)) fail("{} is {}, not a ring a publisher created: refusing it", path, file_type(c.st.st_mode));
  if (c.st.st_uid != owner)
    fail("shm ring {} belongs to {}, not to the publisher's user {}: anyone can create files here, so it is not "
         "trusted. If the publisher runs as that user, set shm.publisher_user={}; otherwise ask its owner or root "
         "to remove it (rm {})",
         path, who(c.st.st_uid), who(owner), c.st.st_uid, path);
  if ((c.st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    fail("shm ring {} is writable by {} (mode {:04o}): anyone there could forge what it says, so it is not trusted; "
         "publishers create rings 0600 (or 0640 with shm.group)",
         path, (c.st.st_mode & S_IWOTH) ? "everyone" : "its group", c.st.st_mode & 07777);
  return c;
}

}  // namespace detail

std::string ring_path(const std::string& dir, const std::string& name) { return dir + "/mdcast-" + name + ".ring"; }

std::string find_ring(const std::string& name, const std::string& dir, std::optional<uid_t> owner) {
  if (!dir.empty()) return ring_path(dir, name);
  const uid_t want = owner ? *owner : ::geteuid();
  std::string any;
  for (const char* d : {"/dev/hugepages", "/dev/shm"}) {
    const std::string p = ring_path(d, name);
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) continue;
    // Someone else's file in the first place must not hide the real ring in the second.
    if (st.st_uid == want) return p;
    if (any.empty()) any = p;
  }
  return any.empty() ? ring_path("/dev/shm", name) : any;
}

uid_t ring_owner_uid(const std::string& user) {
  if (user.empty()) return ::geteuid();
  if (const auto n = detail::number(user)) return static_cast<uid_t>(*n);
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* res = nullptr;
  if (::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &res) == 0 && res) return res->pw_uid;
  fail("shm publisher user '{}' is not a user on this host (see `getent passwd`): name the user the publisher "
       "runs as, or leave shm.publisher_user empty for this user",
       user);
}

}  // namespace mdcast::media::shm
