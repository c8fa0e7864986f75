// Replayer: a recording published again through a feed::PublisherAgent over
// any medium - its messages decoded from the recorded datagrams (fragments
// reassembled as the subscriber engine does) and republished through the
// engine, so the replay is a session of its own (sequences, retransmits,
// snapshots, heartbeats, a clean end) whose books end as the recorded
// publisher's did. Paced by the recorded timestamps (a multiple of the pace,
// or as fast as the publisher takes it); `from` starts later, the books up
// to there rebuilt from the recording and published first as a book image.
//
//   record::ReplayOptions o;
//   o.files = record::resolve_recording({"/data/feed1"});  // feed1.0000.pcap, .0001, ...
//   o.from = record::parse_from("30s");                    // or a sequence, a UTC time
//   record::Replayer replay(o);
//   feed::PublisherAgent agent(medium, cfg);               // cfg.books: the recorded feed's
//   replay.run(agent);          // or run(agent, hooks): hooks.on_work(now) false stops it
//   agent.end_session(now) ...; // then linger for late recovery, as any publisher
//
// A recorded snapshot (a gap marker and the books it gave, image.hpp) is
// replayed through: the replay's books become the image's, and it goes on.
//
// Damage - a cut file, a bad checksum, a frame that is no mdcast datagram, a
// break in the sequence - ends the replay there: damage() says "FILE: offset
// N: what"; everything before it has been published (docs/recording.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/feed/publisher_agent.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/record/index.hpp"
#include "mdcast/record/reader.hpp"

namespace mdcast::record {

// A replay's counters (`mdcast replay` puts them in its counters file as "rep").
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

// ---- setup: what to replay, from where, how fast. Each throws Error saying
// what it expected.

// Each argument is a recording file, or a base whose numbered files
// (<base>.0000.pcap, .0001, ...) are taken in order.
[[nodiscard]] std::vector<std::string> resolve_recording(const std::vector<std::string>& args);

// Where a replay starts publishing; the recording before it only rebuilds the books.
struct ReplayFrom {
  uint64_t seq = 0;        // at this recorded sequence
  uint64_t time_ns = 0;    // or at this wall-clock time (ns since the epoch)
  uint64_t offset_ns = 0;  // or this long after the recording's first frame
  bool offset = false;
  [[nodiscard]] bool any() const noexcept { return seq || time_ns || offset; }
};
// "12345" (a sequence), "2026-12-01T17:00:00.5Z" (UTC; the fraction and Z
// optional) or an offset ("30s", "2m", "250ms"); empty: from the start.
[[nodiscard]] ReplayFrom parse_from(const std::string& v);
// "1", "10", "0.5": a multiple of the recorded pace; "max": 0, no pacing.
[[nodiscard]] double parse_speed(const std::string& v);

// Where sequence `seq` lies, from the files' indexes: nullopt when an index
// is missing (the files are read to find it).
struct FromLocation {
  std::string file;
  IndexEntry entry;  // the last indexed datagram at or before it
};
[[nodiscard]] std::optional<FromLocation> locate(const std::vector<std::string>& files, uint64_t seq);

struct ReplayOptions {
  std::vector<std::string> files;  // in replay order (resolve_recording)
  double speed = 1;                // a multiple of the recorded pace; 0: as fast as the publisher takes it
  ReplayFrom from;
};

// What a replay publishes through: the few calls it makes of a publisher
// agent (Replayer::run implements it over feed::PublisherAgent<Medium>). A
// virtual call per message is nothing beside reading it from a file.
class ReplayTarget {
 public:
  // Publishes m, doing the publisher's work while it is back-pressured.
  virtual feed::PublishResult publish(wire::Message& m) = 0;
  // The publisher's duty cycle at `now`, after sealing what is staged when
  // `flush`. False: the application asked the replay to stop.
  virtual bool work(uint64_t now, bool flush) = 0;
  // The books as the replay published them so far.
  [[nodiscard]] virtual const book::BookSet& books() const noexcept = 0;
  // Why the publisher refused a message (after publish returned r).
  [[nodiscard]] virtual std::string_view refusal(feed::PublishResult r) const noexcept = 0;

 protected:
  ~ReplayTarget() = default;
};

class Replayer {
 public:
  // Opens nothing yet. `counters`: where to count (a counters file's
  // section); null: counted here.
  explicit Replayer(ReplayOptions o, ReplayCounters* counters = nullptr);
  Replayer(Replayer&&) noexcept = default;
  Replayer& operator=(Replayer&&) = delete;

  // Replays the files through `agent` (whose books, sized as the recorded
  // feed's, also bound those rebuilt before `from`). hooks.on_work(now) runs
  // on every round of the publisher's duty cycle (pacing waits in it);
  // false stops the replay. True: the whole recording was replayed. Throws
  // Error when a file cannot be opened.
  template <media::PublisherMedium Medium, class Hooks>
  bool run(feed::PublisherAgent<Medium>& agent, Hooks& hooks);
  template <media::PublisherMedium Medium>
  bool run(feed::PublisherAgent<Medium>& agent) {
    struct {
      bool on_work(uint64_t) noexcept { return true; }
    } none;
    return run(agent, none);
  }
  // The same through any target; `cfg` the target's publisher configuration.
  bool run(ReplayTarget& target, const feed::PublisherConfig& cfg);

  // ---- how it went
  // "FILE: offset N: what" when the replay stopped at damage; empty otherwise.
  [[nodiscard]] const std::string& damage() const noexcept { return damage_; }
  // Why it stopped early without damage (the recording goes on with another session).
  [[nodiscard]] const std::string& note() const noexcept { return note_; }
  [[nodiscard]] bool started() const noexcept { return started_; }    // reached `from`: published anything
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }    // hooks.on_work said stop
  [[nodiscard]] uint64_t last_sequence() const noexcept { return last_seq_; }  // the last recorded one read
  [[nodiscard]] uint64_t published() const noexcept { return published_; }    // recorded messages published
  [[nodiscard]] const ReplayCounters& counters() const noexcept { return *c_; }
  [[nodiscard]] const ReplayOptions& options() const noexcept { return opts_; }

 private:
  template <class Medium, class Hooks>
  class AgentTarget;

  void stop(std::string what);
  [[nodiscard]] bool reached_from(const RecordedFrame& f) const noexcept;
  [[nodiscard]] bool go(uint64_t now, bool flush);
  // recorded: a message of a recorded datagram (else of a book image).
  bool publish_checked(wire::Message& m, const RecordedFrame& f, const std::string& file, bool recorded);
  bool publish_image();
  bool reset_books();
  bool datagram(const RecordedFrame& f, const std::string& file);
  bool marker(const RecordedFrame& f, const std::string& file);
  bool file(const std::string& file);
  void pace(uint64_t recorded_ns);

  ReplayOptions opts_;
  std::unique_ptr<ReplayCounters> own_;  // when the application gave none
  ReplayCounters* c_;
  ReplayTarget* t_ = nullptr;            // during run()
  std::optional<book::BookSet> pre_;     // the books before `from`
  std::optional<feed::Reassembler> reasm_;
  std::string damage_;
  std::string note_;
  bool started_ = false;
  bool stopped_ = false;
  bool in_gap_ = false;      // after a gap marker, until the datagram after it
  bool image_done_ = false;  // its image's last frame was read
  uint64_t rec_t0_ = 0;      // the recording's first frame
  uint64_t pace_rec0_ = 0, pace_wall0_ = 0;
  uint64_t expect_seq_ = 0;
  uint64_t gap_next_ = 0;
  uint64_t last_seq_ = 0;
  uint64_t published_ = 0;
};

template <class Medium, class Hooks>
class Replayer::AgentTarget final : public ReplayTarget {
 public:
  AgentTarget(feed::PublisherAgent<Medium>& agent, Hooks& hooks) : agent_(agent), hooks_(hooks) {}
  feed::PublishResult publish(wire::Message& m) override {
    for (;;) {
      const uint64_t now = monotonic_ns();
      const feed::PublishResult r = agent_.publish(m, now);
      if (r != feed::PublishResult::kBackPressured || !hooks_.on_work(now)) return r;
      agent_.do_work(now);
    }
  }
  bool work(uint64_t now, bool flush) override {
    if (flush) agent_.flush(now);
    agent_.do_work(now);
    return hooks_.on_work(now);
  }
  [[nodiscard]] const book::BookSet& books() const noexcept override { return agent_.core().books(); }
  [[nodiscard]] std::string_view refusal(feed::PublishResult r) const noexcept override {
    return r == feed::PublishResult::kTooLarge ? std::string_view("too large")
                                               : book::to_string(agent_.core().last_reject());
  }

 private:
  feed::PublisherAgent<Medium>& agent_;
  Hooks& hooks_;
};

template <media::PublisherMedium Medium, class Hooks>
bool Replayer::run(feed::PublisherAgent<Medium>& agent, Hooks& hooks) {
  AgentTarget<Medium, Hooks> t(agent, hooks);
  return run(t, agent.core().config());
}

}  // namespace mdcast::record
