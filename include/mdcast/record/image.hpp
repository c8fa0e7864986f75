// A book image: the books as messages - for each instrument with anything in
// it, its definition, its trading status (unless pre-open, where every book
// starts) and its resting orders, in that order, so that publishing them onto
// empty books rebuilds the books. The one framing of a recording's books:
//
//   the recorder writes it after a gap marker (the books a snapshot left), in
//     image frames of at most kImageChunk bytes of messages (ImageWriter);
//   a replay publishes it at --from (the books rebuilt up to there) and, read
//     back from those frames, after a recorded gap (for_each_image_message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "mdcast/book/order_book.hpp"
#include "mdcast/record/marker.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::record {

class RecordingWriter;

// An image frame's messages at most: a frame stays well inside one UDP datagram.
inline constexpr size_t kImageChunk = 60'000;

// Calls fn(const wire::Message&) for each message of the books' image; fn
// returns false to stop there. False when stopped.
template <class Fn>
bool for_each_image_message(const book::BookSet& books, Fn&& fn) {
  for (uint32_t i = 0; i < books.max_instruments(); ++i) {
    const book::OrderBook& b = books.book(i);
    if (!b.defined() && b.order_count() == 0 && b.status() == wire::TradingStatus::kPreOpen) continue;
    if (b.defined()) {
      wire::Message m;
      m.type = wire::MsgType::kInstrumentDefinition;
      m.instrument = i;
      m.definition = b.definition();
      if (!fn(m)) return false;
    }
    if (b.status() != wire::TradingStatus::kPreOpen) {
      wire::Message m;
      m.type = wire::MsgType::kTradingStatus;
      m.instrument = i;
      m.status = {b.status()};
      if (!fn(m)) return false;
    }
    bool go = true;
    books.for_each_order(i, [&](const book::Order& o) {
      if (go) go = fn(wire::Message::make_add(i, o.id, o.price, o.quantity, o.side));
    });
    if (!go) return false;
  }
  return true;
}

// The messages of one image frame as read back (a kImage marker, whose
// message run decode_marker validated).
template <class Fn>
bool for_each_image_message(const Marker& image, Fn&& fn) {
  wire::MessageCursor cur(image.messages.data(), image.messages.size());
  wire::MessageView v;
  while (cur.next(v)) {
    const wire::Message m = wire::decode(v);
    if (!fn(m)) return false;
  }
  return true;
}

// Writes book images as image frames into a recording. The frame buffer is
// allocated once, here: write() is noexcept and allocation-free.
class ImageWriter {
 public:
  ImageWriter();
  ImageWriter(ImageWriter&&) noexcept = default;
  ImageWriter& operator=(ImageWriter&&) noexcept = default;

  // The image of `books` as frames marked for `next_seq` (the sequence
  // recorded after it), the last one flagged. Returns the frames written (a
  // frame the writer failed to write is not counted).
  uint32_t write(RecordingWriter& w, const book::BookSet& books, uint64_t next_seq, uint64_t realtime_ns) noexcept;

 private:
  std::unique_ptr<std::byte[]> buf_;
};

}  // namespace mdcast::record
