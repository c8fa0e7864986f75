// The shm ring's reader slots: as many as the publisher sized the ring for
// (1024 by default), each a reader that can block; a reader in any slot is
// woken; a reader killed while blocked gives its slot and its sleeper bit
// back; the size is checked against the cap before anything is allocated.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

std::string unique_name(const char* what) { return fmt::format("ut-rd-{}-{}", what, ::getpid()); }

// Small records: a thousand readers each map the whole ring.
RingOptions opts(const std::string& name, size_t readers = kDefaultReaderSlots) {
  RingOptions o;
  o.name = name;
  o.dir = "/dev/shm";
  o.slots = 16;
  o.max_datagram = 256;
  o.huge_pages = false;
  o.readers = readers;
  return o;
}

// The file's reader region as the writer sees it, mapped apart (read-only).
struct Region {
  MappedMemory map;
  size_t slots = 0;
  explicit Region(const RingReader& r) : slots(r.header().reader_slots) {
    UniqueFd fd(::open(r.path().c_str(), O_RDONLY | O_CLOEXEC));
    map = MappedMemory::shared(fd.get(), r.header().reader_bytes, false, "test", r.header().reader_offset);
  }
  [[nodiscard]] uint64_t sleeper_word(size_t w) const { return word(map.data() + 8 * w).load(); }
  [[nodiscard]] uint32_t pid(size_t i) const {
    return reinterpret_cast<const std::atomic<uint32_t>*>(map.data() + reader_slots_offset(slots) + i * kReaderSlotSize)
        ->load();
  }
};

TEST(ShmReaders, ThousandAndTwentyFourReadersAttachEachWithASlot) {
  RingWriter w(opts(unique_name("1024")), 1, 1, "unix:@x");
  std::vector<std::unique_ptr<RingReader>> readers;
  std::set<int> slots;
  for (size_t i = 0; i < kDefaultReaderSlots; ++i) {
    readers.push_back(std::make_unique<RingReader>(w.path()));
    ASSERT_TRUE(readers.back()->can_block()) << "reader " << i;
    slots.insert(readers.back()->slot());
  }
  EXPECT_EQ(slots.size(), kDefaultReaderSlots) << "every reader has a slot of its own";
  EXPECT_EQ(readers[0]->header().reader_slots, kDefaultReaderSlots);
  // One more reads all the same, but backs off instead of blocking.
  RingReader extra(w.path());
  EXPECT_FALSE(extra.can_block());
  EXPECT_FALSE(extra.wait(kNsPerMs));
  std::byte in[64]{}, out[256];
  size_t len = 0;
  w.write({in, sizeof in}, 1);
  EXPECT_EQ(extra.read(out, len), RingReader::Read::kOk);
  EXPECT_EQ(readers[1000]->read(out, len), RingReader::Read::kOk);
  // A slot given back is taken again.
  const int freed = readers[500]->slot();
  readers[500].reset();
  RingReader next(w.path());
  EXPECT_EQ(next.slot(), freed);
}

TEST(ShmReaders, TheNumberOfSlotsComesFromTheOptions) {
  {
    RingWriter w(opts(unique_name("4096"), 4096), 1, 1, "unix:@x");
    RingReader r(w.path());
    EXPECT_EQ(r.header().reader_slots, 4096u);
    EXPECT_EQ(r.header().reader_bytes, reader_region_bytes(4096));
    EXPECT_EQ(r.header().reader_offset % 4096, 0u);
    EXPECT_TRUE(r.can_block());
  }
  {
    RingWriter w(opts(unique_name("none"), 0), 1, 1, "unix:@x");
    RingReader r(w.path());
    EXPECT_EQ(r.header().reader_slots, 0u);
    EXPECT_FALSE(r.can_block()) << "no slots: every reader backs off";
  }
  // 16 bytes and a bit each: the default costs 16 KiB and a line of bits.
  EXPECT_EQ(reader_region_bytes(kDefaultReaderSlots), 128u + 16u * 1024u);
}

// Version 5 moved the reader slots out of the header page: a version 4 ring
// (64 slots at a fixed place) is refused with both numbers (protocol.md §7).
TEST(ShmReaders, AVersionFourRingIsRefusedWithBothVersions) {
  const std::string path = ring_path("/dev/shm", unique_name("v4"));
  {
    RingHeaderView h{};
    h.magic = (kRingMagic & kRingMagicStemMask) | (uint64_t{'4'} << 56);
    h.version = 4;
    h.header_size = kRingHeaderSize;
    UniqueFd f(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(f.valid());
    std::vector<std::byte> page(2 * kRingHeaderSize);
    std::memcpy(page.data(), &h, sizeof h);
    ASSERT_EQ(::write(f.get(), page.data(), page.size()), static_cast<ssize_t>(page.size()));
  }
  try {
    RingReader r(path);
    ADD_FAILURE() << "a version 4 ring was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layout version 4, this mdcast reads version 5"), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(ShmReaders, TooManySlotsOrTooLittleRoomIsRefusedWithTheNumbers) {
  try {
    RingWriter w(opts(unique_name("toomany"), kMaxReaderSlots + 1), 1, 1, "unix:@x");
    FAIL() << "more slots than a ring can have were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxReaderSlots + 1)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxReaderSlots)), std::string::npos) << e.what();
  }
  RingOptions o = opts(unique_name("cap"), kMaxReaderSlots);
  o.max_bytes = 512u << 10;  // the ring fits, its 65536 reader slots (1 MiB) do not
  try {
    RingWriter w(o, 1, 1, "unix:@x");
    FAIL() << "a ring over shm.max_bytes was created";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("65536 reader slots"), std::string::npos) << what;
    EXPECT_NE(what.find("shm.readers"), std::string::npos) << what;
    EXPECT_NE(what.find("shm.max_bytes"), std::string::npos) << what;
  }
}

// A reader in the last group of slots blocks and is woken by a write, also
// after the writer's upkeep cleared summary bits of groups gone quiet.
TEST(ShmReaders, AReaderInAHighSlotIsWoken) {
  RingWriter w(opts(unique_name("wake")), 1, 1, "unix:@x");
  std::vector<std::unique_ptr<RingReader>> others;
  for (size_t i = 0; i < 1000; ++i) others.push_back(std::make_unique<RingReader>(w.path()));
  RingReader r(w.path());
  ASSERT_EQ(r.slot(), 1000);
  std::byte in[64]{}, out[256];
  size_t len = 0;
  for (uint64_t seq = 1; seq <= 2; ++seq) {
    std::atomic<uint64_t> woke_after{0};
    std::thread t([&] {
      const uint64_t t0 = monotonic_ns();
      size_t n = 0;
      while (r.read(out, n) != RingReader::Read::kOk) r.wait(60 * kNsPerSec);
      woke_after.store(monotonic_ns() - t0);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    w.write({in, sizeof in}, seq);
    t.join();
    EXPECT_LT(woke_after.load(), 30 * kNsPerSec) << "woken by the write, not by the 60 s timeout";
    // Upkeep with nobody asleep clears the summary; the next sleeper sets it again.
    w.touch(seq * kNsPerSec);
  }
  (void)len;
}

TEST(ShmReaders, AReaderKilledWhileBlockedGivesItsSlotAndBitBack) {
  RingWriter w(opts(unique_name("dead"), 128), 1, 1, "unix:@x");
  std::vector<std::unique_ptr<RingReader>> before;
  for (size_t i = 0; i < 70; ++i) before.push_back(std::make_unique<RingReader>(w.path()));
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RingReader r(w.path());
    const char slot = static_cast<char>(r.slot());
    if (::write(pipefd[1], &slot, 1) != 1) _exit(2);
    for (;;) r.wait(60 * kNsPerSec);
  }
  char slot = -1;
  ASSERT_EQ(::read(pipefd[0], &slot, 1), 1);
  ASSERT_EQ(slot, 70);
  RingReader probe(w.path());
  Region region(probe);
  // Asleep: its bit is set (it sets it before it sleeps).
  const uint64_t bit = uint64_t{1} << (70 % 64);
  for (int i = 0; i < 1000 && (region.sleeper_word(1) & bit) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_NE(region.sleeper_word(1) & bit, 0u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(region.pid(70), static_cast<uint32_t>(child)) << "a killed reader leaves its slot behind";
  // The upkeep gives both back within a few rounds (sleepers first).
  uint64_t now = kNsPerSec;
  for (int i = 0; i < 64 && (region.pid(70) != 0 || (region.sleeper_word(1) & bit) != 0); ++i) w.touch(now += 100 * kNsPerMs);
  EXPECT_EQ(region.sleeper_word(1) & bit, 0u);
  EXPECT_EQ(region.pid(70), 0u);
  RingReader next(w.path());
  EXPECT_EQ(next.slot(), 70) << "the dead reader's slot is free again";
  ::close(pipefd[0]);
  ::close(pipefd[1]);
}

}  // namespace
}  // namespace mdcast::media::shm
