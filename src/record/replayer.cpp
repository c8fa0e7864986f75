#include "mdcast/record/replayer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <utility>

#include "mdcast/core/error.hpp"
#include "mdcast/record/image.hpp"
#include "mdcast/record/writer.hpp"

namespace mdcast::record {

namespace fs = std::filesystem;

// ------------------------------------------------------------------ setup --

std::vector<std::string> resolve_recording(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::string a : args) {
    if (fs::is_regular_file(a)) {
      out.push_back(a);
      continue;
    }
    if (a.ends_with(".pcap")) a.resize(a.size() - 5);
    const size_t before = out.size();
    for (uint32_t n = 0; fs::is_regular_file(recording_file(a, n)); ++n) out.push_back(recording_file(a, n));
    if (out.size() == before) fail("no recording {} (neither that file nor {} exists)", a, recording_file(a, 0));
  }
  return out;
}

namespace {

// "2026-12-01T17:00:00.25Z" (UTC; the Z and the fraction optional).
std::optional<uint64_t> parse_utc(const std::string& v) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(v.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6)
    return std::nullopt;
  // timegm would take month 13 as next January: out-of-range fields are a typo.
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  uint64_t frac = 0;
  size_t i = static_cast<size_t>(consumed);
  if (i < v.size() && v[i] == '.') {
    uint64_t scale = 100'000'000;
    for (++i; i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])); ++i, scale /= 10)
      frac += static_cast<uint64_t>(v[i] - '0') * scale;
  }
  if (i < v.size() && v[i] == 'Z') ++i;
  if (i != v.size()) return std::nullopt;
  const time_t t = timegm(&tm);
  if (t < 0) return std::nullopt;
  return static_cast<uint64_t>(t) * kNsPerSec + frac;
}

// "30s", "2.5m", "250ms": a number and a unit.
std::optional<uint64_t> parse_offset(const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || !(x >= 0) || !std::isfinite(x)) return std::nullopt;
  const std::string_view unit(end);
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
  for (const auto& [name, scale] : kUnits)
    if (unit == name && x * scale <= 1e18) return static_cast<uint64_t>(x * scale);
  return std::nullopt;
}

}  // namespace

ReplayFrom parse_from(const std::string& v) {
  ReplayFrom f;
  if (v.empty()) return f;
  if (v.find_first_not_of("0123456789") == std::string::npos) {
    if (v.size() > 19) fail("--from {}: no recording holds that sequence", v);
    f.seq = std::stoull(v);
    if (f.seq == 0) fail("--from 0: sequences start at 1");
    return f;
  }
  if (auto t = parse_utc(v)) {
    f.time_ns = *t;
    return f;
  }
  if (auto o = parse_offset(v)) {
    f.offset_ns = *o;
    f.offset = true;
    return f;
  }
  fail("--from '{}': a sequence (12345), a UTC time (2026-12-01T17:00:00.5Z) or an offset into the recording (30s, "
       "2m) is expected", v);
}

double parse_speed(const std::string& v) {
  if (v == "max") return 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (!end || *end || !(x > 0) || !std::isfinite(x))
    fail("--speed '{}': a positive multiple of the recorded pace (1, 10, 0.5) or 'max' is expected", v);
  return x;
}

std::optional<FromLocation> locate(const std::vector<std::string>& files, uint64_t seq) {
  for (const auto& f : files) {
    const auto ix = read_index(index_file(f));
    if (!ix || ix->entries.empty()) return std::nullopt;
    if (const auto e = ix->at_or_before(seq); e && (&f == &files.back() || ix->entries.back().sequence >= seq))
      return FromLocation{f, *e};
  }
  return std::nullopt;
}

// ----------------------------------------------------------------- replay --

Replayer::Replayer(ReplayOptions o, ReplayCounters* counters)
    : opts_(std::move(o)),
      own_(counters ? nullptr : std::make_unique<ReplayCounters>()),
      c_(counters ? counters : own_.get()) {}

void Replayer::stop(std::string what) {
  damage_ = std::move(what);
  c_->damaged.set(1);
}

bool Replayer::go(uint64_t now, bool flush) {
  if (!t_->work(now, flush)) stopped_ = true;
  return !stopped_;
}

bool Replayer::reached_from(const RecordedFrame& f) const noexcept {
  const ReplayFrom& from = opts_.from;
  if (from.seq) return f.header.sequence >= from.seq;
  if (from.time_ns) return f.time_ns >= from.time_ns;
  if (from.offset) return f.time_ns >= rec_t0_ + from.offset_ns;
  return true;
}

void Replayer::pace(uint64_t rec_ns) {
  uint64_t now = monotonic_ns();
  if (!pace_wall0_) {
    pace_wall0_ = now;
    pace_rec0_ = rec_ns;
  }
  if (opts_.speed <= 0 || rec_ns <= pace_rec0_) return;
  const uint64_t due = pace_wall0_ + static_cast<uint64_t>(static_cast<double>(rec_ns - pace_rec0_) / opts_.speed);
  while (now < due && go(now, false)) {
    if (due - now > 60 * kNsPerUs) sleep_ns(std::min<uint64_t>(due - now - 50 * kNsPerUs, 10 * kNsPerMs));
    now = monotonic_ns();
  }
}

bool Replayer::publish_checked(wire::Message& m, const RecordedFrame& f, const std::string& file, bool recorded) {
  if (!started_) {
    // Before `from`: the message only moves the books the image is made of.
    const book::ApplyResult r = pre_->apply(m);
    if (r == book::ApplyResult::kOk || r == book::ApplyResult::kIgnored) return true;
    stop(fmt::format("{}: offset {}: sequence {}: instrument {}'s book refuses a recorded message ({}): the "
                     "recording does not begin at the start of its session", file, f.offset, f.header.sequence,
                     m.instrument, book::to_string(r)));
    return false;
  }
  const feed::PublishResult r = t_->publish(m);
  if (r == feed::PublishResult::kOk) {
    if (recorded) {
      ++published_;
      c_->messages.add();
    } else {
      c_->image_messages.add();
    }
    return true;
  }
  if (r == feed::PublishResult::kBackPressured) {  // only when the hooks said stop
    stopped_ = true;
    return false;
  }
  stop(fmt::format("{}: offset {}: sequence {}: the replay's publisher refuses a recorded message for instrument "
                   "{} ({}): the recording does not begin at the start of its session (replay from its first "
                   "file, or raise --max-instruments/--max-orders to the recorded feed's)", file, f.offset,
                   f.header.sequence, m.instrument, t_->refusal(r)));
  return false;
}

bool Replayer::publish_image() {
  // The books at `from`, through the same framing the recorder writes.
  return for_each_image_message(*pre_, [&](const wire::Message& image) {
    wire::Message m = image;
    const feed::PublishResult r = t_->publish(m);
    if (r == feed::PublishResult::kOk) {
      c_->image_messages.add();
      return true;
    }
    if (r == feed::PublishResult::kBackPressured)
      stopped_ = true;
    else
      stop(fmt::format("replay --from: the book image of instrument {} is refused by the publisher ({})",
                       m.instrument, t_->refusal(r)));
    return false;
  });
}

bool Replayer::reset_books() {
  // The replay's books become the image's: every resting order deleted and
  // every status back to pre-open, then the image's messages. Collected
  // first: publishing changes the books being walked. (A recorded snapshot
  // is rare: this may allocate.)
  const book::BookSet& books = t_->books();
  std::vector<wire::Message> msgs;
  for (uint32_t i = 0; i < books.max_instruments(); ++i) {
    books.for_each_order(i, [&](const book::Order& o) {
      wire::Message m;
      m.type = wire::MsgType::kDeleteOrder;
      m.instrument = i;
      m.del = {o.id};
      msgs.push_back(m);
    });
    if (books.book(i).status() != wire::TradingStatus::kPreOpen) {
      wire::Message m;
      m.type = wire::MsgType::kTradingStatus;
      m.instrument = i;
      m.status = {wire::TradingStatus::kPreOpen};
      msgs.push_back(m);
    }
  }
  for (auto& m : msgs) {
    const feed::PublishResult r = t_->publish(m);
    if (r == feed::PublishResult::kBackPressured) {
      stopped_ = true;
      return false;
    }
    if (r != feed::PublishResult::kOk) {
      stop(fmt::format("replay: clearing instrument {} for a recorded snapshot was refused ({})", m.instrument,
                       t_->refusal(r)));
      return false;
    }
    c_->image_messages.add();
  }
  return true;
}

bool Replayer::marker(const RecordedFrame& f, const std::string& file) {
  if (f.marker.kind == MarkerKind::kGap) {
    // The image that follows replaces the books: before `from` the rebuilt
    // ones, after it the replay's own (deletes and statuses first).
    if (!started_)
      pre_->clear_all();
    else if (!reset_books())
      return false;
    gap_next_ = f.marker.b;
    image_done_ = false;
    in_gap_ = true;
    c_->gaps.add();
    return true;
  }
  if (!in_gap_ || image_done_ || f.marker.a != gap_next_) {
    stop(fmt::format("{}: offset {}: a book image that follows no gap marker", file, f.offset));
    return false;
  }
  if (!for_each_image_message(f.marker, [&](const wire::Message& image) {
        wire::Message m = image;
        return publish_checked(m, f, file, false);
      }))
    return false;
  image_done_ = f.marker.b == 1;
  return true;
}

bool Replayer::datagram(const RecordedFrame& f, const std::string& file) {
  const uint64_t seq = f.header.sequence;
  if (in_gap_) {
    if (!image_done_ || seq != gap_next_) {
      stop(fmt::format("{}: offset {}: the recording has a break: sequences up to {} were replaced by a snapshot "
                       "when it was recorded, and {} (what follows cannot be published onto the books before it)",
                       file, f.offset, gap_next_ - 1,
                       image_done_ ? "the next datagram is not the one after it" : "the books it gave are not recorded"));
      return false;
    }
    in_gap_ = false;
    expect_seq_ = seq;
  }
  if (expect_seq_ && seq != expect_seq_) {
    stop(fmt::format("{}: offset {}: the sequence jumps from {} to {} (a file of the recording is missing?)", file,
                     f.offset, expect_seq_ - 1, seq));
    return false;
  }
  expect_seq_ = seq + 1;
  if (!started_ && reached_from(f)) {
    started_ = true;
    // The books so far - rebuilt before `from`, or a snapshot's image at the
    // start of the recording - are published first.
    if ((c_->skipped.get() || c_->gaps.get()) && !publish_image()) return false;
  }
  if (started_) pace(f.time_ns);
  if (stopped_) return false;
  wire::MessageCursor cur = wire::MessageCursor::payload_of(f.datagram);
  wire::MessageView v;
  while (cur.next(v)) {
    const auto t = v.type();
    if (t == wire::MsgType::kFragment) {
      // Checked as the subscriber engine checks what it reassembles.
      wire::MessageView whole;
      const auto r = reasm_->add_checked(wire::FragmentView(v), whole);
      if (r == feed::Reassembler::Result::kDropped) c_->fragments_dropped.add();
      if (r != feed::Reassembler::Result::kComplete) continue;
      wire::Message m = wire::decode(whole);
      if (!publish_checked(m, f, file, true)) return false;
      continue;
    }
    if (t < wire::MsgType::kInstrumentDefinition || t > wire::MsgType::kOpaque || t == wire::MsgType::kSnapshotChunk ||
        t == wire::MsgType::kHeartbeat) {
      c_->ignored.add();
      continue;
    }
    wire::Message m = wire::decode(v);
    if (!publish_checked(m, f, file, true)) return false;
  }
  last_seq_ = seq;
  if (!started_) {
    c_->skipped.add();
    // A long way to `from`: the publisher's control plane and the
    // application's hooks still run now and then.
    return (c_->skipped.get() & 1023) || go(monotonic_ns(), false);
  }
  c_->datagrams.add();
  // Paced, a recorded datagram leaves when it is due, as it did; at max
  // speed the engine fills datagrams as it likes.
  return go(monotonic_ns(), opts_.speed > 0);
}

bool Replayer::file(const std::string& file) {
  RecordingReader reader(file);
  RecordedFrame f;
  ReadResult r;
  while ((r = reader.next(f)) == ReadResult::kFrame) {
    c_->frames.add();
    if (!rec_t0_) rec_t0_ = f.time_ns ? f.time_ns : 1;
    if (f.is_marker && f.marker.kind == MarkerKind::kSession) {
      if (last_seq_) {
        note_ = fmt::format("{}: offset {}: the recording goes on with another session ({:016x}): a replay "
                            "publishes one session", file, f.offset, f.marker.a);
        return false;
      }
      expect_seq_ = 0;
      continue;
    }
    if (!(f.is_marker ? marker(f, file) : datagram(f, file))) return false;
  }
  if (r == ReadResult::kDamaged) {
    stop(reader.error());
    return false;
  }
  // Cut at a record boundary leaves a readable file: the index knows better.
  const auto ix = read_index(index_file(file));
  if (ix && ix->cut) {
    stop(fmt::format("{}: offset {}: the recording stops here: the recorder's write failed (disk full?) and its "
                     "index marks the file cut", file, reader.file_size()));
    return false;
  }
  if (ix && !ix->entries.empty() && ix->entries.back().offset >= reader.file_size()) {
    stop(fmt::format("{}: offset {}: the file ends before sequence {}, which its index places at offset {} (the "
                     "file was cut)", file, reader.file_size(), ix->entries.back().sequence,
                     ix->entries.back().offset));
    return false;
  }
  return true;
}

bool Replayer::run(ReplayTarget& target, const feed::PublisherConfig& cfg) {
  t_ = &target;
  pre_.emplace(cfg.books);
  reasm_.emplace(8, cfg.max_message);
  for (const auto& f : opts_.files)
    if (!file(f)) break;
  t_ = nullptr;
  return damage_.empty() && note_.empty() && !stopped_;
}

}  // namespace mdcast::record
