// The shm ring's seqlock: a reader never hands out a torn datagram, sees
// every datagram in order or an explicit lap, heartbeats after the data they
// follow, and can block until data comes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/history/retransmit_log.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

std::string unique_name(const char* what) { return fmt::format("ut-{}-{}", what, ::getpid()); }

RingOptions opts(const std::string& name, size_t slots, size_t max_datagram = 1024) {
  RingOptions o;
  o.name = name;
  o.dir = "/dev/shm";
  o.slots = slots;
  o.max_datagram = max_datagram;
  o.huge_pages = false;
  return o;
}

// Datagram p: 8 bytes of p, then bytes derived from p; length varies with p.
size_t fill(std::byte* b, uint64_t p, size_t max) {
  const size_t len = 8 + (p * 37) % (max - 8);
  std::memcpy(b, &p, 8);
  for (size_t i = 8; i < len; ++i) b[i] = std::byte{static_cast<uint8_t>(p * 131 + i)};
  return len;
}
bool consistent(const std::byte* b, size_t len, size_t max, uint64_t& p) {
  if (len < 8) return false;
  std::memcpy(&p, b, 8);
  if (len != 8 + (p * 37) % (max - 8)) return false;
  for (size_t i = 8; i < len; ++i)
    if (b[i] != std::byte{static_cast<uint8_t>(p * 131 + i)}) return false;
  return true;
}

TEST(ShmRing, InOrderRoundTrip) {
  RingWriter w(opts(unique_name("rt"), 64), 7, 3, "unix:@x");
  RingReader r(w.path());
  EXPECT_EQ(r.header().session, 7u);
  EXPECT_EQ(r.header().channel, 3u);
  EXPECT_STREQ(r.header().control, "unix:@x");
  std::byte in[1024], out[1024];
  size_t len = 0;
  EXPECT_EQ(r.read(out, len), RingReader::Read::kEmpty);
  for (uint64_t p = 0; p < 50; ++p) w.write({in, fill(in, p, 1024)}, p + 1);
  for (uint64_t p = 0; p < 50; ++p) {
    ASSERT_EQ(r.read(out, len), RingReader::Read::kOk);
    uint64_t got;
    ASSERT_TRUE(consistent(out, len, 1024, got));
    EXPECT_EQ(got, p);
  }
  EXPECT_EQ(r.read(out, len), RingReader::Read::kEmpty);
}

TEST(ShmRing, LappedReaderSkipsAheadAndCountsWhatItLost) {
  RingWriter w(opts(unique_name("lap"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  std::byte in[1024], out[1024];
  for (uint64_t p = 0; p < 1000; ++p) w.write({in, fill(in, p, 1024)}, p + 1);
  size_t len = 0;
  ASSERT_EQ(r.read(out, len), RingReader::Read::kLapped);
  EXPECT_GT(r.lapped(), 800u);
  uint64_t prev = 0, n = 0;
  for (;;) {
    const auto res = r.read(out, len);
    if (res == RingReader::Read::kEmpty) break;
    ASSERT_EQ(res, RingReader::Read::kOk);
    uint64_t got;
    ASSERT_TRUE(consistent(out, len, 1024, got));
    if (n++) {
      EXPECT_EQ(got, prev + 1);
    }
    prev = got;
  }
  EXPECT_EQ(prev, 999u);
  EXPECT_EQ(r.lapped() + n, 1000u);
  // Records are packed: datagrams of 8..1023 bytes, about 520 on average,
  // in room for 64 of the largest; the reader resumed an eighth of a lap
  // ahead of being reclaimed and still read more than 64.
  EXPECT_GT(n, 64u);
}

// The reader steps to its next slot by compare-and-wrap: across laps of a
// ring whose slot count is no power of two, after a lap that moved it, and
// after a move of the reader, it must read every datagram where it is.
TEST(ShmRing, ReaderCursorFollowsEveryMoveAndWrap) {
  RingWriter w(opts(unique_name("wrap"), 37), 1, 1, "unix:@x");
  ASSERT_EQ(w.slots(), 37u);
  std::optional<RingReader> r(std::in_place, w.path());
  std::byte in[1024], out[1024];
  size_t len = 0;
  uint64_t seq = 0, got = 0;
  auto read_one = [&](uint64_t want) {
    ASSERT_EQ(r->read(out, len), RingReader::Read::kOk) << "at " << want;
    ASSERT_TRUE(consistent(out, len, 1024, got));
    EXPECT_EQ(got + 1, want);
  };
  // Five laps, the reader a few datagrams behind.
  for (int i = 0; i < 5 * 37; ++i) {
    w.write({in, fill(in, seq, 1024)}, seq + 1);
    ++seq;
    if (seq > 5) read_one(r->position());
    if (::testing::Test::HasFatalFailure()) return;
  }
  while (r->position() <= seq) read_one(r->position());
  EXPECT_EQ(r->read(out, len), RingReader::Read::kEmpty);
  // Lapped: the cursor jumps (through the slow path) and steps on from there.
  for (int i = 0; i < 3 * 37 + 5; ++i, ++seq) w.write({in, fill(in, seq, 1024)}, seq + 1);
  const uint64_t before = r->position();
  ASSERT_EQ(r->read(out, len), RingReader::Read::kLapped);
  EXPECT_EQ(r->lapped(), r->position() - before);
  while (r->position() <= seq - 10) read_one(r->position());
  // Moved: the new owner carries on at the same place.
  RingReader moved(std::move(*r));
  r.reset();
  r.emplace(std::move(moved));
  while (r->position() <= seq) read_one(r->position());
  EXPECT_EQ(r->read(out, len), RingReader::Read::kEmpty);
  EXPECT_EQ(r->implausible(), 0u);
}

// A writer laps a reader constantly; every datagram the reader accepts must
// be whole, and together with what it was told it lost, account for all.
TEST(ShmRing, ConcurrentWriterNeverYieldsATornDatagram) {
  RingWriter w(opts(unique_name("race"), 32, 512), 1, 1, "unix:@x");
  RingReader r(w.path());
  constexpr uint64_t kTotal = 300'000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    std::byte in[512];
    for (uint64_t p = 0; p < kTotal; ++p) w.write({in, fill(in, p, 512)}, p + 1);
    done.store(true);
  });
  std::byte out[512];
  uint64_t ok = 0, torn = 0, last = 0;
  bool any = false;
  for (;;) {
    size_t len = 0;
    const auto res = r.read(out, len);
    if (res == RingReader::Read::kOk) {
      uint64_t p = 0;
      if (!consistent(out, len, 512, p)) ++torn;
      if (any && p <= last) ++torn;  // out of order would be as bad
      last = p;
      any = true;
      ++ok;
    } else if (res == RingReader::Read::kEmpty && done.load()) {
      if (r.position() == w.position()) break;
    }
  }
  writer.join();
  EXPECT_EQ(torn, 0u);
  EXPECT_EQ(ok + r.lapped(), kTotal);
  EXPECT_GT(ok, 0u);
}

TEST(ShmRing, BlockingReaderWakesOnWrite) {
  RingWriter w(opts(unique_name("wait"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  ASSERT_TRUE(r.can_block());
  std::atomic<uint64_t> woke_after{0};
  std::thread t([&] {
    const uint64_t t0 = monotonic_ns();
    std::byte out[1024];
    size_t len;
    while (r.read(out, len) != RingReader::Read::kOk) r.wait(5 * kNsPerSec);
    woke_after.store(monotonic_ns() - t0);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::byte in[64]{};
  w.write({in, 64}, 1);
  t.join();
  // Woken by the write, not by the 5 s timeout.
  EXPECT_LT(woke_after.load(), 2 * kNsPerSec);
  EXPECT_GE(woke_after.load(), 40 * kNsPerMs);
}

// The engine builds datagrams in the ring itself (single copy): what it
// commits in place is what readers read, and retransmits read the same bytes.
TEST(ShmRing, InPlaceDatagramsAreReadAsCommitted) {
  RingWriter w(opts(unique_name("inplace"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  history::RetransmitLog ring(w.ring_memory(), 512);  // adopts the writer's term log
  EXPECT_EQ(ring.layout(), history::RetransmitLog::Layout::kTerm);
  EXPECT_EQ(ring.slot_size(), history::TermLog::record_size_for(1024));
  EXPECT_EQ(ring.slots(), 64u);
  std::byte out[1024];
  size_t len = 0;
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    std::byte* p = ring.claim(seq);
    const size_t n = fill(p, seq, 512);
    ring.commit(seq, static_cast<uint16_t>(n));
    ASSERT_TRUE(w.holds(ring.get(seq)));
    w.publish(seq);
    ASSERT_EQ(r.read(out, len), RingReader::Read::kOk);
    uint64_t got;
    ASSERT_TRUE(consistent(out, len, 512, got));
    EXPECT_EQ(got, seq);
    EXPECT_EQ(std::memcmp(out, ring.get(seq).data(), len), 0);
  }
  EXPECT_EQ(r.read(out, len), RingReader::Read::kEmpty);
}

// Heartbeats travel in their own lane but never overtake the data they
// follow: a reader gets every datagram written before a heartbeat first.
TEST(ShmRing, HeartbeatsComeAfterTheDataTheyFollow) {
  RingWriter w(opts(unique_name("lane"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  std::byte in[1024], out[1024];
  size_t len = 0;
  for (uint64_t p = 0; p < 10; ++p) w.write({in, fill(in, p, 1024)}, p + 1);
  const std::byte hb[8] = {std::byte{0xee}};
  w.write_unsequenced({hb, sizeof hb});
  w.write({in, fill(in, 10, 1024)}, 11);
  std::vector<size_t> lens;
  for (;;) {
    const auto res = r.read(out, len);
    if (res == RingReader::Read::kEmpty) break;
    ASSERT_EQ(res, RingReader::Read::kOk);
    lens.push_back(out[0] == std::byte{0xee} && len == sizeof hb ? 0 : len);
  }
  ASSERT_EQ(lens.size(), 12u);
  for (size_t i = 0; i < 10; ++i) EXPECT_NE(lens[i], 0u) << i;
  // The heartbeat after the ten it follows (the eleventh may come before or after it).
  EXPECT_TRUE(lens[10] == 0 || lens[11] == 0);
  EXPECT_EQ(r.position(), 12u);
}

// A reader far behind on heartbeats (the lane lapped) resumes at the newest.
TEST(ShmRing, LappedLaneResumesAtTheNewestHeartbeat) {
  RingWriter w(opts(unique_name("lanelap"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  std::byte hb[16] = {};
  for (uint64_t i = 0; i < 3 * kLaneSlots; ++i) {
    std::memcpy(hb, &i, 8);
    w.write_unsequenced({hb, sizeof hb});
  }
  std::byte out[1024];
  size_t len = 0;
  uint64_t got = 0, n = 0;
  for (int k = 0; k < 10; ++k)
    if (r.read(out, len) == RingReader::Read::kOk) {
      std::memcpy(&got, out, 8);
      ++n;
    }
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(got, 3 * kLaneSlots - 1);
}

TEST(ShmRing, RefusesALiveWritersNameAndReplacesADeadOnes) {
  const std::string name = unique_name("owner");
  RingWriter w(opts(name, 64), 1, 1, "unix:@x");
  // A second writer in another process must be refused while this one lives.
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      RingWriter w2(opts(name, 64), 2, 1, "unix:@y");
      _exit(0);
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("in use by a live publisher") != std::string::npos ? 42 : 1);
    }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_EQ(WEXITSTATUS(st), 42);
}

TEST(ShmRing, ClearErrorsForMissingAndForeignFiles) {
  const std::string missing = "/dev/shm/mdcast-" + unique_name("missing") + ".ring";
  try {
    RingReader r(missing);
    FAIL() << "attached to a missing ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
  const std::string bogus = "/dev/shm/mdcast-" + unique_name("bogus") + ".ring";
  {
    std::ofstream f(bogus);
    f << std::string(8192, 'x');
  }
  try {
    RingReader r(bogus);
    FAIL() << "attached to a file that is not a ring";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an mdcast ring"), std::string::npos) << e.what();
  }
  ::unlink(bogus.c_str());
}

TEST(ShmRing, WriterUnlinksOnDestruction) {
  std::string path;
  {
    RingWriter w(opts(unique_name("gone"), 64), 1, 1, "unix:@x");
    path = w.path();
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
}

}  // namespace
}  // namespace mdcast::media::shm
