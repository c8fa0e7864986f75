// A subscriber's loss report, readable while it runs (`mdcast stat
// --subscribers` on a subscriber process), in the spirit of Aeron's loss
// report: each gap, when it was detected, how many datagrams it missed, how
// it was recovered and how long that took.
//
// A gap is what sub.gaps counts: from the first datagram that arrives past
// a missing one until delivery is whole again (next sequence past the
// highest seen), or until a new session ends it. The last kRows gaps are
// kept in a ring of rows in the counters file (stats/counters_file.hpp),
// each under its own seqlock: the engine writes a row when the gap opens
// and again when it closes, a few dozen stores each, out of the live path
// (a gap is out of line already). No allocation; a process with no counters
// file keeps none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "mdcast/core/seqlock_rows.hpp"

namespace mdcast::feed {

enum class LossHow : uint64_t {
  kOpen = 0,        // not recovered yet
  kRetransmit = 1,  // datagrams came in retransmit replies (or fetched by the medium)
  kSnapshot = 2,    // a snapshot replaced what was missing (its messages were not delivered; the books were)
  kOtherRail = 3,   // the other rail of an A/B feed had them
  kReordered = 4,   // they came late on their own rail: reordering, not loss
  kUnrecovered = 5, // never recovered: the session changed, or the subscriber stopped first
};
[[nodiscard]] std::string_view to_string(LossHow h) noexcept;

struct LossRecord {
  uint64_t ordinal = 0;        // the gap's number in this process, from 1 (0: an empty row)
  uint64_t channel = 0;        // wire channel id
  uint64_t session = 0;
  uint64_t first_seq = 0;      // the first sequence missing
  uint64_t datagrams = 0;      // missing when the gap was detected
  uint64_t detected_ns = 0;    // CLOCK_MONOTONIC
  uint64_t closed_ns = 0;      // recovered (or given up) then; 0 while open
  uint64_t how = 0;            // LossHow
  uint64_t retransmitted = 0;  // datagrams that came by retransmission while it was open
  [[nodiscard]] LossHow method() const noexcept { return static_cast<LossHow>(how); }
};
static_assert(std::is_trivially_copyable_v<LossRecord> && sizeof(LossRecord) % 8 == 0);
constexpr size_t kLossRecordWords = sizeof(LossRecord) / 8;

// The ring's writer: the subscriber's one thread (every channel's engine).
class LossReport {
 public:
  static constexpr size_t kRows = 256;

  LossReport() = default;
  explicit LossReport(SeqlockRows ring) noexcept : rows_(ring) {}
  [[nodiscard]] bool empty() const noexcept { return rows_.empty(); }
  // Numbers r (r.ordinal) and writes it over the oldest row.
  void open(LossRecord& r) noexcept {
    if (rows_.empty()) return;
    r.ordinal = next_++;
    rows_.write_struct((r.ordinal - 1) % rows_.rows(), r);
  }
  // Writes r again, unless kRows newer gaps took its row since.
  void update(const LossRecord& r) noexcept {
    if (rows_.empty() || r.ordinal == 0 || next_ - r.ordinal > rows_.rows()) return;
    rows_.write_struct((r.ordinal - 1) % rows_.rows(), r);
  }

 private:
  SeqlockRows rows_;
  uint64_t next_ = 1;
};

}  // namespace mdcast::feed
