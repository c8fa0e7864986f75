// The index beside each recording file (`<file>.idx`): sequence -> where that
// datagram's record starts in the file, every N datagrams and at the first of
// each file, so a replay --from SEQ or --from TIME finds its place without
// reading the file. Binary, little-endian (docs/recording.md):
//
//   header  "MDCIDX01" (8 bytes), u32 every, u32 entry size (24)
//   entry   u64 sequence, u64 file offset of the pcap record, u64 time (ns since the epoch)
//
// A partly written last entry (the recorder was killed) is ignored. A recorder
// whose write failed (a full disk) overwrites the magic with "MDCIDXCT" in
// place - a write that needs no new space, the header being on disk since the
// file was created - so a replay knows the file was cut even where the cut
// fell exactly between two records.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mdcast::record {

inline constexpr char kIndexMagic[8] = {'M', 'D', 'C', 'I', 'D', 'X', '0', '1'};
inline constexpr char kIndexCutMagic[8] = {'M', 'D', 'C', 'I', 'D', 'X', 'C', 'T'};
inline constexpr size_t kIndexHeader = 16;
inline constexpr size_t kIndexEntry = 24;

struct IndexEntry {
  uint64_t sequence = 0;
  uint64_t offset = 0;
  uint64_t time_ns = 0;
};

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using UniqueFile = std::unique_ptr<std::FILE, FileCloser>;

// Appends entries through stdio's buffer: no allocation, no system call per entry.
class IndexWriter {
 public:
  IndexWriter() = default;
  // Creates (truncates) `path` and writes its header through to the file.
  // Throws Error.
  IndexWriter(const std::string& path, uint32_t every);
  void add(const IndexEntry& e) noexcept;
  // Marks the recording file cut (see above); false if even that failed.
  bool mark_cut() noexcept;
  // Flushes; false if anything failed to reach the file (ENOSPC...).
  [[nodiscard]] bool flush() noexcept;
  [[nodiscard]] bool open() const noexcept { return f_ != nullptr; }

 private:
  UniqueFile f_;
};

struct Index {
  uint32_t every = 0;
  bool cut = false;  // the recorder's write failed: the file ends where its disk filled
  std::vector<IndexEntry> entries;  // as written: sequences rising within a session

  // The last entry at or before `sequence` (nullopt: none is).
  [[nodiscard]] std::optional<IndexEntry> at_or_before(uint64_t sequence) const noexcept;
  // The last entry at or before `time_ns`.
  [[nodiscard]] std::optional<IndexEntry> at_or_before_time(uint64_t time_ns) const noexcept;
};

// Reads `path`; nullopt if it does not exist. Throws Error naming the path and
// offset when it is not an index.
[[nodiscard]] std::optional<Index> read_index(const std::string& path);

}  // namespace mdcast::record
