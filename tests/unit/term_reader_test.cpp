// TermReader: a reader's cursor over a term log, in the same process as its
// writer here (the shm tests run it across a shared file). It must step
// exactly as the writer places records, say "not yet" for a record being
// written, notice a lap, and move through the index only to records that
// agree with it.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "mdcast/core/bytes.hpp"
#include "mdcast/history/term_log.hpp"
#include "mdcast/history/term_reader.hpp"
#include "ring_support.hpp"

namespace mdcast::test {
namespace {

using history::TermLog;
using history::TermReader;
using Mark = TermReader::Mark;

constexpr size_t kMax = 1024;
constexpr size_t kRecord = TermLog::record_size_for(kMax);

struct Log {
  explicit Log(size_t data) : data_bytes(data), mem(std::make_unique<std::byte[]>(TermLog::memory_for(data) + 64)) {
    auto* p = mem.get();
    p += (64 - reinterpret_cast<uintptr_t>(p) % 64) % 64;
    span = {p, TermLog::memory_for(data)};
    std::memset(span.data(), 0, span.size());
    TermLog::format(span, data, kMax);
    writer = TermLog(span, kMax);
  }
  TermReader reader() const { return TermReader(span.data(), data_bytes, kMax); }
  uint64_t index(uint64_t seq) const { return load_le<uint64_t>(span.data() + 64 + 8 * (seq % (data_bytes / 64))); }
  size_t data_bytes;
  std::unique_ptr<std::byte[]> mem;
  std::span<std::byte> span;
  TermLog writer;
};

uint16_t len_of(uint64_t seq) { return static_cast<uint16_t>(40 + (seq * 97) % (kMax - 40)); }

// Reads the record at the cursor as a reader does; false if it is not seq's.
bool read_one(TermReader& r, std::vector<std::byte>& out) {
  if (r.mark() != Mark::kCommitted || r.length() > r.max_datagram()) return false;
  out.assign(r.payload(), r.payload() + r.length());
  if (!r.held()) return false;
  r.advance(out.size());
  return true;
}

TEST(TermReader, StepsWhereTheWriterPlacesRecords) {
  Log l(16 * kRecord);
  TermReader r = l.reader();
  EXPECT_EQ(r.seq(), 1u);
  EXPECT_EQ(r.position(), 0u);
  EXPECT_EQ(r.mark(), Mark::kPending) << "nothing written: not yet";
  std::vector<std::byte> got;
  for (uint64_t s = 1; s <= 500; ++s) {
    std::byte* p = l.writer.claim(s);
    EXPECT_EQ(r.mark(), Mark::kPending) << "claimed, being written: not yet";
    for (uint16_t i = 0; i < len_of(s); ++i) p[i] = std::byte(static_cast<uint8_t>(s * 31 + i));
    l.writer.commit(s, len_of(s));
    EXPECT_EQ(r.position(), l.index(s)) << s;
    ASSERT_TRUE(read_one(r, got)) << s;
    ASSERT_TRUE(holds(l.writer, s, static_cast<uint16_t>(got.size())));
    EXPECT_EQ(std::memcmp(got.data(), l.writer.get(s).data(), got.size()), 0);
    EXPECT_EQ(r.seq(), s + 1);
    EXPECT_EQ(r.mark(), Mark::kPending) << "the writer zeroed where s + 1 goes";
  }
}

TEST(TermReader, NoticesALapAndResumesWhereTheRecordsProve) {
  Log l(16 * kRecord);
  TermReader r = l.reader();
  for (uint64_t s = 1; s <= 200; ++s) put(l.writer, s, len_of(s));
  EXPECT_TRUE(r.reclaimed_by(r.horizon())) << "record 1 is long gone";
  EXPECT_FALSE(r.held());
  EXPECT_EQ(r.newest_indexed(), 200u);
  EXPECT_TRUE(r.reached(200));
  EXPECT_FALSE(r.reached(201)) << "not written yet";
  uint64_t seq = 0, pos = 0;
  ASSERT_TRUE(r.resume_point(r.seq() + 1, 200, seq, pos));
  EXPECT_GT(seq, 1u);
  EXPECT_EQ(pos, l.index(seq));
  EXPECT_TRUE(holds(l.writer, seq, len_of(seq))) << "resumes on a record the writer still holds";
  const uint64_t keep = 16 * kRecord - 16 * kRecord / 8;
  EXPECT_GE(pos + keep, r.horizon()) << "at least an eighth of a lap from being reclaimed";
  uint64_t before = 0;
  EXPECT_FALSE(r.locate(seq - 1, before) && before + keep >= r.horizon()) << "and the first such record";
  r.seek(seq, pos);
  std::vector<std::byte> got;
  for (uint64_t s = seq; s <= 200; ++s) {
    ASSERT_TRUE(read_one(r, got)) << s;
    EXPECT_EQ(got.size(), len_of(s));
  }
  EXPECT_EQ(r.mark(), Mark::kPending);
}

TEST(TermReader, SeeksAfterARecordTheIndexAndItsHeaderAgreeOn) {
  Log l(16 * kRecord);
  for (uint64_t s = 1; s <= 10; ++s) put(l.writer, s, len_of(s));
  TermReader r = l.reader();
  ASSERT_TRUE(r.seek_after(7));
  EXPECT_EQ(r.seq(), 8u);
  EXPECT_EQ(r.position(), l.index(8));
  uint64_t pos = 0;
  EXPECT_TRUE(r.locate(3, pos));
  EXPECT_EQ(pos, l.index(3));
  EXPECT_FALSE(r.locate(11, pos)) << "not committed";
  ASSERT_TRUE(r.seek_after(0));
  EXPECT_EQ(r.seq(), 1u);
  EXPECT_EQ(r.position(), 0u);

  // Forged index entries are not followed: off the 64-byte grid, past the
  // horizon, or onto another sequence's record.
  const size_t entries = TermLog::index_entries(16 * kRecord);
  auto forge = [&](uint64_t seq, uint64_t v) { store_le<uint64_t>(l.span.data() + 64 + 8 * (seq % entries), v); };
  forge(5, l.index(5) + 8);
  EXPECT_FALSE(r.locate(5, pos));
  EXPECT_FALSE(r.seek_after(5));
  EXPECT_EQ(r.seq(), 1u) << "unmoved";
  forge(5, uint64_t{1} << 40);
  EXPECT_FALSE(r.locate(5, pos));
  EXPECT_FALSE(r.reached(5));
  forge(5, l.index(6));
  EXPECT_FALSE(r.locate(5, pos));
  EXPECT_FALSE(r.reached(5));
  // A record claiming a length no datagram has is not located either.
  store_le<uint32_t>(l.span.data() + TermLog::data_offset(16 * kRecord) + l.index(4) + 8, kMax + 1);
  EXPECT_FALSE(r.locate(4, pos));
  EXPECT_EQ(r.newest_indexed(), 10u);
}

}  // namespace
}  // namespace mdcast::test
