// Rings that are owned: a publisher never uses or removes another user's
// file, creates its own 0600 (0640 for a group), and refuses a ring it
// cannot back (cap, free space, memory) with the numbers; a reader believes
// nothing in a file before its owner, mode and size check out. What needs
// another uid or a mount namespace runs as root and skips otherwise.
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/resources.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

constexpr uid_t kNobody = 65534;

std::string unique_name(const char* what) { return fmt::format("ut-trust-{}-{}", what, ::getpid()); }
std::string shm_path(const std::string& name) { return ring_path("/dev/shm", name); }

RingOptions opts(const std::string& name, size_t slots = 64, size_t max_datagram = 1024) {
  RingOptions o;
  o.name = name;
  o.dir = "/dev/shm";
  o.slots = slots;
  o.max_datagram = max_datagram;
  o.huge_pages = false;
  return o;
}

// The message of the Error fn throws ("" and a test failure if none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}
#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << "in: " << (text)

// Removes a file at the end of a test, whatever happened.
struct Unlink {
  std::string path;
  ~Unlink() { ::unlink(path.c_str()); }
};

void write_file(const std::string& path, const std::string& bytes, mode_t mode = 0600) {
  UniqueFd f(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, mode));
  ASSERT_TRUE(f.valid()) << path;
  ASSERT_EQ(::write(f.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ASSERT_EQ(::fchmod(f.get(), mode), 0);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(ShmTrust, AnotherUsersFileIsNeverUsedOrRemoved) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a file as another user";
  const std::string name = unique_name("squat");
  const std::string path = shm_path(name);
  Unlink cleanup{path};
  // A squatter's file that even looks like a ring of a live writer.
  std::string planted;
  {
    RingWriter real(opts(name), 1, 1, "unix:@squatter");
    planted = read_file(path);
  }  // (a writer unlinks its file when it goes)
  ASSERT_FALSE(planted.empty());
  write_file(path, planted, 0644);
  ASSERT_EQ(::chown(path.c_str(), kNobody, kNobody), 0);
  const std::string before = read_file(path);

  const std::string pub = error_of([&] { RingWriter w(opts(name), 2, 1, "unix:@x"); });
  EXPECT_HAS(pub, path);
  EXPECT_HAS(pub, "belongs to uid 65534");
  EXPECT_HAS(pub, "never used or removed");
  EXPECT_HAS(pub, "rm " + path);
  const std::string sub = error_of([&] { RingReader r(path); });
  EXPECT_HAS(sub, path);
  EXPECT_HAS(sub, "belongs to uid 65534");
  EXPECT_HAS(sub, "shm.publisher_user");

  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0) << "the other user's file was removed";
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_EQ(read_file(path), before) << "the other user's file was changed";
  // A reader told to trust that user reads it (it is a well-formed ring).
  RingReader trusting(path, kNobody);
  EXPECT_EQ(trusting.owner(), kNobody);
}

TEST(ShmTrust, FindRingPrefersTheTrustedOwnersFile) {
  const std::string name = unique_name("find");
  // With no file anywhere: the /dev/shm path, for the "not found" message.
  EXPECT_EQ(find_ring(name), shm_path(name));
  RingWriter w(opts(name), 1, 1, "unix:@x");
  EXPECT_EQ(find_ring(name), w.path());
  EXPECT_EQ(find_ring(name, {}, ::geteuid() + 1), w.path()) << "the only candidate, refused later by the reader";
}

TEST(ShmTrust, RingsAreCreatedForTheirOwnerOnly) {
  const std::string name = unique_name("mode");
  const mode_t old = ::umask(0);  // whatever the umask, the ring is 0600
  RingWriter w(opts(name), 1, 1, "unix:@x");
  ::umask(old);
  struct stat st;
  ASSERT_EQ(::stat(w.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, ::geteuid());
}

TEST(ShmTrust, AGroupRingIsReadableByTheGroupAndWritableByNoOne) {
  // This process's own group: works for any user (a member of it).
  const std::string name = unique_name("group");
  RingOptions o = opts(name);
  o.group = std::to_string(::getegid());
  const mode_t old = ::umask(077);  // a umask that would strip the group's read
  RingWriter w(o, 1, 1, "unix:@x");
  ::umask(old);
  struct stat st;
  ASSERT_EQ(::stat(w.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, ::getegid());
  RingReader r(w.path());
  EXPECT_TRUE(r.can_block()) << "the owner itself still may use the header";

  EXPECT_HAS(error_of([&] {
               RingOptions bad = opts(unique_name("nogroup"));
               bad.group = "no-such-group-mdcast";
               RingWriter x(bad, 1, 1, "unix:@x");
             }),
             "is not a group on this host");
}

// A reader in the ring's group, as another user: reads it read-only; one
// outside the group cannot open it at all.
TEST(ShmTrust, AMemberOfTheGroupReadsAsAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a reader as another user";
  const std::string name = unique_name("member");
  RingOptions o = opts(name);
  o.group = std::to_string(kNobody);
  RingWriter w(o, 1, 1, "unix:@x");
  std::byte in[64]{std::byte{42}};
  w.write({in, sizeof in}, 1);
  auto as_nobody = [&](bool in_group) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const gid_t groups[] = {kNobody};
      const gid_t gid = in_group ? kNobody : kNobody - 1;
      if (::setgroups(in_group ? 1 : 0, groups) != 0 || ::setresgid(gid, gid, gid) != 0 ||
          ::setresuid(kNobody, kNobody, kNobody) != 0)
        _exit(10);
      try {
        RingReader r(w.path(), 0);  // the publisher's user: root
        if (r.can_block()) _exit(11);  // the header is not the group's to write
        std::byte out[1024];
        size_t len = 0;
        _exit(r.read(out, len) == RingReader::Read::kOk && len == 64 && out[0] == std::byte{42} ? 0 : 12);
      } catch (const Error& e) {
        _exit(std::string(e.what()).find("Permission denied") != std::string::npos ? 20 : 21);
      }
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  EXPECT_EQ(as_nobody(true), 0);
  EXPECT_EQ(as_nobody(false), 20);
}

TEST(ShmTrust, ARingWritableByOthersIsNotTrusted) {
  RingWriter w(opts(unique_name("writable")), 1, 1, "unix:@x");
  ASSERT_EQ(::chmod(w.path().c_str(), 0660), 0);
  const std::string g = error_of([&] { RingReader r(w.path()); });
  EXPECT_HAS(g, "writable by its group (mode 0660)");
  EXPECT_HAS(g, w.path());
  ASSERT_EQ(::chmod(w.path().c_str(), 0602), 0);
  EXPECT_HAS(error_of([&] { RingReader r(w.path()); }), "writable by everyone (mode 0602)");
}

TEST(ShmTrust, AFileShorterThanItsHeaderSaysIsRefusedBeforeMapping) {
  RingWriter w(opts(unique_name("whole")), 1, 1, "unix:@x");
  const std::string path = shm_path(unique_name("short"));
  Unlink cleanup{path};
  // The real header, cut short: reading the ring would run off the file's end (SIGBUS).
  write_file(path, read_file(w.path()).substr(0, 8192));
  RingReader whole(w.path());
  const std::string e = error_of([&] { RingReader r(path); });
  EXPECT_HAS(e, "is 8192 bytes");
  EXPECT_HAS(e, fmt::format("its header says {}", whole.header().file_bytes));
  EXPECT_HAS(e, "truncated");
}

TEST(ShmTrust, LinksAndFifosAreNotRings) {
  const std::string link = shm_path(unique_name("link"));
  Unlink c1{link};
  ASSERT_EQ(::symlink("/etc/passwd", link.c_str()), 0);
  EXPECT_HAS(error_of([&] { RingReader r(link); }), "symbolic link");
  EXPECT_HAS(error_of([&] { RingWriter w(opts(unique_name("link")), 1, 1, "unix:@x"); }), "is a symbolic link");
  const std::string fifo = shm_path(unique_name("fifo"));
  Unlink c2{fifo};
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opened without blocking (no writer will ever come), then refused.
  EXPECT_HAS(error_of([&] { RingReader r(fifo); }), "is a FIFO");
}

TEST(ShmTrust, ADeadWritersLeftoverOfOursIsReplaced) {
  const std::string name = unique_name("dead");
  const pid_t pid = ::fork();
  if (pid == 0) {
    RingWriter* w = new RingWriter(opts(name), 1, 1, "unix:@x");  // never destroyed: the file stays
    (void)w;
    _exit(0);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_EQ(::access(shm_path(name).c_str(), F_OK), 0) << "the child left no ring";
  RingWriter w(opts(name), 2, 1, "unix:@y");
  RingReader r(w.path());
  EXPECT_EQ(r.header().session, 2u);
  EXPECT_EQ(r.header().writer_pid, static_cast<uint64_t>(::getpid()));
}

TEST(ShmTrust, SessionsAreSixtyFourBitsInTheHeader) {
  RingWriter w(opts(unique_name("session")), uint64_t{0x1234'5678'9abc'def0}, 1, "unix:@x");
  RingReader r(w.path());
  EXPECT_EQ(r.header().session, uint64_t{0x1234'5678'9abc'def0});
  EXPECT_EQ(r.header().version, 5u);
}

TEST(ShmTrust, ARingOverTheCapIsRefusedBeforeAnythingIsAllocated) {
  const std::string name = unique_name("cap");
  RingOptions o = opts(name, 16777216, 4032);  // --shm-slots 16777216: 64 GiB of records, 72 GiB with the index
  const std::string e = error_of([&] { RingWriter w(o, 1, 1, "unix:@x"); });
  EXPECT_HAS(e, "72 GiB");
  EXPECT_HAS(e, "16777216 records of 4096 bytes");
  EXPECT_HAS(e, "more than shm.max_bytes (4 GiB)");
  EXPECT_HAS(e, "--shm-slots");
  EXPECT_NE(::access(shm_path(name).c_str(), F_OK), 0) << "a refused ring left a file";
  o.slots = 1024;
  o.max_bytes = 1u << 20;
  EXPECT_HAS(error_of([&] { RingWriter w(o, 1, 1, "unix:@x"); }), "more than shm.max_bytes (1 MiB)");
}

TEST(ShmTrust, ARingLargerThanTheHostHasIsRefusedWithTheNumbers) {
  const auto avail = memory_available_bytes();
  const auto fs = filesystem_space("/dev/shm");
  if (!avail || !fs) GTEST_SKIP() << "no MemAvailable in /proc/meminfo or no /dev/shm";
  const std::string name = unique_name("huge");
  const uint64_t room = std::min(*avail, fs->free_bytes);
  RingOptions o = opts(name, static_cast<size_t>(room / 4096 + 4096), 4032);
  o.max_bytes = UINT64_MAX;  // past the cap: the host's own limits answer
  const std::string e = error_of([&] { RingWriter w(o, 1, 1, "unix:@x"); });
  EXPECT_HAS(e, "needs ");
  EXPECT_TRUE(e.find("of memory available (MemAvailable") != std::string::npos ||
              e.find("/dev/shm has ") != std::string::npos)
      << e;
  EXPECT_HAS(e, "shm.slots");
  EXPECT_NE(::access(shm_path(name).c_str(), F_OK), 0) << "a refused ring left a file";
}

TEST(ShmTrust, TheResourceHelpersSayWhatThereIs) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(2u << 20), "2 MiB");
  EXPECT_EQ(format_bytes(uint64_t{64} << 30), "64 GiB");
  EXPECT_EQ(format_bytes((uint64_t{3} << 30) / 2), "1.5 GiB");
  EXPECT_EQ(format_bytes((uint64_t{2} << 30) - 1), "1.9 GiB") << "rounded down: never reads as enough";
  const std::string meminfo = fmt::format("/tmp/mdcast-ut-meminfo-{}", ::getpid());
  Unlink cleanup{meminfo};
  write_file(meminfo, "MemTotal:       1000 kB\nMemFree:         500 kB\nMemAvailable:    2048 kB\n");
  EXPECT_EQ(memory_available_bytes(meminfo), uint64_t{2048} * 1024);
  write_file(meminfo, "MemTotal:       1000 kB\n");
  EXPECT_FALSE(memory_available_bytes(meminfo));
  const auto fs = filesystem_space("/dev/shm");
  ASSERT_TRUE(fs);
  EXPECT_TRUE(fs->memory_backed);
}

// In a child with its own mount namespace: a 2 MiB tmpfs, a 64 MiB ring.
// Returns the child's verdict: 0 both refusals as expected, 77 no namespace.
int in_tiny_tmpfs(const std::function<int(const std::string&)>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    char dir[] = "/tmp/mdcast-ut-tiny-XXXXXX";
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        !::mkdtemp(dir))
      _exit(77);
    if (::mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
      ::rmdir(dir);
      _exit(77);
    }
    const int rc = body(dir);
    ::umount(dir);
    ::rmdir(dir);
    _exit(rc);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(ShmTrust, AFullFileSystemIsASetupErrorNotSigbus) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs in a private mount namespace";
  const int rc = in_tiny_tmpfs([](const std::string& dir) {
    // The publisher asks first: the numbers, and no file left.
    RingOptions o = opts("tiny", 16384, 4032);
    o.dir = dir;
    try {
      RingWriter w(o, 1, 1, "unix:@x");
      return 1;
    } catch (const Error& e) {
      const std::string m = e.what();
      if (m.find("needs 72.2 MiB") == std::string::npos || m.find(dir + " has 2 MiB free") == std::string::npos) {
        std::fprintf(stderr, "unexpected: %s\n", m.c_str());
        return 2;
      }
    }
    if (::access(ring_path(dir, "tiny").c_str(), F_OK) == 0) return 3;
    // The space is also reserved, not assumed: fallocate is what stands
    // between a race for the space and SIGBUS.
    const std::string f = dir + "/reserve";
    UniqueFd fd(::open(f.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600));
    try {
      reserve_file(fd.get(), 64u << 20, f);
      return 4;
    } catch (const Error& e) {
      const std::string m = e.what();
      if (m.find(f + " needs 64 MiB") == std::string::npos || m.find("no space left") == std::string::npos) {
        std::fprintf(stderr, "unexpected: %s\n", m.c_str());
        return 5;
      }
    }
    return 0;
  });
  if (rc == 77) GTEST_SKIP() << "no private mount namespace here (unshare/mount refused)";
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace mdcast::media::shm
