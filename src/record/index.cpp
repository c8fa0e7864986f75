#include "mdcast/record/index.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::record {

IndexWriter::IndexWriter(const std::string& path, uint32_t every) : f_(std::fopen(path.c_str(), "wb")) {
  if (!f_) fail_errno("recording index {}: cannot create it", path);
  std::byte h[kIndexHeader];
  std::memcpy(h, kIndexMagic, 8);
  store_le<uint32_t>(h + 8, every);
  store_le<uint32_t>(h + 12, static_cast<uint32_t>(kIndexEntry));
  // Through to the file now, while there is room: mark_cut() overwrites it.
  if (std::fwrite(h, 1, sizeof h, f_.get()) != sizeof h || std::fflush(f_.get()) != 0)
    fail_errno("recording index {}: cannot write it", path);
}

bool IndexWriter::mark_cut() noexcept {
  if (!f_) return false;
  // pwrite: the stdio position (and its buffered entries) stay as they are.
  return ::pwrite(::fileno(f_.get()), kIndexCutMagic, sizeof kIndexCutMagic, 0) ==
         static_cast<ssize_t>(sizeof kIndexCutMagic);
}

void IndexWriter::add(const IndexEntry& e) noexcept {
  if (!f_) return;
  std::byte b[kIndexEntry];
  store_le<uint64_t>(b, e.sequence);
  store_le<uint64_t>(b + 8, e.offset);
  store_le<uint64_t>(b + 16, e.time_ns);
  (void)std::fwrite(b, 1, sizeof b, f_.get());  // failures stick in ferror: flush() reports them
}

bool IndexWriter::flush() noexcept { return !f_ || (std::fflush(f_.get()) == 0 && !std::ferror(f_.get())); }

std::optional<IndexEntry> Index::at_or_before(uint64_t sequence) const noexcept {
  std::optional<IndexEntry> best;
  for (const auto& e : entries) {
    if (e.sequence > sequence) break;
    best = e;
  }
  return best;
}

std::optional<IndexEntry> Index::at_or_before_time(uint64_t time_ns) const noexcept {
  std::optional<IndexEntry> best;
  for (const auto& e : entries) {
    if (e.time_ns > time_ns) break;
    best = e;
  }
  return best;
}

std::optional<Index> read_index(const std::string& path) {
  UniqueFile f(std::fopen(path.c_str(), "rb"));
  if (!f) {
    if (errno == ENOENT) return std::nullopt;
    fail_errno("recording index {}: cannot open it", path);
  }
  std::byte h[kIndexHeader];
  const bool read = std::fread(h, 1, sizeof h, f.get()) == sizeof h;
  const bool cut = read && std::memcmp(h, kIndexCutMagic, 8) == 0;
  if (!read || (!cut && std::memcmp(h, kIndexMagic, 8) != 0))
    fail("recording index {}: offset 0: not an mdcast index (no MDCIDX01 header); delete it and replay without "
         "--from, or re-create the recording", path);
  Index ix;
  ix.cut = cut;
  ix.every = load_le<uint32_t>(h + 8);
  const uint32_t size = load_le<uint32_t>(h + 12);
  if (size != kIndexEntry)
    fail("recording index {}: offset 12: entries of {} bytes; this mdcast reads {}-byte entries", path, size, kIndexEntry);
  std::byte b[kIndexEntry];
  uint64_t off = kIndexHeader;
  while (std::fread(b, 1, sizeof b, f.get()) == sizeof b) {
    IndexEntry e{load_le<uint64_t>(b), load_le<uint64_t>(b + 8), load_le<uint64_t>(b + 16)};
    if (!ix.entries.empty() && (e.offset <= ix.entries.back().offset))
      fail("recording index {}: offset {}: entry for sequence {} at file offset {} is not after the one before; "
           "the index is damaged (delete it to replay without --from)", path, off, e.sequence, e.offset);
    ix.entries.push_back(e);
    off += kIndexEntry;
  }
  return ix;
}

}  // namespace mdcast::record
