// `mdcast replay FILE...`: a publisher agent over any medium that publishes a
// recording's messages again - decoded from its datagrams, republished
// through the engine, so the replay is a session of its own (sequences,
// retransmits, snapshots, heartbeats, a clean end) whose books end as the
// recorded publisher's did. Paced by the recorded timestamps (--speed 1, a
// multiple, or max); --from SEQ|TIME starts later, with the books up to there
// rebuilt from the recording and published first as a book image.
//
// A recorded snapshot (a gap marker and the books it gave) is replayed
// through: the replay's books become the image's, and it goes on.
//
// Damage (a cut file, a bad checksum, a frame that is no mdcast datagram, a
// break in the sequence) ends the replay there, reported with the file and
// offset; everything before it has been published and the session is ended
// cleanly: exit 1 (data lost), 0 for a whole recording (docs/recording.md).
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <optional>

#include "app_counters.hpp"
#include "exit_codes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/record/index.hpp"
#include "mdcast/record/reader.hpp"
#include "mdcast/record/writer.hpp"
#include "mdcast/stats/counters_file.hpp"
#include "record_commands.hpp"
#include "registry.hpp"
#include "result.hpp"
#include "runners.hpp"

namespace mdcast::app {

namespace {

#define MDCAST_REPLAY_COUNTERS(X)                                                                   \
  X(frames, "frames read from the recording")                                                     \
  X(datagrams, "recorded datagrams whose messages were published")                                \
  X(messages, "recorded messages published")                                                      \
  X(skipped, "recorded datagrams before --from (applied to the books, not published)")            \
  X(image_messages, "messages of the book image published at --from")                             \
  X(ignored, "recorded messages of types a replay does not publish (heartbeats, snapshot chunks)") \
  X(fragments_dropped, "fragments that did not reassemble into a valid message")                  \
  X(gaps, "recorded snapshots (gap markers) replayed through their book images")                   \
  X(damaged, "1 when the replay stopped at damage or a break in the recording")
MDCAST_DEFINE_COUNTER_STRUCT(ReplayCounters, MDCAST_REPLAY_COUNTERS);

namespace fs = std::filesystem;

// Each argument is a file, or a base whose numbered files are taken in order.
std::vector<std::string> resolve_files(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (std::string a : args) {
    if (fs::is_regular_file(a)) {
      out.push_back(a);
      continue;
    }
    if (a.ends_with(".pcap")) a.resize(a.size() - 5);
    size_t before = out.size();
    for (uint32_t n = 0; fs::is_regular_file(record::recording_file(a, n)); ++n) out.push_back(record::recording_file(a, n));
    if (out.size() == before)
      fail_recording_usage("replay: no recording {} (neither that file nor {} exists)", a, record::recording_file(a, 0));
  }
  return out;
}

struct From {
  uint64_t seq = 0;          // publish from this sequence
  uint64_t time_ns = 0;      // or from this wall-clock time
  uint64_t offset_ns = 0;    // or this long after the recording's first frame
  bool offset = false;
  [[nodiscard]] bool any() const noexcept { return seq || time_ns || offset; }
};

// "2026-12-01T17:00:00.25Z" (UTC; the Z and the fraction optional).
std::optional<uint64_t> parse_iso(const std::string& v) {
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

From parse_from(const std::string& v) {
  From f;
  if (v.empty()) return f;
  if (v.find_first_not_of("0123456789") == std::string::npos) {
    f.seq = std::stoull(v);
    if (f.seq == 0) fail_recording_usage("replay --from 0: sequences start at 1");
    return f;
  }
  if (auto t = parse_iso(v)) {
    f.time_ns = *t;
    return f;
  }
  try {
    f.offset_ns = parse_duration(v);
    f.offset = true;
  } catch (const Error&) {
    fail_recording_usage("replay --from '{}': a sequence (12345), a UTC time (2026-12-01T17:00:00.5Z) or an offset "
                         "into the recording (30s, 2m) is expected", v);
  }
  return f;
}

double parse_speed(const std::string& v) {
  if (v == "max") return 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (!end || *end || !(x > 0) || !std::isfinite(x))
    fail_recording_usage("replay --speed '{}': a positive multiple of the recorded pace (1, 10, 0.5) or 'max' is "
                         "expected", v);
  return x;
}

// Where --from SEQ lies, from the indexes (a file without one is read to find out).
void locate(const std::vector<std::string>& files, uint64_t seq) {
  for (const auto& f : files) {
    const auto ix = record::read_index(record::index_file(f));
    if (!ix || ix->entries.empty()) return;
    if (const auto e = ix->at_or_before(seq); e && (&f == &files.back() || ix->entries.back().sequence >= seq)) {
      fmt::print(stderr, "mdcast replay: --from {}: in {} after offset {} (indexed sequence {}); the books before it "
                         "are rebuilt from the recording\n", seq, f, e->offset, e->sequence);
      return;
    }
  }
}

template <class Medium>
class Replayer {
 public:
  Replayer(Settings& s, const ReplayArgs& a, Medium& medium, uint64_t session, std::string_view medium_name)
      : s_(s),
        files_(resolve_files(a.files)),
        speed_(parse_speed(a.speed)),
        from_(parse_from(a.from)),
        from_text_(a.from),
        medium_(medium),
        medium_name_(medium_name),
        medium_counters_(medium.counter_groups()),
        cf_(make_counters_file()),
        c_(cf_.template section<ReplayCounters>(2)),
        agent_(medium, publisher_config(s, session), control_config(s),
               {cf_.template section<feed::PublisherCounters>(0), cf_.template section<feed::ControlCounters>(1)},
               {s.feed.control_poll_ns}),
        pre_(publisher_config(s, session).books),
        reasm_(8, agent_.core().config().max_message) {}

  int run();

 private:
  stats::CountersFile make_counters_file() {
    std::vector<stats::Section> sections{
        {"pub", feed::PublisherCounters::kInfo}, {"ctl", feed::ControlCounters::kInfo}, {"rep", ReplayCounters::kInfo}};
    medium_counters_.add_sections(sections);
    return stats::CountersFile("publisher", s_.feed.name, std::string(medium_name_), sections);
  }
  void refresh(uint64_t now) {
    if (now - last_refresh_ < 100 * kNsPerMs) return;
    last_refresh_ = now;
    cf_.touch(now);
    medium_counters_.refresh(cf_);
  }
  // Stops the replay at damage: what and where, and how far it got.
  void stop(std::string what) {
    damage_ = std::move(what);
    c_->damaged.set(1);
  }
  bool reached_from(const record::RecordedFrame& f) const noexcept {
    if (from_.seq) return f.header.sequence >= from_.seq;
    if (from_.time_ns) return f.time_ns >= from_.time_ns;
    if (from_.offset) return f.time_ns >= rec_t0_ + from_.offset_ns;
    return true;
  }
  feed::PublishResult publish(wire::Message& m) {
    for (;;) {
      const uint64_t now = monotonic_ns();
      const feed::PublishResult r = agent_.publish(m, now);
      if (r != feed::PublishResult::kBackPressured || g_stop) return r;
      agent_.do_work(now);
    }
  }
  // recorded: a message of a recorded datagram (else of a recorded image).
  bool publish_checked(wire::Message& m, const record::RecordedFrame& f, const std::string& file, bool recorded = true);
  bool publish_image();
  bool datagram(const record::RecordedFrame& f, const std::string& file);
  bool marker(const record::RecordedFrame& f, const std::string& file);
  bool reset_books();
  void pace(uint64_t recorded_ns);
  void wait_subscribers();

  Settings& s_;
  std::vector<std::string> files_;
  double speed_;
  From from_;
  std::string from_text_;
  Medium& medium_;
  std::string_view medium_name_;
  MirroredCounters medium_counters_;
  stats::CountersFile cf_;
  ReplayCounters* c_;
  feed::PublisherAgent<Medium> agent_;
  book::BookSet pre_;          // the books before --from
  feed::Reassembler reasm_;
  std::string damage_;
  std::string note_;           // why the replay stopped early without damage
  bool started_ = false;       // reached --from
  uint64_t rec_t0_ = 0;        // the recording's first frame
  uint64_t pace_rec0_ = 0, pace_wall0_ = 0;
  uint64_t expect_seq_ = 0;
  bool in_gap_ = false;        // after a gap marker, until the datagram after it
  bool image_done_ = false;    // its image's last frame was read
  uint64_t gap_next_ = 0;
  uint64_t last_seq_ = 0;
  uint64_t published_ = 0;
  uint64_t last_refresh_ = 0;
};

template <class Medium>
void Replayer<Medium>::wait_subscribers() {
  if (!s_.pub.wait_subscribers) return;
  const uint64_t give_up = monotonic_ns() + 60 * kNsPerSec;
  while (!g_stop && agent_.subscribed_clients() < s_.pub.wait_subscribers) {
    const uint64_t now = monotonic_ns();
    if (now > give_up)
      fail("only {} of {} subscribers arrived within 60 s", agent_.subscribed_clients(), s_.pub.wait_subscribers);
    agent_.do_work(now);
    refresh(now);
    sleep_ns(kNsPerMs);
  }
}

template <class Medium>
void Replayer<Medium>::pace(uint64_t rec_ns) {
  uint64_t now = monotonic_ns();
  if (!pace_wall0_) {
    pace_wall0_ = now;
    pace_rec0_ = rec_ns;
  }
  if (speed_ <= 0 || rec_ns <= pace_rec0_) return;
  const uint64_t due = pace_wall0_ + static_cast<uint64_t>(static_cast<double>(rec_ns - pace_rec0_) / speed_);
  while (now < due && !g_stop) {
    agent_.do_work(now);
    refresh(now);
    if (due - now > 60 * kNsPerUs) sleep_ns(std::min<uint64_t>(due - now - 50 * kNsPerUs, 10 * kNsPerMs));
    now = monotonic_ns();
  }
}

template <class Medium>
bool Replayer<Medium>::publish_checked(wire::Message& m, const record::RecordedFrame& f, const std::string& file,
                                       bool recorded) {
  if (!started_) {
    // Before --from: the message only moves the books the image is made of.
    const book::ApplyResult r = pre_.apply(m);
    if (r == book::ApplyResult::kOk || r == book::ApplyResult::kIgnored) return true;
    stop(fmt::format("{}: offset {}: sequence {}: instrument {}'s book refuses a recorded message ({}): the "
                     "recording does not begin at the start of its session", file, f.offset, f.header.sequence,
                     m.instrument, book::to_string(r)));
    return false;
  }
  const feed::PublishResult r = publish(m);
  if (r == feed::PublishResult::kOk) {
    if (recorded) {
      ++published_;
      c_->messages.add();
    } else {
      c_->image_messages.add();
    }
    return true;
  }
  if (g_stop) return false;
  stop(fmt::format("{}: offset {}: sequence {}: the replay's publisher refuses a recorded message for instrument "
                   "{} ({}): the recording does not begin at the start of its session (replay from its first "
                   "file, or raise --max-instruments/--max-orders to the recorded feed's)", file, f.offset,
                   f.header.sequence, m.instrument,
                   r == feed::PublishResult::kTooLarge ? std::string_view("too large")
                                                       : book::to_string(agent_.core().last_reject())));
  return false;
}

template <class Medium>
bool Replayer<Medium>::publish_image() {
  // The books at --from as messages: definition, status, resting orders.
  for (uint32_t i = 0; i < pre_.max_instruments(); ++i) {
    const book::OrderBook& b = pre_.book(i);
    if (!b.defined() && b.order_count() == 0 && b.status() == wire::TradingStatus::kPreOpen) continue;
    std::vector<wire::Message> msgs;
    if (b.defined()) {
      wire::Message m;
      m.type = wire::MsgType::kInstrumentDefinition;
      m.instrument = i;
      m.definition = b.definition();
      msgs.push_back(m);
    }
    if (b.status() != wire::TradingStatus::kPreOpen) {
      wire::Message m;
      m.type = wire::MsgType::kTradingStatus;
      m.instrument = i;
      m.status = {b.status()};
      msgs.push_back(m);
    }
    pre_.for_each_order(i, [&](const book::Order& o) {
      msgs.push_back(wire::Message::make_add(i, o.id, o.price, o.quantity, o.side));
    });
    for (auto& m : msgs) {
      if (publish(m) != feed::PublishResult::kOk) {
        if (!g_stop)
          stop(fmt::format("replay --from: the book image of instrument {} is refused by the publisher ({})", i,
                           book::to_string(agent_.core().last_reject())));
        return false;
      }
      c_->image_messages.add();
    }
  }
  return true;
}

template <class Medium>
bool Replayer<Medium>::reset_books() {
  // The replay's books become the image's: every resting order deleted and
  // every status back to pre-open, then the image's messages. Collected
  // first: publishing changes the books being walked.
  const book::BookSet& books = agent_.core().books();
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
    if (publish(m) != feed::PublishResult::kOk) {
      if (!g_stop)
        stop(fmt::format("replay: clearing instrument {} for a recorded snapshot was refused ({})", m.instrument,
                         book::to_string(agent_.core().last_reject())));
      return false;
    }
    c_->image_messages.add();
  }
  return true;
}

template <class Medium>
bool Replayer<Medium>::marker(const record::RecordedFrame& f, const std::string& file) {
  if (f.marker.kind == record::MarkerKind::kGap) {
    // The image that follows replaces the books: before --from the rebuilt
    // ones, after it the replay's own (deletes and statuses first).
    if (!started_)
      pre_.clear_all();
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
  wire::MessageCursor cur(f.marker.messages.data(), f.marker.messages.size());
  wire::MessageView v;
  while (cur.next(v)) {
    wire::Message m = wire::decode(v);
    if (!publish_checked(m, f, file, false)) return false;
  }
  image_done_ = f.marker.b == 1;
  return true;
}

template <class Medium>
bool Replayer<Medium>::datagram(const record::RecordedFrame& f, const std::string& file) {
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
    // The books so far - rebuilt before --from, or a snapshot's image at the
    // start of the recording - are published first.
    if ((c_->skipped.get() || c_->gaps.get()) && !publish_image()) return false;
  }
  if (started_) pace(f.time_ns);
  wire::MessageCursor cur = wire::MessageCursor::payload_of(f.datagram);
  wire::MessageView v;
  while (cur.next(v)) {
    const auto t = v.type();
    if (t == wire::MsgType::kFragment) {
      std::span<const std::byte> whole;
      const auto r = reasm_.add(wire::FragmentView(v), whole);
      if (r == feed::Reassembler::Result::kIncomplete) continue;
      if (r == feed::Reassembler::Result::kDropped || whole.size() > UINT16_MAX ||
          wire::validate_message(whole.data(), static_cast<uint16_t>(whole.size())) != wire::MessageCheck::kOk) {
        c_->fragments_dropped.add();
        continue;
      }
      wire::Message m = wire::decode(wire::MessageView(whole.data(), static_cast<uint16_t>(whole.size())));
      if (!publish_checked(m, f, file)) return false;
      continue;
    }
    if (t < wire::MsgType::kInstrumentDefinition || t > wire::MsgType::kOpaque || t == wire::MsgType::kSnapshotChunk ||
        t == wire::MsgType::kHeartbeat) {
      c_->ignored.add();
      continue;
    }
    wire::Message m = wire::decode(v);
    if (!publish_checked(m, f, file)) return false;
  }
  last_seq_ = seq;
  if (started_) {
    c_->datagrams.add();
    const uint64_t now = monotonic_ns();
    // Paced, a recorded datagram leaves when it is due, as it did; at max
    // speed the engine fills datagrams as it likes.
    if (speed_ > 0) agent_.flush(now);
    agent_.do_work(now);
    refresh(now);
  } else {
    c_->skipped.add();
  }
  return true;
}

template <class Medium>
int Replayer<Medium>::run() {
  if (from_.seq) locate(files_, from_.seq);
  cf_.set_state(stats::ProcessState::kRunning);
  fmt::print(stderr, "mdcast replay: {}; session {:016x}; {} file(s) from {} at {}{}\n", medium_.describe(),
             agent_.core().session(), files_.size(), files_.front(),
             speed_ > 0 ? fmt::format("{}x the recorded pace", speed_) : std::string("full speed"),
             from_.any() ? " from " + from_text_ : std::string());
  wait_subscribers();
  const uint64_t t0 = monotonic_ns();
  bool more = true;
  for (const auto& file : files_) {
    if (!more || g_stop) break;
    record::RecordingReader reader(file);
    record::RecordedFrame f;
    record::ReadResult r;
    while (more && !g_stop && (r = reader.next(f)) == record::ReadResult::kFrame) {
      c_->frames.add();
      if (!rec_t0_) rec_t0_ = f.time_ns ? f.time_ns : 1;
      if (f.is_marker) {
        if (f.marker.kind == record::MarkerKind::kSession) {
          if (last_seq_) {
            note_ = fmt::format("{}: offset {}: the recording goes on with another session ({:016x}): a replay "
                                "publishes one session", file, f.offset, f.marker.a);
            more = false;
          }
          expect_seq_ = 0;
          continue;
        }
        more = marker(f, file);
        continue;
      }
      more = datagram(f, file);
    }
    if (g_stop || !more) break;
    if (r == record::ReadResult::kDamaged) {
      stop(reader.error());
      break;
    }
    // Cut at a record boundary leaves a readable file: the index knows better.
    if (const auto ix = record::read_index(record::index_file(file)); ix && !ix->entries.empty() &&
                                                                       ix->entries.back().offset >= reader.file_size()) {
      stop(fmt::format("{}: offset {}: the file ends before sequence {}, which its index places at offset {} (the "
                       "file was cut)", file, reader.file_size(), ix->entries.back().sequence,
                       ix->entries.back().offset));
      break;
    }
  }
  if (!damage_.empty())
    fmt::print(stderr, "mdcast replay: damaged recording: {}; everything before it was replayed (through recorded "
                       "sequence {})\n", damage_, last_seq_);
  if (!note_.empty()) fmt::print(stderr, "mdcast replay: {}\n", note_);
  if (from_.any() && !started_ && damage_.empty())
    fmt::print(stderr, "mdcast replay: --from {}: the recording ends before it (last sequence {})\n", from_text_,
               last_seq_);
  const double seconds = static_cast<double>(monotonic_ns() - t0) / 1e9;

  uint64_t t_end = monotonic_ns();
  while (!agent_.end_session(t_end) && monotonic_ns() - t_end < kNsPerSec) t_end = monotonic_ns();
  agent_.linger(t_end + s_.pub.linger_ns, 300 * kNsPerMs, 200 * kNsPerUs, [&] {
    last_refresh_ = 0;
    refresh(monotonic_ns());
    return g_stop != 0;
  });
  last_refresh_ = 0;
  refresh(monotonic_ns());
  cf_.set_state(damage_.empty() ? stats::ProcessState::kFinished : stats::ProcessState::kFailed);

  RunResult res;
  res.role = "publisher";
  res.name = s_.feed.name;
  res.medium = medium_name_;
  res.outcome = damage_.empty() ? "ok" : "error: " + damage_;
  res.session = agent_.core().session();
  res.last_sequence = agent_.core().last_committed();
  res.seconds = seconds;
  res.messages = published_;
  dump_counters(agent_.core().counters(), "pub.", res.counters);
  dump_counters(agent_.control().counters(), "ctl.", res.counters);
  dump_counters(*c_, "rep.", res.counters);
  medium_counters_.dump(res.counters);
  const auto& books = agent_.core().books();
  for (uint32_t i = 0; i < books.max_instruments(); ++i)
    if (books.book(i).instrument_seq() > 0)
      res.books.push_back({i, books.book(i).instrument_seq(), books.book(i).checksum()});
  if (!s_.pub.result.empty()) write_result(s_.pub.result, res);
  fmt::print(stderr, "mdcast replay: {} recorded datagrams ({} messages{}) republished as {} datagrams in {:.2f} s\n",
             c_->datagrams.get(), published_,
             c_->image_messages.get() ? fmt::format(", after a book image of {}", c_->image_messages.get()) : "",
             res.last_sequence, seconds);
  if (g_stop) return exit_code::kInterrupted;
  if (!damage_.empty() || !note_.empty()) return exit_code::kDataLost;
  return started_ ? exit_code::kOk : exit_code::kUsage;
}

}  // namespace

int run_replay(Settings& s, const ReplayArgs& a) {
  if (a.files.empty()) fail_recording_usage("replay: a recording is required (mdcast replay FILE.pcap or BASE)");
  // The arguments are checked before a medium is set up (a ring, sockets).
  (void)resolve_files(a.files);
  (void)parse_speed(a.speed);
  (void)parse_from(a.from);
  if (s.feed.channels > 1)
    fail_recording_usage("replay publishes one channel (a recording is one channel's), not feed.channels {}",
                         s.feed.channels);
  return with_medium(s.feed.medium, [&](auto entry) {
    using E = decltype(entry);
    const uint64_t session = pick_session(s);
    auto medium = E::publisher(s, session);
    Replayer<typename E::Publisher> r(s, a, *medium, session, E::kName);
    return r.run();
  });
}

}  // namespace mdcast::app
