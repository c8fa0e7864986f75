#include "mdcast/record/recorder.hpp"

#include <utility>

#include "mdcast/core/clock.hpp"

namespace mdcast::record {

Recorder::Recorder(WriterOptions o, RecordCounters* counters)
    : writer_(std::move(o)),
      own_(counters ? nullptr : std::make_unique<RecordCounters>()),
      c_(counters ? counters : own_.get()),
      realtime_offset_(realtime_ns() - monotonic_ns()) {
  c_->files.set(writer_.files());
}

void Recorder::on_datagram_delivered(std::span<const std::byte> d, const feed::Delivery& dl) noexcept {
  const uint64_t t = dl.receive_time_ns + realtime_offset_;
  if (new_session_) {
    // The clock pair behind every frame's timestamp: with it a reader turns a
    // same-host publisher's send times (CLOCK_MONOTONIC) into wall-clock times.
    if (writer_.mark({MarkerKind::kSession, new_session_, realtime_offset_, {}}, t)) c_->session_markers.add();
    new_session_ = 0;
  }
  // A recording that starts late, or a snapshot that replaced a range, is a
  // break a replay must know of: the books after it need what is missing.
  if (dl.sequence != last_seq_ + 1) {
    if (writer_.mark({MarkerKind::kGap, last_seq_ + 1, dl.sequence, {}}, t)) c_->gap_markers.add();
    // Once per snapshot (rare, the recovery path), into the buffer allocated once.
    if (books_) c_->image_frames.add(image_.write(writer_, *books_, dl.sequence, t));
  }
  last_seq_ = dl.sequence;
  if (writer_.write(d, dl.sequence, t))
    c_->datagrams.add();
  else
    c_->dropped.add();
  c_->frames.set(writer_.frames());
  c_->bytes.set(writer_.bytes());
  c_->files.set(writer_.files());
}

void Recorder::close() {
  // The counters say how many files there were, whether or not the last one closed cleanly.
  try {
    writer_.close();
  } catch (...) {
    c_->files.set(writer_.files());
    throw;
  }
  c_->files.set(writer_.files());
}

}  // namespace mdcast::record
