#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "mdcast/core/error.hpp"

#include "mdcast/feed/counters.hpp"
#include "mdcast/stats/counters_file.hpp"

namespace mdcast::stats {
namespace {

class CountersFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mdcast-ut-stat-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("MDCAST_STAT_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("MDCAST_STAT_DIR");
    std::system(("rm -rf " + dir_).c_str());
  }
  std::string dir_;
};

TEST_F(CountersFileTest, EnginesWriteInPlaceAndAReaderSeesLabelledValues) {
  CountersFile f("subscriber", "feed-x", "shm", {{"sub", feed::SubscriberCounters::kInfo}});
  auto* c = f.section<feed::SubscriberCounters>(0);
  c->gaps.add(3);
  c->messages_delivered.add(12345);
  f.set_state(ProcessState::kRunning);
  auto list = list_counters();
  ASSERT_EQ(list.size(), 1u);
  const auto& s = list[0];
  EXPECT_EQ(s.pid, static_cast<uint64_t>(::getpid()));
  EXPECT_EQ(s.role, "subscriber");
  EXPECT_EQ(s.name, "feed-x");
  EXPECT_EQ(s.medium, "shm");
  EXPECT_TRUE(s.alive);
  EXPECT_EQ(s.state, ProcessState::kRunning);
  EXPECT_EQ(s.get("sub.gaps"), 3u);
  EXPECT_EQ(s.get("sub.messages_delivered"), 12345u);
  EXPECT_EQ(s.values.size(), feed::SubscriberCounters::kCount);
}

TEST_F(CountersFileTest, AFileOfADeadProcessIsStale) {
  const pid_t pid = fork();
  if (pid == 0) {
    auto* f = new CountersFile("publisher", "dying", "shm", {{"pub", feed::PublisherCounters::kInfo}});
    (void)f;
    _exit(0);  // no destructor: the file stays, as after kill -9
  }
  int st;
  waitpid(pid, &st, 0);
  auto list = list_counters();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].pid, static_cast<uint64_t>(pid));
  EXPECT_FALSE(list[0].alive);
}

TEST_F(CountersFileTest, RemovedOnDestruction) {
  { CountersFile f("publisher", "x", "shm", {{"pub", feed::PublisherCounters::kInfo}}); }
  EXPECT_TRUE(list_counters().empty());
}

// A file that cannot be allocated (here: RLIMIT_FSIZE, which needs no
// mount; a full tmpfs is tests/system/limits.sh) is an Error naming the
// path, and no file is left: before, ftruncate made a sparse file that a
// full file system later answered with SIGBUS.
TEST_F(CountersFileTest, AFileThatCannotBeAllocatedIsRefusedAndRemoved) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
    const rlimit small{1024, 1024};
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) _exit(3);
    try {
      CountersFile f("publisher", "x", "shm", {{"pub", feed::PublisherCounters::kInfo}});
      _exit(1);
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.find("counters file " + stat_dir() + "/mdcast-") == std::string::npos) _exit(2);
    }
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "1: created anyway, 2: the error names no path, 3: setrlimit failed";
  EXPECT_TRUE(list_counters().empty());
  EXPECT_EQ(std::system(("test -z \"$(ls -A " + dir_ + ")\"").c_str()), 0) << "a file was left in " << dir_;
}

}  // namespace
}  // namespace mdcast::stats
