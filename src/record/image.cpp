#include "mdcast/record/image.hpp"

#include "mdcast/record/writer.hpp"

namespace mdcast::record {

ImageWriter::ImageWriter() : buf_(std::make_unique<std::byte[]>(kImageChunk + wire::kMaxMessage)) {}

uint32_t ImageWriter::write(RecordingWriter& w, const book::BookSet& books, uint64_t next_seq,
                            uint64_t realtime_ns) noexcept {
  uint32_t frames = 0;
  size_t used = 0;
  for_each_image_message(books, [&](const wire::Message& m) noexcept {
    const size_t n = wire::encoded_size(m);
    if (used + n > kImageChunk) {
      frames += w.mark({MarkerKind::kImage, next_seq, 0, {buf_.get(), used}}, realtime_ns);
      used = 0;
    }
    wire::encode(m, buf_.get() + used);
    used += n;
    return true;
  });
  // The last frame goes even when empty (books with nothing in them): it is what says the image is whole.
  frames += w.mark({MarkerKind::kImage, next_seq, 1, {buf_.get(), used}}, realtime_ns);
  return frames;
}

}  // namespace mdcast::record
