// No single word moves a reader far: a forged or corrupt position (the
// published word, a slot's sequence, the lane position) is counted and never
// followed; the reader goes only as far as the slots prove, never ends up
// where nothing will be written, and keeps reading what the writer writes.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/media/shm/shm_ring.hpp"

namespace mdcast::media::shm {
namespace {

std::string unique_name(const char* what) { return fmt::format("ut-pos-{}-{}", what, ::getpid()); }

RingOptions opts(const std::string& name, size_t slots) {
  RingOptions o;
  o.name = name;
  o.dir = "/dev/shm";
  o.slots = slots;
  o.max_datagram = 1024;
  o.huge_pages = false;
  return o;
}

// The file, mapped writable a second time: what a process of the same user
// that went wrong (or a bit flip) could do to the shared words.
class Forger {
 public:
  explicit Forger(const std::string& path) {
    UniqueFd f(::open(path.c_str(), O_RDWR));
    EXPECT_TRUE(f.valid());
    struct stat st;
    ::fstat(f.get(), &st);
    size_ = static_cast<size_t>(st.st_size);
    base_ = static_cast<std::byte*>(::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, f.get(), 0));
    EXPECT_NE(base_, MAP_FAILED);
    std::memcpy(&h_, base_, sizeof h_);
  }
  ~Forger() { ::munmap(base_, size_); }
  void published(uint64_t v) { word(base_ + kPublishedOffset).store(v); }
  void lane_position(uint64_t v) { word(base_ + kLanePosOffset).store(v); }
  // The sequence word of the record at byte position pos.
  void record_seq_at(uint64_t pos, uint64_t v) { word(data() + pos % h_.data_bytes).store(v); }
  // ... of record seq, where the index says it is.
  void record_seq(uint64_t seq, uint64_t v) { record_seq_at(indexed(seq), v); }
  void index_entry(uint64_t seq, uint64_t pos) { word(index() + 8 * (seq % h_.index_entries)).store(pos); }
  [[nodiscard]] uint64_t indexed(uint64_t seq) const { return word(index() + 8 * (seq % h_.index_entries)).load(); }
  void horizon(uint64_t v) { word(base_ + h_.ring_offset).store(v); }
  [[nodiscard]] uint64_t horizon() const { return word(base_ + h_.ring_offset).load(); }
  [[nodiscard]] std::byte* data() const { return base_ + h_.ring_offset + h_.data_offset; }
  [[nodiscard]] const RingHeaderView& header() const { return h_; }

 private:
  [[nodiscard]] std::byte* index() const { return base_ + h_.ring_offset + history::TermLog::kControlSize; }

  std::byte* base_ = nullptr;
  size_t size_ = 0;
  RingHeaderView h_{};
};

// Datagram p: its number in the first 8 bytes.
void put(RingWriter& w, uint64_t seq) {
  std::byte d[64]{};
  std::memcpy(d, &seq, 8);
  w.write({d, sizeof d}, seq);
}
// Reads until empty (a few times over: a read that repositions on the lane
// says empty once); returns the datagrams read (their first 8 bytes).
std::vector<uint64_t> drain(RingReader& r) {
  std::vector<uint64_t> got;
  std::byte out[1024];
  size_t len = 0;
  int empty = 0;
  for (int guard = 0; guard < 100000 && empty < 3; ++guard) {
    const auto res = r.read(out, len);
    empty = res == RingReader::Read::kEmpty ? empty + 1 : 0;
    if (res != RingReader::Read::kOk) continue;
    uint64_t v = 0;
    std::memcpy(&v, out, 8);
    got.push_back(v);
  }
  return got;
}

constexpr uint64_t kFar = uint64_t{1} << 40;

// The attack: a write position of 2^40 while a subscriber starts. It used to
// start 10^12 slots ahead and read nothing, ever.
TEST(ShmPositions, AForgedPublishedPositionDoesNotPlaceANewReader) {
  RingWriter w(opts(unique_name("seek"), 64), 1, 1, "unix:@x");
  for (uint64_t s = 1; s <= 100; ++s) put(w, s);
  Forger f(w.path());
  f.published(kFar);
  RingReader r(w.path());
  r.seek_to_writer();
  EXPECT_EQ(r.position(), 101u) << "starts after the newest datagram the slots hold";
  EXPECT_GE(r.implausible(), 1u);
  for (uint64_t s = 101; s <= 110; ++s) {
    put(w, s);
    f.published(kFar);  // kept forged: the reader does not need the word
  }
  const auto got = drain(r);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got.front(), 101u);
  EXPECT_EQ(got.back(), 110u);
}

TEST(ShmPositions, ALappedReaderSkipsOnlyAsFarAsTheSlotsProve) {
  RingWriter w(opts(unique_name("lap"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 1000; ++s) put(w, s);
  Forger f(w.path());
  f.published(kFar);
  std::byte out[1024];
  size_t len = 0;
  ASSERT_EQ(r.read(out, len), RingReader::Read::kLapped);
  // Only as far as the records prove (the newest one the index and its
  // header agree on is 1000), onto a record the writer still holds: 64-byte
  // datagrams take 128-byte records, 544 of which fit in the ring.
  EXPECT_LE(r.position(), 1000u) << "followed the forged word";
  EXPECT_GT(r.position(), 1000u - 544u) << "resumed on a record the writer reclaimed";
  EXPECT_GE(r.implausible(), 1u);
  const uint64_t resumed = r.position();
  const auto got = drain(r);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front(), resumed);
  EXPECT_EQ(got.back(), 1000u);
  EXPECT_EQ(r.lapped() + got.size(), 1000u) << "every datagram read or counted lost";
  put(w, 1001);
  EXPECT_EQ(drain(r), std::vector<uint64_t>{1001});
}

TEST(ShmPositions, ASlotWordThatDoesNotBelongIsNeverFollowed) {
  RingWriter w(opts(unique_name("slot"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 4; ++s) put(w, s);
  ASSERT_EQ(drain(r).size(), 4u);
  Forger f(w.path());
  // Where 5 will go, not yet written, a record claims sequence 8.
  f.record_seq_at(r.byte_position(), 8);
  std::byte out[1024];
  size_t len = 0;
  EXPECT_EQ(r.read(out, len), RingReader::Read::kEmpty) << "the writer is not past 5: wait for it";
  EXPECT_EQ(r.position(), 5u);
  EXPECT_EQ(r.implausible(), 1u);
  put(w, 5);  // the writer writes 5 there: read as usual
  EXPECT_EQ(drain(r), std::vector<uint64_t>{5});

  // The writer is past the corrupt slot: that datagram is lost (the engine
  // recovers it), the ones after it are read.
  for (uint64_t s = 6; s <= 10; ++s) put(w, s);
  f.record_seq(6, 7);
  EXPECT_EQ(r.read(out, len), RingReader::Read::kLapped);
  EXPECT_EQ(r.position(), 7u);
  EXPECT_EQ(r.lapped(), 1u);
  EXPECT_EQ(drain(r), (std::vector<uint64_t>{7, 8, 9, 10}));
}

TEST(ShmPositions, ALapFasterThanAnyWriterIsNeverFollowed) {
  RingWriter w(opts(unique_name("fast"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 10; ++s) put(w, s);
  ASSERT_EQ(drain(r).size(), 10u);
  for (uint64_t s = 11; s <= 20; ++s) put(w, s);
  Forger f(w.path());
  // Where 11 is, a sequence 2^50 laps of the index on: days of the fastest writer.
  f.record_seq(11, 11 + (uint64_t{1} << 50) * f.header().index_entries);
  std::byte out[1024];
  size_t len = 0;
  EXPECT_EQ(r.read(out, len), RingReader::Read::kLapped);
  EXPECT_EQ(r.position(), 12u) << "skipped the corrupt slot only";
  EXPECT_EQ(r.implausible(), 1u);
  const auto got = drain(r);
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(got.back(), 20u);
}

TEST(ShmPositions, AForgedLanePositionDoesNotLoseTheHeartbeats) {
  RingWriter w(opts(unique_name("lane"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  std::byte hb[16] = {};
  auto beat = [&](uint64_t i) {
    std::memcpy(hb, &i, 8);
    w.write_unsequenced({hb, sizeof hb});
  };
  for (uint64_t i = 0; i < 3 * kLaneSlots; ++i) beat(i);
  Forger f(w.path());
  f.lane_position(kFar);
  // Lapped on the lane with the lane position forged: resume where the
  // lane's own slots say, and get heartbeats (they used to stop for good).
  auto got = drain(r);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), 3 * kLaneSlots - 1);
  EXPECT_GE(r.implausible(), 1u);
  beat(3 * kLaneSlots);
  f.lane_position(kFar);
  EXPECT_EQ(drain(r), std::vector<uint64_t>{3 * kLaneSlots});

  // A new reader placed while the lane position is forged starts after the
  // newest heartbeat there.
  RingReader late(w.path());
  late.seek_to_writer();
  EXPECT_TRUE(drain(late).empty());
  beat(3 * kLaneSlots + 1);
  EXPECT_EQ(drain(late), std::vector<uint64_t>{3 * kLaneSlots + 1});
}

// The horizon says how far the writer may have reclaimed: forged, it must
// not make a reader skip what the writer still holds.
TEST(ShmPositions, AForgedHorizonAloneDoesNotMoveAReader) {
  RingWriter w(opts(unique_name("horizon"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 10; ++s) put(w, s);
  ASSERT_EQ(drain(r).size(), 10u);
  for (uint64_t s = 11; s <= 20; ++s) put(w, s);
  Forger f(w.path());
  const uint64_t honest = f.horizon();
  f.horizon(kFar);
  std::byte out[1024];
  size_t len = 0;
  EXPECT_EQ(r.read(out, len), RingReader::Read::kEmpty) << "no record proves a lap";
  EXPECT_EQ(r.position(), 11u);
  EXPECT_EQ(r.lapped(), 0u);
  EXPECT_EQ(r.implausible(), 1u);
  f.horizon(honest);
  const auto got = drain(r);
  ASSERT_EQ(got.size(), 10u) << "nothing lost once the word is right again";
  EXPECT_EQ(got.front(), 11u);
}

// A forged index entry (misplaced, or past the horizon) never places a
// reader: it resumes on records whose entry and header agree.
TEST(ShmPositions, AForgedIndexEntryIsNeverFollowed) {
  RingWriter w(opts(unique_name("index"), 64), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 1000; ++s) put(w, s);
  Forger f(w.path());
  f.index_entry(1000, f.indexed(1000) + 8);  // not on a record boundary
  f.index_entry(999, kFar);                  // past anything written
  std::byte out[1024];
  size_t len = 0;
  ASSERT_EQ(r.read(out, len), RingReader::Read::kLapped);
  EXPECT_LT(r.position(), 999u);
  EXPECT_GE(r.implausible(), 1u) << "the published word's entry did not back it";
  const auto got = drain(r);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), 1000u) << "read by walking the records, not by the entries";
  EXPECT_EQ(r.lapped() + got.size(), 1000u);
}

// Lapped, a reader's position can fall inside a later record, on zeros that
// look like "not yet": the horizon tells it the writer went on, so it
// resumes at once instead of waiting a lap for the bytes to change.
TEST(ShmPositions, ALappedReaderInsideALaterRecordResumes) {
  RingWriter w(opts(unique_name("inside"), 16), 1, 1, "unix:@x");
  RingReader r(w.path());
  for (uint64_t s = 1; s <= 3; ++s) put(w, s);  // 128-byte records
  ASSERT_EQ(drain(r).size(), 3u);
  EXPECT_EQ(r.byte_position(), 384u);
  // Records of 1088 bytes, zero but for the first 8 bytes: a lap and more,
  // so offset 384 lies in the payload of the newest lap's first record.
  std::byte d[1024]{};
  for (uint64_t s = 4; s <= 4 + 16 + 2; ++s) {
    std::memcpy(d, &s, 8);
    w.write({d, sizeof d}, s);
  }
  std::byte out[1024];
  size_t len = 0;
  EXPECT_EQ(r.read(out, len), RingReader::Read::kLapped);
  const auto got = drain(r);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.back(), 22u);
  EXPECT_EQ(r.implausible(), 0u) << "an honest lap";
}

TEST(ShmPositions, AnHonestRingIsNeverCalledImplausible) {
  RingWriter w(opts(unique_name("honest"), 32), 1, 1, "unix:@x");
  RingReader r(w.path());
  std::byte hb[16] = {};
  for (uint64_t s = 1; s <= 5000; ++s) {
    put(w, s);
    if (s % 7 == 0) w.write_unsequenced({hb, sizeof hb});
    if (s % 100 == 0) (void)drain(r);
    if (s % 1000 == 0) r.refresh(monotonic_ns());
  }
  (void)drain(r);
  RingReader late(w.path());
  late.seek_to_writer();
  EXPECT_EQ(late.position(), 5001u);
  EXPECT_EQ(r.implausible(), 0u);
  EXPECT_EQ(late.implausible(), 0u);
}

}  // namespace
}  // namespace mdcast::media::shm
