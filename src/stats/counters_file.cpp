#include "mdcast/stats/counters_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "mdcast/core/error.hpp"
#include "mdcast/core/fence.hpp"
#include "mdcast/core/fd.hpp"
#include "mdcast/core/process.hpp"
#include "mdcast/core/resources.hpp"

namespace mdcast::stats {
namespace {

constexpr size_t kHeaderSize = 512;
struct Header {
  uint64_t magic;
  uint32_t version;
  uint32_t count;
  uint64_t pid;
  uint64_t start_time;
  std::atomic<uint64_t> stamp;
  std::atomic<uint32_t> state;
  uint32_t labels_offset;
  uint32_t values_offset;
  char role[32];
  char name[64];
  char medium[16];
  // Zero in files written before histograms: none.
  uint32_t hist_count;
  uint32_t hist_offset;
  uint32_t hist_buckets;
  uint32_t hist_sub_bits;
  // Zero in files written before the subscriber table: none.
  uint32_t subs_rows;
  uint32_t subs_offset;
  uint32_t subs_words;  // payload words per row (the row's stride follows: SeqlockRows::stride)
  // Zero in files written before the loss report: none.
  uint32_t loss_rows;
  uint32_t loss_offset;
  uint32_t loss_words;
};
static_assert(sizeof(Header) <= kHeaderSize);

// A histogram's record after its label, in 64-bit words.
constexpr size_t kHistSeq = 0, kHistCount = 1, kHistSum = 2, kHistMax = 3, kHistBuckets = 4;
constexpr size_t hist_stride(size_t buckets) { return (kLabelSize + (kHistBuckets + buckets) * 8 + 63) / 64 * 64; }
// A reader that finds the writer mid-update this many times running takes
// what it read: the writer may have died there, and the count comes from
// the buckets read, so the histogram stays whole (just not of one instant).
constexpr int kSeqlockTries = 1000;

void copy_str(char* dst, size_t cap, const std::string& s) {
  const size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = 0;
}

// Histograms of another bucket layout (another mdcast's Histogram) are left
// out; a region that does not fit the file fails the whole file, as the
// counters do.
void read_histograms(const Header& h, const MappedMemory& m, size_t file_size, CountersSnapshot& s) {
  if (h.hist_count == 0) return;
  if (h.hist_buckets != Histogram::kBuckets || h.hist_sub_bits != static_cast<uint32_t>(Histogram::kSubBits)) return;
  const size_t stride = hist_stride(Histogram::kBuckets);
  if (h.hist_count > kMaxHistograms || h.hist_offset + h.hist_count * stride > file_size)
    fail("counters file {} is inconsistent ({} histograms in {} bytes)", s.path, h.hist_count, file_size);
  std::vector<uint64_t> words(kHistBuckets + Histogram::kBuckets);
  for (size_t i = 0; i < h.hist_count; ++i) {
    const std::byte* rec = m.data() + h.hist_offset + i * stride;
    const auto* w = reinterpret_cast<const std::atomic<uint64_t>*>(rec + kLabelSize);
    CountersSnapshot::Hist out;
    out.whole = false;
    for (int t = 0; t < kSeqlockTries && !out.whole; ++t) {
      const uint64_t before = w[kHistSeq].load(std::memory_order_acquire);
      for (size_t k = 1; k < words.size(); ++k) words[k] = w[k].load(std::memory_order_relaxed);
      acquire_fence();
      out.whole = before % 2 == 0 && w[kHistSeq].load(std::memory_order_relaxed) == before;
    }
    const auto* label = reinterpret_cast<const char*>(rec);
    out.label.assign(label, strnlen(label, kLabelSize));
    for (size_t k = 0; k < Histogram::kBuckets; ++k) out.hist.add_bucket(k, words[kHistBuckets + k]);
    if (out.hist.count() > 0) out.hist.set_extremes(out.hist.min(), words[kHistMax], words[kHistSum]);
    s.histograms.push_back(std::move(out));
  }
}

// A table that does not fit the file, or claims more rows or wider rows
// than any mdcast writes, fails the whole file.
void check_table(std::string_view what, uint64_t rows, uint64_t words, uint64_t offset, size_t file_size,
                 const CountersSnapshot& s) {
  if (rows > kMaxTableRows || words > kMaxRowWords || offset % 64 != 0 || offset < kHeaderSize ||
      offset + rows * SeqlockRows::stride(words) > file_size)
    fail("counters file {} is inconsistent ({} of {} rows of {} words at {} in {} bytes): not read", s.path, what,
         rows, words, offset, file_size);
}

// Rows a file's writer did not leave free (client 0); rows shorter than
// this mdcast's are left out.
void read_subscribers(const Header& h, const MappedMemory& m, size_t file_size, CountersSnapshot& s) {
  if (h.subs_rows == 0) return;
  const uint64_t rows = h.subs_rows, words = h.subs_words, offset = h.subs_offset;
  check_table("a subscriber table", rows, words, offset, file_size, s);
  s.subscriber_rows = rows;
  if (words < feed::kSubscriberRowWords) return;
  const size_t stride = SeqlockRows::stride(words);
  for (size_t i = 0; i < rows; ++i) {
    CountersSnapshot::Subscriber x;
    x.slot = i;
    const uint64_t seq = SeqlockRows::read_struct(m.data() + offset + i * stride, x.row);
    if (seq == 0 || x.row.client == 0) continue;
    x.whole = seq != UINT64_MAX;
    x.row.identity[sizeof x.row.identity - 1] = 0;
    s.subscribers.push_back(x);
  }
}

void read_losses(const Header& h, const MappedMemory& m, size_t file_size, CountersSnapshot& s) {
  if (h.loss_rows == 0) return;
  const uint64_t rows = h.loss_rows, words = h.loss_words, offset = h.loss_offset;
  check_table("a loss report", rows, words, offset, file_size, s);
  s.loss_rows = rows;
  if (words < feed::kLossRecordWords) return;
  const size_t stride = SeqlockRows::stride(words);
  for (size_t i = 0; i < rows; ++i) {
    CountersSnapshot::Loss x;
    const uint64_t seq = SeqlockRows::read_struct(m.data() + offset + i * stride, x.record);
    if (seq == 0 || x.record.ordinal == 0) continue;
    x.whole = seq != UINT64_MAX;
    s.losses.push_back(x);
  }
  std::sort(s.losses.begin(), s.losses.end(),
            [](const auto& a, const auto& b) { return a.record.ordinal < b.record.ordinal; });
}

}  // namespace

std::string stat_dir() {
  const char* d = std::getenv("MDCAST_STAT_DIR");
  return d && *d ? d : "/dev/shm";
}

CountersFile::CountersFile(std::string role, std::string name, std::string medium,
                           const std::vector<Section>& sections, const std::vector<std::string>& histograms,
                           const TableSpec& tables) {
  size_t n = 0;
  for (const auto& s : sections) {
    offsets_.push_back(n);
    n += s.counters.size();
  }
  const size_t labels_off = kHeaderSize;
  const size_t values_off = (labels_off + n * kLabelSize + 63) / 64 * 64;
  const size_t hist_off = (values_off + n * sizeof(Counter) + 63) / 64 * 64;
  const size_t subs_off = hist_off + histograms.size() * hist_stride(Histogram::kBuckets);
  if (tables.subscriber_rows > kMaxTableRows)
    fail("a subscriber table of {} rows is more than a counters file holds ({})", tables.subscriber_rows, kMaxTableRows);
  const size_t loss_off = subs_off + tables.subscriber_rows * SeqlockRows::stride(feed::kSubscriberRowWords);
  if (tables.loss_rows > kMaxTableRows)
    fail("a loss report of {} rows is more than a counters file holds ({})", tables.loss_rows, kMaxTableRows);
  const size_t bytes = loss_off + tables.loss_rows * SeqlockRows::stride(feed::kLossRecordWords);
  path_ = stat_dir() + "/mdcast-" + std::to_string(::getpid()) + ".stat";
  ::unlink(path_.c_str());  // our own pid's leftover can only be stale
  UniqueFd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd) fail_errno("cannot create counters file {}", path_);
  // A constructor that throws runs no destructor: the file goes here, so a
  // refused start leaves nothing behind for `stat --clean`.
  try {
    // Allocated, not just sized (ftruncate): on a full file system a sparse
    // file maps fine and then kills every process writing a counter with SIGBUS.
    reserve_file(fd.get(), bytes, "counters file " + path_,
                 "free space there or point MDCAST_STAT_DIR at another directory");
    mem_ = MappedMemory::shared(fd.get(), bytes, true, "counters file " + path_);
  } catch (...) {
    ::unlink(path_.c_str());
    throw;
  }
  auto* h = new (mem_.data()) Header{};
  h->version = kStatVersion;
  h->count = static_cast<uint32_t>(n);
  h->pid = static_cast<uint64_t>(::getpid());
  h->start_time = process_start_time(h->pid);
  h->labels_offset = static_cast<uint32_t>(labels_off);
  h->values_offset = static_cast<uint32_t>(values_off);
  copy_str(h->role, sizeof h->role, role);
  copy_str(h->name, sizeof h->name, name);
  copy_str(h->medium, sizeof h->medium, medium);
  size_t k = 0;
  for (const auto& s : sections)
    for (const auto& c : s.counters) {
      const std::string label = s.prefix + "." + std::string(c.name);
      copy_str(reinterpret_cast<char*>(mem_.data() + labels_off + k * kLabelSize), kLabelSize, label);
      ++k;
    }
  values_ = new (mem_.data() + values_off) Counter[n];
  if (!histograms.empty()) {
    h->hist_count = static_cast<uint32_t>(histograms.size());
    h->hist_offset = static_cast<uint32_t>(hist_off);
    h->hist_buckets = static_cast<uint32_t>(Histogram::kBuckets);
    h->hist_sub_bits = static_cast<uint32_t>(Histogram::kSubBits);
  }
  for (size_t i = 0; i < histograms.size(); ++i) {
    std::byte* rec = mem_.data() + hist_off + i * hist_stride(Histogram::kBuckets);
    copy_str(reinterpret_cast<char*>(rec), kLabelSize, histograms[i]);
    histograms_.push_back(rec + kLabelSize);
  }
  if (tables.subscriber_rows) {
    h->subs_rows = static_cast<uint32_t>(tables.subscriber_rows);
    h->subs_offset = static_cast<uint32_t>(subs_off);
    h->subs_words = static_cast<uint32_t>(feed::kSubscriberRowWords);
    subscriber_rows_ = SeqlockRows(mem_.data() + subs_off, tables.subscriber_rows, feed::kSubscriberRowWords);
  }
  if (tables.loss_rows) {
    h->loss_rows = static_cast<uint32_t>(tables.loss_rows);
    h->loss_offset = static_cast<uint32_t>(loss_off);
    h->loss_words = static_cast<uint32_t>(feed::kLossRecordWords);
    loss_rows_ = SeqlockRows(mem_.data() + loss_off, tables.loss_rows, feed::kLossRecordWords);
  }
  std::atomic_ref<uint64_t>(h->magic).store(kStatMagic, std::memory_order_release);
}

CountersFile::CountersFile(CountersFile&& o) noexcept
    : path_(std::move(o.path_)),
      mem_(std::move(o.mem_)),
      values_(o.values_),
      offsets_(std::move(o.offsets_)),
      histograms_(std::move(o.histograms_)),
      subscriber_rows_(o.subscriber_rows_),
      loss_rows_(o.loss_rows_) {
  o.path_.clear();
}

CountersFile::~CountersFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

void CountersFile::publish(size_t i, const Histogram& h) noexcept {
  if (i >= histograms_.size()) return;
  auto* w = reinterpret_cast<uint64_t*>(histograms_[i]);
  auto put = [w](size_t k, uint64_t v) { std::atomic_ref<uint64_t>(w[k]).store(v, std::memory_order_relaxed); };
  std::atomic_ref<uint64_t> seq(w[kHistSeq]);
  const uint64_t s = seq.load(std::memory_order_relaxed);
  seq.store(s + 1, std::memory_order_relaxed);  // odd: being written
  release_fence();
  put(kHistCount, h.count());
  put(kHistSum, h.sum());
  put(kHistMax, h.max());
  const auto& b = h.buckets();
  for (size_t k = 0; k < b.size(); ++k) put(kHistBuckets + k, b[k]);
  seq.store(s + 2, std::memory_order_release);
}

void CountersFile::set_state(ProcessState s) noexcept {
  reinterpret_cast<Header*>(mem_.data())->state.store(static_cast<uint32_t>(s), std::memory_order_relaxed);
}

void CountersFile::touch(uint64_t now_ns) noexcept {
  reinterpret_cast<Header*>(mem_.data())->stamp.store(now_ns, std::memory_order_relaxed);
}

const Histogram* CountersSnapshot::histogram(std::string_view label) const noexcept {
  for (const auto& h : histograms)
    if (h.label == label) return &h.hist;
  return nullptr;
}

uint64_t CountersSnapshot::get(std::string_view label, uint64_t dflt) const {
  for (const auto& [k, v] : values)
    if (k == label) return v;
  return dflt;
}

CountersSnapshot read_counters(const std::string& path) {
  // Anyone can create files in /dev/shm: no link is followed, and a FIFO
  // planted under a counters file's name cannot hang the reader.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) fail_errno("cannot open counters file {}", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) fail_errno("cannot stat counters file {}", path);
  if (!S_ISREG(st.st_mode)) fail("{} is not a regular file, so not an mdcast counters file", path);
  if (static_cast<size_t>(st.st_size) < kHeaderSize) fail("{} is not an mdcast counters file (too short)", path);
  MappedMemory m = MappedMemory::shared(fd.get(), static_cast<size_t>(st.st_size), false, "counters file " + path);
  const auto* h = reinterpret_cast<const Header*>(m.data());
  if (h->magic != kStatMagic) fail("{} is not an mdcast counters file", path);
  if (h->version != kStatVersion)
    fail("counters file {} has version {}, this mdcast reads version {}", path, h->version, kStatVersion);
  const size_t n = h->count;
  if (n > kMaxCounters)
    fail("counters file {} claims {} counters, more than any mdcast writes ({}): not read", path, n, kMaxCounters);
  if (h->labels_offset + n * kLabelSize > static_cast<size_t>(st.st_size) ||
      h->values_offset + n * sizeof(uint64_t) > static_cast<size_t>(st.st_size))
    fail("counters file {} is inconsistent ({} counters in {} bytes)", path, n, st.st_size);
  CountersSnapshot s;
  s.path = path;
  s.pid = h->pid;
  s.start_time = h->start_time;
  s.uid = st.st_uid;
  s.file_bytes = static_cast<uint64_t>(st.st_size);
  s.role.assign(h->role, strnlen(h->role, sizeof h->role));
  s.name.assign(h->name, strnlen(h->name, sizeof h->name));
  s.medium.assign(h->medium, strnlen(h->medium, sizeof h->medium));
  s.state = static_cast<ProcessState>(h->state.load(std::memory_order_relaxed));
  s.stamp_ns = h->stamp.load(std::memory_order_relaxed);
  s.alive = process_alive(h->pid, h->start_time);
  const auto* labels = reinterpret_cast<const char*>(m.data() + h->labels_offset);
  const auto* values = reinterpret_cast<const std::atomic<uint64_t>*>(m.data() + h->values_offset);
  s.values.reserve(n);
  for (size_t i = 0; i < n; ++i)
    s.values.emplace_back(std::string(labels + i * kLabelSize, strnlen(labels + i * kLabelSize, kLabelSize)),
                          values[i].load(std::memory_order_relaxed));
  read_histograms(*h, m, static_cast<size_t>(st.st_size), s);
  read_subscribers(*h, m, static_cast<size_t>(st.st_size), s);
  read_losses(*h, m, static_cast<size_t>(st.st_size), s);
  return s;
}

std::vector<CountersSnapshot> list_counters() {
  std::vector<CountersSnapshot> out;
  const std::string dir = stat_dir();
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.rfind("mdcast-", 0) != 0 || n.size() < 12 || n.substr(n.size() - 5) != ".stat") continue;
    try {
      auto s = read_counters(dir + "/" + n);
      // A file claims the pid of its name; one that claims another pid is
      // not what that process created (and would show it twice).
      if (n != "mdcast-" + std::to_string(s.pid) + ".stat") continue;
      out.push_back(std::move(s));
    } catch (const Error&) {
      // Being created or removed right now, or not ours: skip.
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return out;
}

std::string_view to_string(ProcessState s) noexcept {
  switch (s) {
    case ProcessState::kStarting: return "starting";
    case ProcessState::kRunning: return "running";
    case ProcessState::kFinished: return "finished";
    case ProcessState::kFailed: return "failed";
  }
  return "?";
}

}  // namespace mdcast::stats
