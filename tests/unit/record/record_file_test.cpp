// The recording writer and reader together: frames come back in order with
// their nanosecond timestamps, markers, index entries that point at the right
// records, rotation by size and by time, and damage - a cut file, a flipped
// byte - reported with the offset of the record, everything before intact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "mdcast/core/error.hpp"
#include "mdcast/record/reader.hpp"
#include "mdcast/record/writer.hpp"
#include "record_support.hpp"
#include "support.hpp"

using namespace mdcast;
using namespace mdcast::record;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

test::Bytes datagram(uint64_t seq) {
  return test::DatagramBuilder(seq)
      .add(wire::Message::make_add(static_cast<uint32_t>(seq % 5), seq, 1000 + static_cast<int64_t>(seq), 10,
                                   wire::Side::kBuy))
      .build();
}

WriterOptions opts(std::string base, uint64_t rotate_bytes = 0, uint64_t rotate_ns = 0, uint32_t every = 1024,
                   size_t max_datagram = 65507) {
  WriterOptions o;
  o.base = std::move(base);
  o.rotate_bytes = rotate_bytes;
  o.rotate_ns = rotate_ns;
  o.index_every = every;
  o.max_datagram = max_datagram;
  return o;
}

constexpr uint64_t kT0 = 1'780'000'000'123'456'789ull;  // nanoseconds since the epoch

std::vector<RecordedFrame> read_all(const std::string& path, ReadResult& end, std::string& error) {
  RecordingReader r(path);
  std::vector<RecordedFrame> out;
  RecordedFrame f;
  while ((end = r.next(f)) == ReadResult::kFrame) {
    f.datagram = {};  // the bytes are valid until the next call only
    out.push_back(f);
  }
  error = r.error();
  return out;
}

}  // namespace

TEST(RecordFile, RoundTripsDatagramsMarkersAndTimestamps) {
  TempDir d;
  const std::string base = (d.path / "feed").string();
  {
    RecordingWriter w(opts(base + ".pcap", 0, 0, 4));
    for (uint64_t s = 1; s <= 10; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s * 1000 + 1));
    ASSERT_TRUE(w.mark({MarkerKind::kGap, 11, 20, {}}, kT0 + 20'000));
    ASSERT_TRUE(w.write(datagram(20), 20, kT0 + 21'000));
    w.close();
    EXPECT_EQ(w.frames(), 12u);
    EXPECT_EQ(w.files(), 1u);
  }
  const std::string file = recording_file(base, 0);
  EXPECT_EQ(file, base + ".0000.pcap");
  ReadResult end;
  std::string err;
  const auto frames = read_all(file, end, err);
  EXPECT_EQ(end, ReadResult::kEnd) << err;
  ASSERT_EQ(frames.size(), 12u);
  for (uint64_t s = 1; s <= 10; ++s) {
    EXPECT_FALSE(frames[s - 1].is_marker);
    EXPECT_EQ(frames[s - 1].header.sequence, s);
    EXPECT_EQ(frames[s - 1].time_ns, kT0 + s * 1000 + 1);  // nanoseconds survive
  }
  EXPECT_TRUE(frames[10].is_marker);
  EXPECT_EQ(frames[10].marker.kind, MarkerKind::kGap);
  EXPECT_EQ(frames[10].marker.a, 11u);
  EXPECT_EQ(frames[10].marker.b, 20u);
  EXPECT_EQ(frames[11].header.sequence, 20u);

  // The index: the first datagram, then every 4th, each at its record's offset.
  const auto ix = read_index(index_file(file));
  ASSERT_TRUE(ix.has_value());
  EXPECT_EQ(ix->every, 4u);
  ASSERT_GE(ix->entries.size(), 3u);
  EXPECT_EQ(ix->entries[0].sequence, 1u);
  EXPECT_EQ(ix->entries[0].offset, 24u);  // right after the pcap file header
  for (const auto& e : ix->entries) {
    RecordingReader r(file);
    ASSERT_TRUE(r.seek(e.offset));
    RecordedFrame f;
    ASSERT_EQ(r.next(f), ReadResult::kFrame);
    EXPECT_EQ(f.header.sequence, e.sequence);
    EXPECT_EQ(f.time_ns, e.time_ns);
  }
  EXPECT_EQ(ix->at_or_before(7)->sequence, ix->entries[1].sequence);
  EXPECT_FALSE(ix->at_or_before(0).has_value());
  EXPECT_EQ(ix->at_or_before_time(kT0 + 7 * 1000 + 1)->sequence, ix->entries[1].sequence);
  EXPECT_FALSE(ix->at_or_before_time(kT0).has_value());
}

TEST(RecordFile, RotatesBySizeAndTimeIntoNumberedFiles) {
  TempDir d;
  const std::string base = (d.path / "sz").string();
  {
    RecordingWriter w(opts(base, 2000));
    for (uint64_t s = 1; s <= 100; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s));
    w.close();
    EXPECT_GE(w.files(), 3u);
  }
  uint64_t next = 1;
  for (uint32_t n = 0; fs::exists(recording_file(base, n)); ++n) {
    EXPECT_LE(fs::file_size(recording_file(base, n)), 2000u + 200u);  // rotates once past the size
    const auto ix = read_index(index_file(recording_file(base, n)));
    ASSERT_TRUE(ix && !ix->entries.empty());
    EXPECT_EQ(ix->entries[0].sequence, next);  // every file's first datagram is indexed
    ReadResult end;
    std::string err;
    for (const auto& f : read_all(recording_file(base, n), end, err)) EXPECT_EQ(f.header.sequence, next++);
    EXPECT_EQ(end, ReadResult::kEnd) << err;
  }
  EXPECT_EQ(next, 101u);

  const std::string tbase = (d.path / "tm").string();
  RecordingWriter w(opts(tbase, 0, 1'000'000'000));
  for (uint64_t s = 1; s <= 30; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s * 100'000'000));
  w.close();
  EXPECT_EQ(w.files(), 3u);  // 0.1 s apart, a file per second
}

TEST(RecordFile, CutFileReportsTheOffsetAfterEverythingBeforeIt) {
  TempDir d;
  const std::string base = (d.path / "cut").string();
  {
    RecordingWriter w(opts(base, 0, 0, 1));
    for (uint64_t s = 1; s <= 20; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s));
    w.close();
  }
  const std::string file = recording_file(base, 0);
  const auto size = fs::file_size(file);
  const auto ix = read_index(index_file(file));
  fs::resize_file(file, size - 7);
  ReadResult end;
  std::string err;
  const auto frames = read_all(file, end, err);
  EXPECT_EQ(end, ReadResult::kDamaged);
  EXPECT_EQ(frames.size(), 19u);
  // The cut record is the 20th: its offset is the last index entry's or after it.
  ASSERT_TRUE(ix && !ix->entries.empty());
  EXPECT_NE(err.find(file + ": offset " + std::to_string(ix->entries[19].offset) + ":"), std::string::npos) << err;
}

// A full disk: the recording file is /dev/full (a link in its place), the
// index a real file. The write fails when stdio's buffer first goes out; the
// writer stops, says so, and marks the index cut, so a replay can tell the
// file from a complete one even where the cut fell between two records.
TEST(RecordFile, AFailedWriteStopsTheRecordingAndMarksItsIndexCut) {
  TempDir d;
  const std::string base = (d.path / "full").string();
  std::error_code ec;
  fs::create_symlink("/dev/full", recording_file(base, 0), ec);
  if (ec || !fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here to stand for a full disk";
  RecordingWriter w(opts(base, 0, 0, 16));
  uint64_t s = 1;
  while (s < 100'000 && w.write(datagram(s), s, kT0 + s)) ++s;  // a few thousand fill the 1 MiB buffer
  ASSERT_TRUE(w.failed()) << "wrote " << s << " datagrams into /dev/full without a failure";
  EXPECT_NE(w.error().find("a write failed near offset"), std::string::npos) << w.error();
  EXPECT_FALSE(w.write(datagram(s + 1), s + 1, kT0 + s + 1));  // stays stopped
  EXPECT_THROW(w.close(), Error);
  const auto ix = read_index(index_file(recording_file(base, 0)));
  ASSERT_TRUE(ix.has_value());
  EXPECT_TRUE(ix->cut);
}

TEST(RecordFile, AnIndexIsNotCutUnlessAWriteFailed) {
  TempDir d;
  const std::string base = (d.path / "whole").string();
  RecordingWriter w(opts(base, 0, 0, 4));
  for (uint64_t s = 1; s <= 20; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s));
  w.close();
  const auto ix = read_index(index_file(recording_file(base, 0)));
  ASSERT_TRUE(ix.has_value());
  EXPECT_FALSE(ix->cut);
  EXPECT_EQ(ix->entries.size(), 5u);  // 1, 5, 9, 13, 17
}

TEST(RecordFile, FlippedByteIsCaughtByTheChecksums) {
  TempDir d;
  const std::string base = (d.path / "flip").string();
  {
    RecordingWriter w(opts(base, 0, 0, 1));
    for (uint64_t s = 1; s <= 20; ++s) ASSERT_TRUE(w.write(datagram(s), s, kT0 + s));
    w.close();
  }
  const std::string file = recording_file(base, 0);
  const auto ix = read_index(index_file(file));
  ASSERT_TRUE(ix && ix->entries.size() == 20);
  const uint64_t at = ix->entries[11].offset;  // sequence 12's record
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at + 16 + kFrameOverhead + 45));  // inside its mdcast payload
    char c;
    f.seekg(f.tellp());
    f.get(c);
    f.seekp(static_cast<std::streamoff>(at + 16 + kFrameOverhead + 45));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  ReadResult end;
  std::string err;
  const auto frames = read_all(file, end, err);
  EXPECT_EQ(end, ReadResult::kDamaged);
  EXPECT_EQ(frames.size(), 11u);
  EXPECT_NE(err.find("offset " + std::to_string(at) + ":"), std::string::npos) << err;
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
}

TEST(RecordFile, DatagramAboveTheSnapshotLengthIsCountedNotCut) {
  TempDir d;
  const size_t limit = datagram(1).size();
  RecordingWriter w(opts((d.path / "small").string(), 0, 0, 1024, limit));
  EXPECT_TRUE(w.write(datagram(1), 1, kT0));
  const test::Bytes big = test::DatagramBuilder(2)
                              .add(wire::Message::make_add(1, 1, 1, 1, wire::Side::kBuy))
                              .add(wire::Message::make_add(1, 2, 1, 1, wire::Side::kBuy))
                              .build();
  ASSERT_GT(big.size(), limit);
  EXPECT_FALSE(w.write(big, 2, kT0 + 1));
  EXPECT_EQ(w.dropped(), 1u);
  EXPECT_EQ(w.frames(), 1u);
  EXPECT_FALSE(w.failed());  // one datagram lost, not the recording
  w.close();
}

TEST(RecordFile, MarkersDecodeOnlyWhenWellFormed) {
  std::byte b[kMarkerSize];
  encode_marker({MarkerKind::kSession, 0x1234, 0, {}}, b);
  Marker m;
  ASSERT_TRUE(decode_marker(b, m));
  EXPECT_EQ(m.kind, MarkerKind::kSession);
  EXPECT_EQ(m.a, 0x1234u);
  EXPECT_FALSE(decode_marker(std::span(b).first(kMarkerSize - 1), m));  // short
  b[8] = std::byte{4};                                                 // unknown kind
  EXPECT_FALSE(decode_marker(b, m));
  EXPECT_TRUE(is_marker(b));
  // An mdcast datagram is never taken for one ('M','C' vs "MDCREC01").
  EXPECT_FALSE(is_marker(datagram(1)));
}

TEST(RecordFile, ImageMarkersCarryValidatedMessages) {
  TempDir d;
  const std::string base = (d.path / "img").string();
  test::Bytes run = test::encode_msg(wire::Message::make_add(3, 77, 1234, 5, wire::Side::kSell));
  const test::Bytes more = test::encode_msg(wire::Message::make_add(4, 78, 1235, 6, wire::Side::kBuy));
  run.insert(run.end(), more.begin(), more.end());
  {
    RecordingWriter w(opts(base));
    ASSERT_TRUE(w.mark({MarkerKind::kGap, 1, 500, {}}, kT0));
    ASSERT_TRUE(w.mark({MarkerKind::kImage, 500, 1, run}, kT0));
    ASSERT_TRUE(w.write(datagram(500), 500, kT0 + 1));
    // A run that does not validate is recorded (the writer does not judge) and refused by the reader.
    test::Bytes bad = run;
    bad.resize(bad.size() - 3);
    ASSERT_TRUE(w.mark({MarkerKind::kImage, 501, 1, bad}, kT0 + 2));
    w.close();
  }
  RecordingReader r(recording_file(base, 0));
  RecordedFrame f;
  ASSERT_EQ(r.next(f), ReadResult::kFrame);
  EXPECT_EQ(f.marker.kind, MarkerKind::kGap);
  ASSERT_EQ(r.next(f), ReadResult::kFrame);
  ASSERT_TRUE(f.is_marker);
  EXPECT_EQ(f.marker.kind, MarkerKind::kImage);
  EXPECT_EQ(f.marker.a, 500u);
  EXPECT_EQ(f.marker.b, 1u);
  ASSERT_EQ(f.marker.messages.size(), run.size());
  wire::MessageCursor cur(f.marker.messages.data(), f.marker.messages.size());
  wire::MessageView v;
  ASSERT_TRUE(cur.next(v));
  EXPECT_EQ(wire::decode(v).add.order_id, 77u);
  ASSERT_TRUE(cur.next(v));
  EXPECT_EQ(wire::decode(v).add.order_id, 78u);
  EXPECT_FALSE(cur.next(v));
  ASSERT_EQ(r.next(f), ReadResult::kFrame);
  EXPECT_EQ(f.header.sequence, 500u);
  EXPECT_EQ(r.next(f), ReadResult::kDamaged);
  EXPECT_NE(r.error().find("malformed recording marker"), std::string::npos) << r.error();
}

TEST(RecordFile, RefusesWhatIsNotARecording) {
  TempDir d;
  const auto junk = (d.path / "junk.pcap").string();
  std::ofstream(junk) << "this is not a capture";
  EXPECT_THROW(RecordingReader{junk}, Error);
  EXPECT_THROW(RecordingReader{(d.path / "missing.pcap").string()}, Error);
  EXPECT_THROW(RecordingWriter(opts((d.path / "no" / "such" / "dir").string())), Error);
  EXPECT_THROW(RecordingWriter(opts((d.path / "x").string(), 0, 0, 1, 70000)), Error);
  const auto badix = (d.path / "bad.idx").string();
  std::ofstream(badix) << "garbage garbage garbage";
  EXPECT_THROW((void)read_index(badix), Error);
  EXPECT_FALSE(read_index((d.path / "none.idx").string()).has_value());
}
