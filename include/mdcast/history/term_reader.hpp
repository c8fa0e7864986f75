// A reader of a term log (term_log.hpp) that another thread or process
// writes: the shm medium's subscribers. It keeps a cursor - the next
// sequence and its record's byte position - and answers what the layout lets
// a reader prove; what to believe beyond that (a published position, how
// fast a writer can go, what to count as forged) is the caller's.
//
// Reading the record at the cursor, one datagram at a time:
//   mark()          kCommitted: the record holds seq(), whole once copied
//                   and held() after the copy; kPending: 0 or seq() | kClaimed,
//                   not yet (unless the writer lapped the reader: held() says);
//                   kOther: the writer lapped the reader, or the memory was
//                   written by someone else
//   length(), payload()   after kCommitted: the datagram (length() not
//                   checked against max_datagram(): the caller's to refuse)
//   held()          after the copy (and an acquire fence or acquire loads):
//                   nothing of the record was reclaimed while it was copied
//   advance(len)    to the next record, as the writer steps
// Whatever a reader copies is only bytes until held() says so: the copy
// itself (a seqlock's racing memcpy) is the caller's.
//
// Moving other than by one record goes through the index, and only where the
// index entry and the record it points at agree: the memory is shared, and
// a corrupt or forged word must not send a reader where nothing will ever
// be written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mdcast/history/record.hpp"
#include "mdcast/history/term_log.hpp"

namespace mdcast::history {

class TermReader {
 public:
  enum class Mark : uint8_t { kCommitted, kPending, kOther };

  TermReader() = default;
  // log: the control block TermLog::format() wrote for data_bytes of records
  // of max_datagram (TermLog::memory_for(data_bytes) bytes, mapped). The
  // geometry comes from the caller, who checked it, never from the shared
  // control block. The cursor starts at sequence 1, position 0.
  TermReader(const std::byte* log, size_t data_bytes, size_t max_datagram) noexcept
      : horizon_(log),
        data_(log + TermLog::data_offset(data_bytes)),
        data_bytes_(data_bytes),
        max_record_(TermLog::record_size_for(max_datagram)),
        max_datagram_(max_datagram),
        index_(log + TermLog::kControlSize),
        entries_(TermLog::index_entries(data_bytes)) {}

  [[nodiscard]] uint64_t seq() const noexcept { return seq_; }
  [[nodiscard]] uint64_t position() const noexcept { return pos_; }
  [[nodiscard]] size_t data_bytes() const noexcept { return data_bytes_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] size_t entries() const noexcept { return entries_; }

  // The record at the cursor, its sequence word loaded with acquire.
  [[nodiscard]] Mark mark() const noexcept {
    const uint64_t q = record::seq_word(data_ + off_).load(std::memory_order_acquire);
    if (q == seq_) return Mark::kCommitted;
    return q == 0 || q == (seq_ | record::kClaimed) ? Mark::kPending : Mark::kOther;
  }
  // Stored before the sequence word, which mark() loaded with acquire.
  [[nodiscard]] size_t length() const noexcept {
    return record::len_word(data_ + off_).load(std::memory_order_relaxed);
  }
  [[nodiscard]] const std::byte* payload() const noexcept { return data_ + off_ + record::kHeader; }
  // The record at the cursor is not reclaimed: relaxed, after the caller's
  // acquire (fence or loads) that ordered its copy before this.
  [[nodiscard]] bool held() const noexcept {
    return horizon_word().load(std::memory_order_relaxed) <= pos_ + data_bytes_;
  }
  // How far the writer may have claimed, and whether that reclaimed the
  // record at the cursor.
  [[nodiscard]] uint64_t horizon() const noexcept { return horizon_word().load(std::memory_order_acquire); }
  [[nodiscard]] bool reclaimed_by(uint64_t horizon) const noexcept { return horizon > pos_ + data_bytes_; }
  // Past the record at the cursor (len: its datagram's bytes): right behind,
  // or the next lap's start when the largest record would not fit before the
  // end (the writer's rule).
  void advance(size_t len) noexcept {
    ++seq_;
    const size_t span = record::size_for(len);
    pos_ += span;
    off_ += span;
    if (off_ + max_record_ > data_bytes_) [[unlikely]] {
      pos_ += data_bytes_ - off_;
      off_ = 0;
    }
  }
  // The one way the cursor moves other than by advance().
  void seek(uint64_t seq, uint64_t pos) noexcept {
    seq_ = seq;
    pos_ = pos;
    off_ = static_cast<size_t>(pos % data_bytes_);
  }

  // Record seq, committed where the index says and not reclaimed: its
  // position in pos, or false.
  bool locate(uint64_t seq, uint64_t& pos) const noexcept;
  // The writer got to seq: the index places seq, or a later lap of its
  // entry, in a record that says so (claimed or committed).
  [[nodiscard]] bool reached(uint64_t seq) const noexcept;
  // The newest committed sequence whose index entry and record agree (0: none).
  [[nodiscard]] uint64_t newest_indexed() const noexcept;
  // Moves to just after record seq (0: to the first record), if the records
  // show where that is; false (the cursor unmoved) otherwise.
  bool seek_after(uint64_t seq) noexcept;
  // The first sequence in [lo, hi] whose record the index and its header
  // agree on and that the writer will not reclaim within an eighth of a lap:
  // where a lapped reader resumes. False if not even hi qualifies.
  bool resume_point(uint64_t lo, uint64_t hi, uint64_t& seq, uint64_t& pos) const noexcept;

 private:
  const std::atomic<uint64_t>& horizon_word() const noexcept { return record::word(horizon_); }
  // The record the index places seq at (its position in pos), if a writer
  // could have put one there; its header is the caller's to check.
  const std::byte* indexed(uint64_t seq, uint64_t& pos) const noexcept;

  // What mark() .. advance() touch.
  const std::byte* horizon_ = nullptr;  // the control block, the horizon its first word
  const std::byte* data_ = nullptr;
  size_t off_ = 0;       // pos_ % data_bytes_
  uint64_t seq_ = 1;     // next sequence
  uint64_t pos_ = 0;     // its record's byte position
  size_t data_bytes_ = 0;
  size_t max_record_ = 0;
  size_t max_datagram_ = 0;
  const std::byte* index_ = nullptr;
  size_t entries_ = 0;
};

}  // namespace mdcast::history
