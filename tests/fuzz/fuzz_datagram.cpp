// fuzz_datagram: validate_datagram is the one bounds-checked pass over bytes
// from the network; after kOk everything downstream reads unchecked. This
// target validates, then walks and decodes every message exactly as
// Subscriber::deliver() does (views, fragments through a Reassembler and the
// reassembled bytes validated again) - under ASan any read the validation
// failed to bound is a crash. It also checks the validator's own claims.
//
// Input: byte 0 selects the mode. Odd: the rest is a raw datagram. Even: the
// rest is a message run and the header is built around it (magic, version,
// length, count, CRC all correct), so mutations reach message validation
// instead of dying at the magic number.
#include <cstring>

#include "fuzz_support.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "mdcast/wire/datagram.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::fuzz;

namespace {

std::vector<std::byte> wrap(std::span<const std::byte> run, uint8_t flags, uint64_t seq) {
  std::vector<std::byte> d(dgram::kHeaderSize + run.size());
  DatagramHeader h;
  h.flags = flags;
  h.channel = 1;
  const int n = validate_message_run(run.data(), run.size());
  h.message_count = static_cast<uint16_t>(n < 0 ? 0 : n);
  h.session = 7;
  h.sender = 9;
  h.sequence = seq;
  h.length = static_cast<uint16_t>(d.size());
  write_header(d.data(), h);
  if (!run.empty()) std::memcpy(d.data() + dgram::kHeaderSize, run.data(), run.size());
  if (flags & kFlagCrc) seal_crc(d);
  return d;
}

// Everything Subscriber::deliver/process/handle_unsequenced reads.
void walk(std::span<const std::byte> d, const DatagramHeader& h, uint32_t unknown) {
  // Per input (not static): a crash must reproduce from its input alone.
  feed::Reassembler reasm(2, 4096);
  MessageCursor cur = MessageCursor::payload_of(d);
  MessageView v;
  size_t total = 0;
  uint32_t n = 0, unknown_seen = 0;
  uint64_t sink = 0;  // keeps the reads from being optimised away
  while (cur.next(v)) {
    ++n;
    total += v.size();
    FUZZ_CHECK(v.size() >= msg::kHeaderSize, "message of %u bytes after validation", v.size());
    const MessageCheck c = validate_message(v.data(), v.size());
    FUZZ_CHECK(c == MessageCheck::kOk || c == MessageCheck::kUnknownType, "validated datagram holds a bad message");
    if (c == MessageCheck::kUnknownType) {
      ++unknown_seen;
      continue;
    }
    switch (v.type()) {
      case MsgType::kHeartbeat: {
        const HeartbeatView hb(v);
        sink += hb.last_seq() + hb.global_checksum() + hb.instrument_count();
        for (uint16_t i = 0; i < hb.entry_count(); ++i) sink += hb.entry(i).checksum + hb.entry(i).instrument;
        break;
      }
      case MsgType::kSnapshotChunk: {
        const SnapshotChunkView sc(v);
        sink += sc.snapshot_seq() + sc.chunk_index() + sc.chunk_count() + static_cast<uint64_t>(sc.status());
        for (uint16_t i = 0; i < sc.order_count(); ++i) {
          const auto e = sc.order(i);
          FUZZ_CHECK(e.side == Side::kBuy || e.side == Side::kSell, "chunk entry side %d", static_cast<int>(e.side));
          sink += e.order_id + e.quantity;
        }
        break;
      }
      case MsgType::kFragment: {
        const FragmentView f(v);
        FUZZ_CHECK(f.index() < f.count() && f.count() >= 2, "fragment index/count");
        FUZZ_CHECK(!f.payload().empty(), "empty fragment");
        std::span<const std::byte> whole;
        if (reasm.add(f, whole) == feed::Reassembler::Result::kComplete) {
          FUZZ_CHECK(whole.size() == f.total_length(), "reassembled %zu of %u", whole.size(), f.total_length());
          // As deliver() does: the reassembled bytes are validated before use.
          const uint16_t len = whole.size() >= 2 ? load_le<uint16_t>(whole.data()) : uint16_t{0};
          if (len == whole.size() && validate_message(whole.data(), len) == MessageCheck::kOk &&
              is_market_data(static_cast<MsgType>(whole[msg::kType])) &&
              static_cast<MsgType>(whole[msg::kType]) != MsgType::kSnapshotChunk) {
            const Message m = decode(MessageView(whole.data(), len));
            sink += m.instrument + encoded_size(m);
          }
        }
        break;
      }
      default: {
        // Market data: the instrument fields, then the decoded value, which
        // must re-encode to a message of the same size that validates.
        const Message m = decode(v);
        sink += v.instrument() + v.instrument_seq();
        const size_t size = encoded_size(m);
        FUZZ_CHECK(size == v.size(), "%s re-encodes to %zu bytes, was %u", std::string(to_string(m.type)).c_str(),
                   size, v.size());
        std::vector<std::byte> again(size);
        encode(m, again.data());
        FUZZ_CHECK(validate_message(again.data(), static_cast<uint16_t>(size)) == MessageCheck::kOk,
                   "re-encoded message invalid");
        // Same bytes, except reserved ones the encoder zeroes.
        FUZZ_CHECK(std::memcmp(again.data(), v.data(), msg::kMdHeaderSize) == 0 ||
                       load_le<uint8_t>(v.data() + msg::kFlags) != 0,
                   "message header changed in a round trip");
        break;
      }
    }
  }
  const size_t trailer = (h.flags & kFlagTag) ? dgram::kTagSize : 0;
  FUZZ_CHECK(total + dgram::kHeaderSize + trailer == h.length, "messages cover %zu of %u bytes", total, h.length);
  FUZZ_CHECK(payload_size(d) == total, "payload_size %zu, messages %zu", payload_size(d), total);
  FUZZ_CHECK(!((h.flags & kFlagTag) && (h.flags & kFlagCrc)), "a tag and a CRC accepted together");
  FUZZ_CHECK(n == h.message_count, "walked %u messages, header says %u", n, h.message_count);
  FUZZ_CHECK(unknown_seen == unknown, "unknown count %u vs %u", unknown_seen, unknown);
  FUZZ_CHECK(validate_message_run(d.data() + dgram::kHeaderSize, payload_size(d)) ==
                 static_cast<int>(n),
             "validate_message_run disagrees");
  if (h.flags & kFlagTag) {
    // Whatever its bytes, a tag made with a key is accepted with that key only.
    std::vector<std::byte> copy(d.begin(), d.end());
    DataKey k{};
    seal_tag(copy, k);
    FUZZ_CHECK(tag_ok(copy, k), "a sealed tag does not check");
    k[0] = std::byte{1};
    FUZZ_CHECK(!tag_ok(copy, k), "a tag checks with another key");
  }
  if (h.flags & kFlagCrc) {
    std::vector<std::byte> copy(d.begin(), d.end());
    seal_crc(copy);
    FUZZ_CHECK(std::memcmp(copy.data(), d.data(), d.size()) == 0, "CRC accepted but resealing changes it");
  }
  if (sink == 0x5555555555555555ull) std::fputc(' ', stderr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const uint8_t mode = in.u8();
  std::vector<std::byte> built;
  std::span<const std::byte> d;
  if (mode & 1) {
    d = in.rest();
  } else {
    const uint8_t flags = static_cast<uint8_t>(in.u8() & kKnownDatagramFlags);
    const uint64_t seq = in.u8();
    auto run = in.rest();
    if (run.size() > kMaxDatagram - dgram::kHeaderSize) run = run.first(kMaxDatagram - dgram::kHeaderSize);
    built = wrap(run, flags, seq);
    d = built;
  }
  DatagramHeader h;
  uint32_t unknown = 0;
  const DatagramCheck c = validate_datagram(d, h, &unknown);
  if (c != DatagramCheck::kOk) {
    FUZZ_CHECK(!to_string(c).empty(), "no reason text");
    return 0;
  }
  FUZZ_CHECK(h.length == d.size() && d.size() >= dgram::kHeaderSize && d.size() <= kMaxDatagram, "length");
  FUZZ_CHECK(h.sequence != 0 || !h.sequenced(), "sequence 0 accepted");
  FUZZ_CHECK((h.flags & ~kKnownDatagramFlags) == 0, "unknown flags accepted");
  walk(d, h, unknown);
  return 0;
}
