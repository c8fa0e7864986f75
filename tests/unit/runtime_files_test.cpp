// The runtime's result files (written, read back, compared), the child
// processes a supervisor starts (their status, log and process group, and
// that none outlives its owner) and the stop request signals make.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/stop.hpp"
#include "mdcast/runtime/child_process.hpp"
#include "mdcast/runtime/result_file.hpp"

namespace mdcast::runtime {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/mdcast-runtime-files-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

RunResult publisher() {
  RunResult r;
  r.role = "publisher";
  r.name = "f";
  r.medium = "shm";
  r.session = 0xfedcba9876543210ULL;  // above INT64_MAX: written as hex text
  r.last_sequence = 42;
  r.seconds = 1.5;
  r.messages = 1000;
  r.counters = {{"pub.messages_published", 1000}, {"ctl.snapshot_requests", 3}};
  r.books = {{1, 10, 0xaaaa}, {2, 20, 0xbbbb}};
  return r;
}

TEST(ResultFile, WhatIsWrittenIsReadBack) {
  TempDir d;
  RunResult r = publisher();
  r.latency.record(1500);
  r.latency.record(2500);
  write_result(d.path + "/p.toml", r);
  const RunResult b = read_result(d.path + "/p.toml");
  EXPECT_EQ(b.role, "publisher");
  EXPECT_EQ(b.medium, "shm");
  EXPECT_EQ(b.session, r.session);
  EXPECT_EQ(b.last_sequence, 42u);
  EXPECT_EQ(b.messages, 1000u);
  EXPECT_EQ(b.counter("ctl.snapshot_requests"), 3u);
  EXPECT_EQ(b.counter("absent", 7), 7u);
  EXPECT_EQ(b.latency.count(), 2u);
  EXPECT_EQ(b.latency.max(), r.latency.max());
  ASSERT_EQ(b.books.size(), 2u);
  EXPECT_EQ(b.books[1].checksum, 0xbbbbu);
}

TEST(ResultFile, ComparisonNamesTheFirstDifference) {
  const RunResult p = publisher();
  RunResult s = p;
  s.role = "subscriber";
  EXPECT_TRUE(compare_books(p, s).identical);
  EXPECT_EQ(compare_books(p, s).compared, 2u);

  RunResult other = s;
  other.session = 1;
  EXPECT_FALSE(compare_books(p, other).identical);
  EXPECT_NE(compare_books(p, other).detail.find("session"), std::string::npos);

  RunResult behind = s;
  behind.books[1].instrument_seq = 19;
  EXPECT_FALSE(compare_books(p, behind).identical);
  EXPECT_NE(compare_books(p, behind).detail.find("instrument 2"), std::string::npos);

  RunResult missing = s;
  missing.books.pop_back();
  EXPECT_FALSE(compare_books(p, missing).identical);
  missing.all_instruments = false;  // a filtered subscriber compares what it follows
  EXPECT_TRUE(compare_books(p, missing).identical);
}

// A conflated feed: another session, its own instrument sequences, and an
// instrument that was busy upstream but empty at the end never published.
TEST(ResultFile, StateComparisonTakesTheBooksAloneAndAMissingInstrumentAsEmpty) {
  RunResult p = publisher();
  const uint64_t empty3 = book::BookSet::status_hash(3, wire::TradingStatus::kPreOpen);
  p.books.push_back({3, 30, empty3});
  RunResult s = p;
  s.role = "subscriber";
  s.session = 7;
  s.books = {{1, 2, 0xaaaa}, {2, 3, 0xbbbb}};
  EXPECT_FALSE(compare_books(p, s, BookMatch::kContent).identical) << "the sequences are the conflated feed's";
  const BookVerdict v = compare_books(p, s, BookMatch::kState);
  EXPECT_TRUE(v.identical) << v.detail;
  EXPECT_EQ(v.compared, 3u);
  p.books.back().checksum = 0x3333;  // instrument 3 not empty at the publisher: the subscriber lacks it
  EXPECT_FALSE(compare_books(p, s, BookMatch::kState).identical);
  EXPECT_NE(compare_books(p, s, BookMatch::kState).detail.find("instrument 3"), std::string::npos);
  s.books[1].checksum = 0xbbbc;
  EXPECT_NE(compare_books(p, s, BookMatch::kState).detail.find("instrument 2"), std::string::npos);
}

// `mdcast verify`'s judgement: identical books of a subscriber that ran to
// the end of the session are the feed; identical books short of the end are
// not; different books say where.
TEST(ResultFile, AFeedIsWholeOnlyWithIdenticalBooksToTheEndOfTheSession) {
  const RunResult p = publisher();
  RunResult s = p;
  s.role = "subscriber";
  s.counters = {{"sub.gaps", 2}, {"sub.datagrams_recovered", 5}};
  const FeedVerdict whole = verify_feed(p, s);
  EXPECT_TRUE(whole.whole);
  EXPECT_EQ(whole.text, "identical (2 instruments compared; 1000 messages, 2 gaps, 5 recovered, 0 snapshots)");
  s.outcome = "publisher-lost";
  const FeedVerdict shortened = verify_feed(p, s);
  EXPECT_FALSE(shortened.whole);
  EXPECT_EQ(shortened.text.rfind("INCOMPLETE (books identical (2 instruments compared), but it ended 'publisher-lost'", 0),
            0u) << shortened.text;
  s.outcome = "ok";
  s.books[0].checksum = 1;
  const FeedVerdict differ = verify_feed(p, s);
  EXPECT_FALSE(differ.whole);
  EXPECT_EQ(differ.text.rfind("DIFFERENT (", 0), 0u) << differ.text;
  EXPECT_NE(differ.text.find("instrument 1"), std::string::npos) << differ.text;
}

TEST(ResultFile, ABrokenFileIsAnErrorNamingIt) {
  TempDir d;
  const std::string f = d.path + "/bad.toml";
  std::FILE* out = std::fopen(f.c_str(), "w");
  std::fputs("role = \"subscriber\"\n[books]\n\"1\" = [1]\n", out);
  std::fclose(out);
  try {
    (void)read_result(f);
    FAIL() << "read a broken result file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(StopOnSignals, TheFirstSignalAsksForACleanEndTheSecondForAnEndNow) {
  StopFlag stop;
  stop_on_signals(stop);
  ASSERT_EQ(::raise(SIGTERM), 0);  // the handler runs before raise() returns
  EXPECT_TRUE(stop.requested());
  EXPECT_FALSE(stop.urgent());
  ASSERT_EQ(::raise(SIGINT), 0);
  EXPECT_TRUE(stop.urgent());
  StopFlag other;  // a later call moves the signals to another flag
  stop_on_signals(other);
  ASSERT_EQ(::raise(SIGTERM), 0);
  EXPECT_TRUE(other.requested());
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

TEST(ChildProcess, ReportsItsExitItsLogAndItsOwnProcessGroup) {
  TempDir d;
  auto c = ChildProcess::spawn("/bin/sh", {"-c", "echo one; echo two >&2; cut -d' ' -f5 /proc/$$/stat; exit 3"},
                               d.path + "/c.log");
  c.wait();
  EXPECT_TRUE(c.reaped());
  EXPECT_EQ(c.status(), 3);
  const std::string tail = c.log_tail();
  EXPECT_NE(tail.find("    | one"), std::string::npos) << tail;
  EXPECT_NE(tail.find("    | two"), std::string::npos) << tail;
  // Its process group is its own pid: a terminal's Ctrl-C reaches only us.
  EXPECT_NE(tail.find("    | " + std::to_string(c.pid())), std::string::npos) << tail;
  EXPECT_EQ(c.log_tail(1), "    | " + std::to_string(c.pid()) + "\n");
}

TEST(ChildProcess, ASignalEndsItAndItsStatusSaysWhich) {
  TempDir d;
  auto c = ChildProcess::spawn("/bin/sleep", {"60"}, d.path + "/s.log");
  EXPECT_FALSE(c.reaped());
  EXPECT_EQ(c.status(), -1);
  c.signal(SIGTERM);
  c.wait();
  EXPECT_EQ(c.status(), 128 + SIGTERM);
  c.signal(SIGTERM);  // reaped: nothing is sent to a pid that may be another process's now
}

TEST(ChildProcess, NoneOutlivesItsOwner) {
  TempDir d;
  pid_t pid = -1;
  {
    auto c = ChildProcess::spawn("/bin/sleep", {"60"}, d.path + "/s.log");
    pid = c.pid();
    ChildProcess moved = std::move(c);
    EXPECT_EQ(c.pid(), -1);
    EXPECT_EQ(moved.pid(), pid);
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // killed and reaped: no such process
  EXPECT_EQ(errno, ESRCH);
}

TEST(ChildProcess, OneThatCannotStartIsAnError) {
  TempDir d;
  EXPECT_THROW(ChildProcess::spawn("/nonexistent/mdcast", {}, d.path + "/n.log"), Error);
  EXPECT_THROW(ChildProcess::spawn("/bin/true", {}, d.path + "/no/such/dir/n.log"), Error);
}

}  // namespace
}  // namespace mdcast::runtime
