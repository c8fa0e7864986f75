// Recorder: a feed recorded as one subscriber is delivered it. The handler of
// a feed::SubscriberAgent whose delivery hook writes each datagram it is
// delivered - live and recovered, in sequence order - into nanosecond pcap
// files (RecordingWriter), with marker frames where the sequence breaks: a
// new session, or a snapshot that replaced a range, then followed by the
// books the snapshot gave (image.hpp), so a replay goes on across it.
// Heartbeats are not delivered through the hook and are not recorded: a
// replay is a publisher and makes its own (docs/recording.md).
//
//   record::Recorder rec({.base = "/data/feed1"});        // feed1.0000.pcap + .idx
//   feed::SubscriberAgent agent(medium, cfg, rec);        // every instrument: cfg's filter empty
//   rec.attach(agent.subscriber().books());               // images after a snapshot
//   agent.start();
//   agent.run(hooks);     // hooks.on_control_round: rec.learn_source(medium); stop on rec.failed()
//   rec.close();          // throws Error naming the file if a write failed
//
// An application with a handler of its own keeps it and calls the
// recorder's on_reset and on_datagram_delivered from its handler's.
//
// The hooks are the data path: noexcept, no allocation (the writer's frame
// and the image buffer are allocated once, here). A write that fails is
// counted as dropped and remembered by the writer (failed(), error()).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/counter.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/record/image.hpp"
#include "mdcast/record/writer.hpp"

namespace mdcast::record {

// A recorder's counters (`mdcast record` puts them in its counters file as "rec").
#define MDCAST_RECORD_COUNTERS(X)                                                             \
  X(frames, "frames written (datagrams and markers)")                                       \
  X(datagrams, "datagrams recorded")                                                        \
  X(gap_markers, "breaks in the recorded sequence (a snapshot replaced datagrams)")         \
  X(image_frames, "frames of the books a snapshot left, recorded after a gap marker")        \
  X(session_markers, "new sessions recorded")                                               \
  X(dropped, "datagrams not recorded: a write or a rotation failed (see the log)")          \
  X(bytes, "bytes written to recording files")                                              \
  X(files, "recording files started")
MDCAST_DEFINE_COUNTER_STRUCT(RecordCounters, MDCAST_RECORD_COUNTERS);

// The publisher's address, for the frames' source: on UDP the host of the
// control address it announced ("tcp:10.0.0.5:7471"); false where the medium
// has none (yet), or the address is no IPv4 host.
template <class Medium>
bool publisher_address(Medium& m, FrameAddress& a) {
  if constexpr (requires { m.inner(); }) {
    return publisher_address(m.inner(), a);
  } else if constexpr (requires { m.control_address(); }) {
    const std::string& ctl = m.control_address();
    if (ctl.rfind("tcp:", 0) != 0) return false;
    uint32_t ip = 0;
    if (!parse_ipv4(std::string_view(ctl).substr(4, ctl.rfind(':') - 4), ip) || ip == 0) return false;
    a.source_ip = ip;
    return true;
  } else {
    return false;
  }
}

class Recorder {
 public:
  // Opens the first file (WriterOptions). `counters`: where to count (a
  // counters file's section); null: counted here. Throws Error.
  explicit Recorder(WriterOptions o, RecordCounters* counters = nullptr);
  Recorder(Recorder&&) noexcept = default;
  Recorder& operator=(Recorder&&) = delete;

  // The subscriber's books (agent.subscriber().books()): what a snapshot left
  // is recorded as an image after its gap marker. Without them a gap is
  // recorded bare, and a replay stops there.
  void attach(const book::BookSet* books) noexcept { books_ = books; }

  // ---- feed::SubscriberHandler
  void on_message(const wire::Message&, const feed::Delivery&) noexcept { ++delivered_; }
  void on_snapshot(uint32_t, const book::BookSet*) noexcept {}
  void on_reset(uint64_t session) noexcept {
    new_session_ = session;
    last_seq_ = 0;
  }
  void on_datagram_delivered(std::span<const std::byte> d, const feed::Delivery& dl) noexcept;

  // From a control round: once the medium knows the publisher's address
  // (UDP announces it), the frames say they come from it. Cheap once known,
  // and nothing on a medium that announces none.
  template <class Medium>
  void learn_source(Medium& m) {
    if (source_known_) return;
    FrameAddress fa = writer_.options().address;
    if (publisher_address(m, fa)) {
      writer_.set_address(fa);
      source_known_ = true;
    }
  }

  // Flushes and closes the current file; throws Error if any write failed.
  void close();

  [[nodiscard]] const RecordingWriter& writer() const noexcept { return writer_; }
  [[nodiscard]] const RecordCounters& counters() const noexcept { return *c_; }
  [[nodiscard]] bool failed() const noexcept { return writer_.failed(); }
  [[nodiscard]] bool images() const noexcept { return books_ != nullptr; }
  [[nodiscard]] uint64_t last_sequence() const noexcept { return last_seq_; }
  [[nodiscard]] uint64_t delivered() const noexcept { return delivered_; }
  // Every gap recorded is followed by its image, and nothing was dropped:
  // the recording replays whole (as far as it reached).
  [[nodiscard]] bool replayable() const noexcept {
    return !c_->dropped.get() && (!c_->gap_markers.get() || books_);
  }

 private:
  RecordingWriter writer_;
  ImageWriter image_;
  std::unique_ptr<RecordCounters> own_;  // when the application gave none
  RecordCounters* c_;
  const book::BookSet* books_ = nullptr;
  uint64_t realtime_offset_;  // CLOCK_REALTIME - CLOCK_MONOTONIC at the start: pcap times are wall-clock
  uint64_t last_seq_ = 0;
  uint64_t new_session_ = 0;  // a session began: marked before its first datagram
  uint64_t delivered_ = 0;
  bool source_known_ = false;
};

}  // namespace mdcast::record
