// The shm medium's rings as `mdcast stat --clean` judges them
// (media/left_rings.hpp): their names and who wrote them, from the header
// alone, so that a clean never maps another process's ring.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "mdcast/core/fd.hpp"
#include "mdcast/media/left_rings.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

std::optional<LeftRing> read_left_ring(const std::string& path) {
  LeftRing r;
  r.path = path;
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd || ::fstat(fd.get(), &r.st) != 0 || !S_ISREG(r.st.st_mode)) return std::nullopt;
  RingHeaderView h{};
  if (::pread(fd.get(), &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h)) return std::nullopt;
  if (!is_ring_magic(h.magic)) return std::nullopt;
  r.version = static_cast<uint32_t>((h.magic >> 56) - '0');
  r.complete = h.magic == kRingMagic && h.version == kRingLayoutVersion;
  r.writer_pid = h.writer_pid;
  r.writer_start = h.writer_start;
  const std::string a(h.control, strnlen(h.control, sizeof h.control));
  // "unix:@name" is abstract (nothing on disk); "unix:/path" leaves a file.
  if (a.rfind("unix:/", 0) == 0) r.control_socket = a.substr(5);
  return r;
}

}  // namespace

LeftRings left_rings() {
  LeftRings l;
  l.what = "shm ring";
  l.layout_version = kRingLayoutVersion;
  l.path = ring_path;
  // ring_path's form, "mdcast-<name>.ring", with a name of at least one character.
  l.named = [](std::string_view n) {
    return n.size() >= 13 && n.substr(0, 7) == "mdcast-" && n.substr(n.size() - 5) == ".ring";
  };
  l.read = read_left_ring;
  return l;
}

}  // namespace mdcast::media::shm
