// Live counters in a small shared-memory file per process, in the spirit of
// Aeron's cnc file: the owner writes plain single-writer counters, `mdcast
// stat` maps the file read-only and reads them without disturbing anyone.
//
// File: <dir>/mdcast-<pid>.stat, dir = $MDCAST_STAT_DIR or /dev/shm.
// Layout (version 1):
//   [0, 512)      header: magic, version, pid, process start time, role,
//                 name, medium, counter count, liveness stamp, state
//   [512, ...)    labels: 64 bytes each ("section.counter")
//   [..., ...)    values: 8 bytes each, 64-byte aligned start
//   [..., ...)    histograms (optional; header fields zero in files without
//                 them, so readers of either age read both): per histogram
//                 a 64-byte label ("section.name"), then a seqlock word,
//                 count, sum, max and the Histogram's kBuckets counts (the
//                 header records kSubBits and kBuckets: a reader of another
//                 bucket layout leaves them out), 64-byte aligned records
//   [..., ...)    the subscriber table (optional, a publisher's; header
//                 fields zero without it): rows of feed::SubscriberRow's
//                 words, each under its own seqlock (core/seqlock_rows.hpp);
//                 the header records rows and words per row, so a reader
//                 takes the words it knows of a row that grew, and leaves
//                 out a table whose rows are shorter than it knows
//   [..., ...)    the loss report (optional, a subscriber's; likewise):
//                 a ring of feed::LossRecord rows, the last gaps
// A file whose pid is gone (or reused: start time differs) is stale; stat
// says so and `mdcast stat --clean` removes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/core/histogram.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/core/seqlock_rows.hpp"
#include "mdcast/feed/loss_report.hpp"
#include "mdcast/feed/subscriber_table.hpp"

namespace mdcast::stats {

constexpr uint64_t kStatMagic = 0x31544154'5343444dull;  // "MDCSTAT1"
constexpr uint32_t kStatVersion = 1;
constexpr size_t kLabelSize = 64;
// Far above what any mdcast process writes (about 200): a file claiming more
// is refused rather than costing the reader its size in labels.
constexpr size_t kMaxCounters = 4096;
// Likewise for histograms (mdcast writes one: the subscriber's latency).
constexpr size_t kMaxHistograms = 16;
// Likewise for table rows: 16 channels of 1024 subscribers.
constexpr size_t kMaxTableRows = 16 * 1024;
constexpr size_t kMaxRowWords = 512;

// Regions a process asks for beyond its counters, sized once at creation.
struct TableSpec {
  size_t subscriber_rows = 0;  // a publisher's view of its subscribers (feed::SubscriberRow)
  size_t loss_rows = 0;        // a subscriber's loss report (feed::LossRecord)
};

enum class ProcessState : uint32_t { kStarting = 0, kRunning = 1, kFinished = 2, kFailed = 3 };

struct Section {
  std::string prefix;                      // "sub", "pub", "ctl", "shm" ...
  std::span<const CounterInfo> counters;   // names of the slots
};

[[nodiscard]] std::string stat_dir();

class CountersFile {
 public:
  // Creates the file with every section's counters, zeroed. Throws Error.
  // `histograms`: labels ("app.latency_ns") of histograms published with publish().
  CountersFile(std::string role, std::string name, std::string medium, const std::vector<Section>& sections,
               const std::vector<std::string>& histograms = {}, const TableSpec& tables = {});
  CountersFile(CountersFile&&) noexcept;
  CountersFile& operator=(CountersFile&&) = delete;
  CountersFile(const CountersFile&) = delete;
  ~CountersFile();  // removes the file

  // The counters of section i, to be used as the engine's counters struct
  // (e.g. reinterpret as feed::SubscriberCounters*).
  template <class T>
  T* section(size_t i) noexcept {
    return reinterpret_cast<T*>(values_ + offsets_.at(i));
  }
  Counter* section_base(size_t i) noexcept { return values_ + offsets_.at(i); }
  // Copies histogram i (of the constructor's list) into the file under a
  // seqlock, so a reader never takes a count from one refresh and buckets
  // from another. The owner's thread only (a single writer); no allocation,
  // no lock: a few microseconds, meant for the periodic refresh, not per
  // message (record into a private Histogram there).
  void publish(size_t i, const Histogram& h) noexcept;
  // The subscriber table's rows (empty without one): slices of it are
  // handed to each channel's feed::SubscriberTable.
  [[nodiscard]] SeqlockRows subscriber_rows() noexcept { return subscriber_rows_; }
  // The loss report's rows (empty without one), for a feed::LossReport.
  [[nodiscard]] SeqlockRows loss_rows() noexcept { return loss_rows_; }
  void set_state(ProcessState s) noexcept;
  void touch(uint64_t now_ns) noexcept;  // liveness stamp
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  MappedMemory mem_;
  Counter* values_ = nullptr;
  std::vector<size_t> offsets_;
  std::vector<std::byte*> histograms_;  // each histogram's record, after its label
  SeqlockRows subscriber_rows_;
  SeqlockRows loss_rows_;
};

// A read-only view of another process's counters file.
struct CountersSnapshot {
  std::string path;
  uint64_t pid = 0;
  uint64_t start_time = 0;   // the process's start time (/proc/<pid>/stat), as the file records it
  uint32_t uid = 0;          // the file's owner
  uint64_t file_bytes = 0;
  std::string role, name, medium;
  ProcessState state = ProcessState::kStarting;
  bool alive = false;
  uint64_t stamp_ns = 0;
  std::vector<std::pair<std::string, uint64_t>> values;
  struct Hist {
    std::string label;
    Histogram hist;  // count, sum and max exact; min from the buckets
    // False when the writer was mid-update at every try (it died there?):
    // the count is still the buckets' total, the sum may be another refresh's.
    bool whole = true;
  };
  std::vector<Hist> histograms;
  // The subscriber table's rows in use (a publisher's), by row index.
  struct Subscriber {
    size_t slot = 0;
    feed::SubscriberRow row;
    bool whole = true;  // false: the writer was mid-update at every try
  };
  std::vector<Subscriber> subscribers;
  size_t subscriber_rows = 0;  // rows the table has (0: the file has none)
  // The loss report's gaps (a subscriber's), oldest first.
  struct Loss {
    feed::LossRecord record;
    bool whole = true;
  };
  std::vector<Loss> losses;
  size_t loss_rows = 0;  // rows the ring has (0: the file has none)

  [[nodiscard]] const Histogram* histogram(std::string_view label) const noexcept;
  [[nodiscard]] uint64_t get(std::string_view label, uint64_t dflt = 0) const;
};

// Reads one file. Throws Error naming the file when it is not a counters file
// or has another version.
CountersSnapshot read_counters(const std::string& path);
// Every mdcast counters file in stat_dir(), by pid (unreadable ones, and
// files whose header names another pid than their file name, are skipped).
std::vector<CountersSnapshot> list_counters();

[[nodiscard]] std::string_view to_string(ProcessState s) noexcept;

}  // namespace mdcast::stats
