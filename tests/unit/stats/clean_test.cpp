// stat --clean's proof rules on files made here: a dead publisher's ring
// goes with its counters file, a ring of this user whose writer is gone goes
// alone, and nothing else is touched (a live writer's ring, one being
// created, one of another layout, a link, a feed name that is a path).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "mdcast/core/process.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/media/shm/shm_ring.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/clean.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {
namespace {

namespace shm = media::shm;

class CleanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mdcast-ut-clean-XXXXXX";
    dir_ = mkdtemp(tmpl);
    rings_ = dir_ + "/rings";
    ::mkdir(rings_.c_str(), 0700);
    ::setenv("MDCAST_STAT_DIR", dir_.c_str(), 1);
    opts_ = settings::clean_options();
    opts_.ring_dirs = {rings_};
  }
  void TearDown() override {
    ::unsetenv("MDCAST_STAT_DIR");
    std::system(("rm -rf " + dir_).c_str());
  }
  // A ring file as a publisher writes it: header only, `extra` bytes after.
  std::string ring(const std::string& name, uint64_t pid, uint64_t start, uint64_t magic = shm::kRingMagic,
                   const std::string& control = "unix:@x") {
    shm::RingHeaderView h{};
    h.magic = magic;
    h.version = shm::kRingLayoutVersion;
    h.writer_pid = pid;
    h.writer_start = start;
    std::strncpy(h.control, control.c_str(), sizeof h.control - 1);
    const std::string path = shm::ring_path(rings_, name);
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f << std::string(8192, '\0');
    return path;
  }
  static bool exists(const std::string& p) {
    struct stat st;
    return ::lstat(p.c_str(), &st) == 0;
  }
  std::string dir_, rings_;
  CleanOptions opts_;
};

// A pid that is surely gone: a child that has exited and been reaped.
uint64_t dead_pid() {
  const pid_t p = fork();
  if (p == 0) _exit(0);
  int st;
  waitpid(p, &st, 0);
  return static_cast<uint64_t>(p);
}

TEST_F(CleanTest, ADeadPublishersRingGoesWithItsCountersFile) {
  // Its counters file, made by a child that then dies without removing it.
  const pid_t child = fork();
  if (child == 0) {
    auto* f = new CountersFile("publisher", "feedA", "shm", {{"pub", feed::PublisherCounters::kInfo}});
    (void)f;
    const uint64_t me = static_cast<uint64_t>(::getpid());
    ring("feedA", me, process_start_time(me));
    _exit(0);  // no destructor: the files stay, as after kill -9
  }
  int st;
  waitpid(child, &st, 0);
  const std::string stat_file = dir_ + "/mdcast-" + std::to_string(child) + ".stat";
  const std::string ring_file = shm::ring_path(rings_, "feedA");
  ASSERT_TRUE(exists(stat_file) && exists(ring_file));
  // A live publisher's ring, of another feed, beside it.
  const uint64_t me = static_cast<uint64_t>(::getpid());
  const std::string live = ring("feedB", me, process_start_time(me));

  opts_.dry_run = true;
  auto r = clean_stale(opts_);
  EXPECT_EQ(r.rings, 1u);
  EXPECT_TRUE(exists(ring_file));
  opts_.dry_run = false;
  r = clean_stale(opts_);
  EXPECT_EQ(r.counters_files, 1u);
  EXPECT_EQ(r.rings, 1u);
  EXPECT_FALSE(r.failed);
  EXPECT_FALSE(exists(stat_file));
  EXPECT_FALSE(exists(ring_file));
  EXPECT_TRUE(exists(live));
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].path, ring_file);  // the ring first: a failure leaves the counters file to tell whose it was
  EXPECT_GT(r.removed[0].bytes, 8192u);
}

TEST_F(CleanTest, AnOrphanRingOfThisUserGoesAndItsFilesystemSocketWithIt) {
  const std::string sock = rings_ + "/ctl.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(fd);
  const std::string orphan = ring("gone", dead_pid(), 1, shm::kRingMagic, "unix:" + sock);
  const auto r = clean_stale(opts_);
  EXPECT_EQ(r.rings, 1u);
  EXPECT_EQ(r.sockets, 1u);
  EXPECT_FALSE(exists(orphan));
  EXPECT_FALSE(exists(sock));
}

TEST_F(CleanTest, NothingElseIsTouched) {
  const uint64_t me = static_cast<uint64_t>(::getpid());
  const std::string live = ring("live", me, process_start_time(me));
  const std::string creating = ring("creating", dead_pid(), 1, 0);  // magic not written yet
  const std::string old = ring("old", dead_pid(), 1, (shm::kRingMagic & shm::kRingMagicStemMask) | (uint64_t{'2'} << 56));
  const std::string plain = rings_ + "/mdcast-text.ring";
  std::ofstream(plain) << "not a ring";
  // A link to a dead writer's ring elsewhere: the link is not the ring's
  // file, and what it points to is outside the ring directories.
  const std::string elsewhere = ring("elsewhere", dead_pid(), 1);
  const std::string target = dir_ + "/elsewhere.ring";
  ASSERT_EQ(::rename(elsewhere.c_str(), target.c_str()), 0);
  const std::string link = rings_ + "/mdcast-link.ring";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  const auto r = clean_stale(opts_);
  EXPECT_EQ(r.rings, 0u);
  EXPECT_TRUE(exists(live) && exists(creating) && exists(old) && exists(plain) && exists(link) && exists(target));
  ASSERT_EQ(r.kept.size(), 1u);  // the old layout, with what to do
  EXPECT_EQ(r.kept[0].path, old);
  EXPECT_NE(r.kept[0].error.find("layout"), std::string::npos);
}

TEST_F(CleanTest, OnlyTheNamedPidsAreCleaned) {
  const uint64_t a = dead_pid(), b = dead_pid();
  const std::string ra = ring("a", a, 1), rb = ring("b", b, 1);
  opts_.pids = {a};
  const auto r = clean_stale(opts_);
  EXPECT_EQ(r.rings, 1u);
  EXPECT_FALSE(exists(ra));
  EXPECT_TRUE(exists(rb));
}

TEST_F(CleanTest, AFeedNameThatIsAPathLeadsNowhere) {
  // A counters file names feed "x/inner": its ring would be looked for at
  // rings/mdcast-x/inner.ring, below the ring directory; only the counters
  // file goes.
  const pid_t child = fork();
  if (child == 0) {
    new CountersFile("publisher", "x/inner", "shm", {{"pub", feed::PublisherCounters::kInfo}});
    _exit(0);
  }
  int st;
  waitpid(child, &st, 0);
  const auto snap = read_counters(dir_ + "/mdcast-" + std::to_string(child) + ".stat");
  ASSERT_EQ(::mkdir((rings_ + "/mdcast-x").c_str(), 0700), 0);
  const std::string inner = rings_ + "/mdcast-x/inner.ring";
  shm::RingHeaderView h{};
  h.magic = shm::kRingMagic;
  h.version = shm::kRingLayoutVersion;
  h.writer_pid = snap.pid;
  h.writer_start = snap.start_time;
  std::ofstream(inner, std::ios::binary).write(reinterpret_cast<const char*>(&h), sizeof h);
  const auto r = clean_stale(opts_);
  EXPECT_EQ(r.counters_files, 1u);
  EXPECT_EQ(r.rings, 0u);
  EXPECT_TRUE(exists(inner));
}

}  // namespace
}  // namespace mdcast::stats
