// A dead publisher's ring is found by its medium's naming and judged by its
// header as the medium reads it (CleanOptions::rings): no medium here.
#include "mdcast/stats/clean.hpp"

#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "mdcast/core/process.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {
namespace {

std::string owner_name(uid_t uid) {
  char buf[4096];
  passwd pw{};
  passwd* res = nullptr;
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return fmt::format("uid {} ({})", uid, res->pw_name);
  return fmt::format("uid {}", uid);
}

using media::LeftRing;

class Cleaner {
 public:
  explicit Cleaner(const CleanOptions& o) : o_(o), me_(::geteuid()) {}

  bool wanted(uint64_t pid) const {
    return o_.pids.empty() || std::find(o_.pids.begin(), o_.pids.end(), pid) != o_.pids.end();
  }

  void remove(const std::string& path, std::string what, uint64_t bytes, uint64_t CleanReport::*count) {
    CleanItem it{path, std::move(what), bytes, {}};
    if (!o_.dry_run && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
      it.error = fmt::format("cannot remove it: {}", std::strerror(errno));
      r_.failed = true;
      r_.kept.push_back(std::move(it));
      return;
    }
    ++(r_.*count);
    r_.bytes += bytes;
    r_.removed.push_back(std::move(it));
  }
  void keep(const std::string& path, std::string what, uint64_t bytes, std::string why) {
    r_.kept.push_back({path, std::move(what), bytes, std::move(why)});
  }

  // A ring of a dead writer, proven ours (see clean.hpp); its socket with it.
  void remove_ring(const LeftRing& ring, const std::string& what) {
    const std::string& sock = ring.control_socket;
    remove(ring.path, what, static_cast<uint64_t>(ring.st.st_size), &CleanReport::rings);
    done_.push_back(ring.path);
    struct stat st;
    if (!sock.empty() && ::lstat(sock.c_str(), &st) == 0) {
      if (S_ISSOCK(st.st_mode) && st.st_uid == ring.st.st_uid)
        remove(sock, fmt::format("control socket of dead publisher pid {}", ring.writer_pid), 0,
               &CleanReport::sockets);
      else
        keep(sock, "control socket path named by the ring", 0,
             fmt::format("not a socket of the ring's owner ({}): not what the publisher created",
                         owner_name(ring.st.st_uid)));
    }
  }

  void stale_counters(const CountersSnapshot& s) {
    const std::string what = fmt::format("counters file of {} pid {} ({})", s.role, s.pid, s.name);
    // The dead publisher's ring: its own name, proven by pid and start time.
    std::optional<LeftRing> paired;
    // A feed name is a file name component; one with a '/' (a hostile
    // file's) would make us look outside the ring directories.
    if (o_.rings.read && s.role == "publisher" && !s.name.empty() && s.name.find('/') == std::string::npos)
      for (const auto& d : o_.ring_dirs)
        if (auto r = o_.rings.read(o_.rings.path(d, s.name));
            r && r->complete && r->writer_pid == s.pid && r->writer_start == s.start_time &&
            r->st.st_uid == s.uid && !process_alive(r->writer_pid, r->writer_start))
          paired = std::move(r);
    if (s.uid != me_ && me_ != 0) {
      keep(s.path, what, s.file_bytes,
           fmt::format("belongs to {}: only that user or root can remove it", owner_name(s.uid)));
      if (paired) done_.push_back(paired->path);  // reported with its counters file; not ours either
      return;
    }
    if (s.uid != me_ && !paired) {
      keep(s.path, what, s.file_bytes,
           fmt::format("belongs to {} and nothing else proves which process made it: remove it as that user, or "
                       "rm {} once you know it is garbage",
                       owner_name(s.uid), s.path));
      return;
    }
    // Ring first: if that fails, the counters file still tells whose it was.
    if (paired) remove_ring(*paired, fmt::format("{} of dead publisher pid {} ({})", o_.rings.what, s.pid, s.name));
    remove(s.path, what, s.file_bytes, &CleanReport::counters_files);
  }

  // Rings with no counters file to pair with: the publisher died before it
  // made one, or an older `stat --clean` removed it and left the ring.
  void orphan_rings() {
    if (!o_.rings.read) return;
    for (const auto& dir : o_.ring_dirs) {
      DIR* d = ::opendir(dir.c_str());
      if (!d) continue;
      while (dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (!o_.rings.named(n)) continue;
        const std::string path = dir + "/" + n;
        if (std::find(done_.begin(), done_.end(), path) != done_.end()) continue;
        const auto r = o_.rings.read(path);
        if (!r) continue;
        const auto bytes = static_cast<uint64_t>(r->st.st_size);
        if (!r->complete) {
          if (r->st.st_uid == me_)
            keep(path, fmt::format("{} of layout version {}", o_.rings.what, r->version), bytes,
                 fmt::format("this mdcast reads layout {} and cannot tell whether its writer lives: rm {} once no "
                             "publisher of that version runs",
                             o_.rings.layout_version, path));
          continue;
        }
        if (!wanted(r->writer_pid) || process_alive(r->writer_pid, r->writer_start)) continue;
        const std::string what = fmt::format("{} of dead publisher pid {} (no counters file of it pairs with it)",
                                             o_.rings.what, r->writer_pid);
        if (r->st.st_uid != me_) {
          keep(path, what, bytes,
               fmt::format("belongs to {}, and no counters file of that publisher proves it made it: remove it as "
                           "that user",
                           owner_name(r->st.st_uid)));
          continue;
        }
        remove_ring(*r, what);
      }
      ::closedir(d);
    }
  }

  CleanReport run() {
    for (const auto& s : list_counters())
      if (!s.alive && wanted(s.pid)) stale_counters(s);
    orphan_rings();
    return std::move(r_);
  }

 private:
  const CleanOptions& o_;
  uid_t me_;
  CleanReport r_;
  std::vector<std::string> done_;  // rings already handled with their counters file
};

}  // namespace

CleanReport clean_stale(const CleanOptions& o) { return Cleaner(o).run(); }

}  // namespace mdcast::stats
