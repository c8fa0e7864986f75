// Records packed back to back, as in a term buffer, with an index for
// random access: the shm medium's ring, which its readers read live
// (term_reader.hpp is their side). Fixed slots (slot_log.hpp) cost a whole
// slot per datagram: with 4 KiB slots a 100-byte datagram lands on a page of
// its own, for the writer and every reader; packed, 32 of them share a page.
//
// Layout of the memory it is given (64-byte aligned, little-endian):
//   control block (64 B): u64 horizon, u64 max_record, u64 data_bytes,
//                         u64 magic ("mdpacked"), u64 index_entries, u64 data_offset
//   index (index_entries x u64, padded to 4 KiB): the byte position of record
//                         seq in entry seq % index_entries (random access:
//                         retransmits, a reader that repositions)
//   data (data_bytes):    records {u64 seq, u32 length, u32 0, datagram}
//                         rounded up to 64 bytes (record.hpp); a record always
//                         fits whole: where fewer than max_record bytes are
//                         left before the end, the next one starts the next
//                         lap at offset 0
// Positions are 64-bit byte counts that never wrap; a record at position P
// lives at offset P % data_bytes. Its bytes are gone once the writer claims
// anything at or past P + data_bytes. The horizon word says how far the
// writer may have claimed: it is raised (rarely: a sixteenth of the data at a
// time) before any byte under it is written, so a reader that copied record P
// and then finds horizon <= P + data_bytes knows its copy is whole, reading a
// line that is almost never written instead of one the writer stores to per
// datagram. Before the writer publishes record s it zeroes the sequence word
// where s + 1 will go, so a reader that read s and steps on finds 0 ("not
// yet"), s + 1 | kClaimed, s + 1, or, lapped, whatever a later lap put there:
// never stale bytes of an earlier lap that could look like s + 1.
//
// Single writer; get() and oldest() are for the writer's thread. The index
// entry of the next record and its offset are stepped with the cursor: no
// division per datagram.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "mdcast/history/record.hpp"

namespace mdcast::history {

class TermLog {
 public:
  static constexpr size_t kControlSize = record::kControlSize;
  static constexpr size_t kRecordHeader = record::kHeader;
  static constexpr uint64_t kMagic = 0x64656b63'6170646dull;  // "mdpacked"
  static constexpr size_t kIndexAlign = 4096;  // the data starts on a page of its own
  static constexpr size_t kMinRecord = 64;     // header + the smallest datagram, rounded up

  // The largest record: what must fit before the end for a record to start there.
  static constexpr size_t record_size_for(size_t max_datagram) noexcept { return record::size_for(max_datagram); }
  // One index entry per smallest record, so the index never limits what the data holds.
  static constexpr size_t index_entries(size_t data_bytes) noexcept { return data_bytes / kMinRecord; }
  static constexpr size_t data_offset(size_t data_bytes) noexcept {
    return kControlSize + (index_entries(data_bytes) * 8 + kIndexAlign - 1) / kIndexAlign * kIndexAlign;
  }
  // The memory it all takes, control block included.
  static constexpr size_t memory_for(size_t data_bytes) noexcept { return data_offset(data_bytes) + data_bytes; }
  // Writes the control block for data_bytes of data (a multiple of 64, at
  // least 4 records of max_datagram) over mem (memory_for(data_bytes)).
  static void format(std::span<std::byte> mem, size_t data_bytes, size_t max_datagram) noexcept;
  // Whether mem holds the geometry format() writes, for records at least as
  // large as max_datagram needs, within mem.
  [[nodiscard]] static bool adoptable(std::span<const std::byte> mem, size_t max_datagram) noexcept;

  TermLog() = default;
  // mem: 64-byte aligned, adoptable(mem, max_datagram). Starts over at
  // sequence 1 (memory reused by a new session may hold an old one's records).
  TermLog(std::span<std::byte> mem, size_t max_datagram) noexcept;

  // Buffer for datagram `seq` (newest()+1, or a writer that skipped ahead).
  [[nodiscard]] std::byte* claim(uint64_t seq) noexcept {
    if (seq != cursor_seq_) [[unlikely]] seek_index(seq);
    std::byte* r = data_ + off_;
    record::word(idx_).store(pos_, std::memory_order_relaxed);
    record::seq_word(r).store(seq | record::kClaimed, std::memory_order_relaxed);
    // The claim before any byte of the datagram. The horizon already covers
    // this record (raised by the commit before).
    record::claim_fence();
    return r + kRecordHeader;
  }
  void commit(uint64_t seq, uint16_t len) noexcept {
    if (seq != cursor_seq_) [[unlikely]] seek_index(seq);
    std::byte* r = data_ + off_;
    record::len_word(r).store(len, std::memory_order_relaxed);
    // Where the next record goes: right behind, or the next lap's start.
    const size_t span = record::size_for(len);
    uint64_t npos = pos_ + span;
    size_t noff = off_ + span;
    if (noff + max_record_ > data_bytes_) {
      npos += data_bytes_ - noff;
      noff = 0;
    }
    // What the next record may overwrite is under the horizon before any
    // byte of it is stored, the "not yet" word below included.
    reach_ = npos + max_record_;
    if (reach_ > horizon_) [[unlikely]] raise_horizon();
    record::seq_word(data_ + noff).store(0, std::memory_order_relaxed);
    record::seq_word(r).store(seq, std::memory_order_release);  // last: the datagram is whole
    last_ = r;
    newest_ = seq;
    pos_ = npos;
    off_ = noff;
    cursor_seq_ = seq + 1;
    idx_ += 8;
    if (idx_ == idx_end_) idx_ = index_;
  }
  // The committed datagram `seq`, or empty if it is not (or no longer) held.
  [[nodiscard]] std::span<const std::byte> get(uint64_t seq) const noexcept {
    if (seq == 0 || seq > newest_) return {};
    const std::byte* r = last_;
    if (seq != newest_) {
      r = held_record(seq);
      if (r == nullptr) return {};
    }
    if (record::seq_word(r).load(std::memory_order_relaxed) != seq) return {};
    // The memory is shared with readers (and writable by the publisher's
    // user): a length no record can have is not served.
    const uint32_t len = record::len_word(r).load(std::memory_order_relaxed);
    if (len > max_len_) return {};
    return {r + kRecordHeader, len};
  }
  // The oldest datagram held (0: none), found by a binary search over the
  // index: the control service asks per request, not per datagram.
  [[nodiscard]] uint64_t oldest() const noexcept;
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  // Datagrams of the largest size held at least; it holds more of smaller ones.
  [[nodiscard]] size_t slots() const noexcept { return data_bytes_ / max_record_; }
  // The largest record's bytes.
  [[nodiscard]] size_t slot_size() const noexcept { return max_record_; }
  [[nodiscard]] std::byte* memory() const noexcept { return base_; }

 private:
  // Record seq if the writer has not reclaimed its bytes (its header is not
  // checked here); null otherwise.
  const std::byte* held_record(uint64_t seq) const noexcept;
  void seek_index(uint64_t seq) noexcept;
  void raise_horizon() noexcept;

  // What claim() and commit() touch first.
  std::byte* data_ = nullptr;
  size_t off_ = 0;                 // offset of pos_
  uint64_t pos_ = 0;               // position of the next record
  std::byte* idx_ = nullptr;       // index entry of cursor_seq_
  uint64_t cursor_seq_ = 0;
  size_t max_record_ = 0;
  size_t data_bytes_ = 0;
  uint64_t reach_ = 0;             // how far the writer may store before its next commit
  uint64_t horizon_ = 0;           // the horizon word's value
  std::byte* last_ = nullptr;      // the newest record
  uint64_t newest_ = 0;
  std::byte* idx_end_ = nullptr;
  std::byte* index_ = nullptr;
  std::byte* base_ = nullptr;
  size_t max_len_ = 0;             // the largest datagram the engine builds
  size_t entries_ = 0;
  mutable uint64_t oldest_hint_ = 0;
};

}  // namespace mdcast::history
