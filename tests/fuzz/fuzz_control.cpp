// fuzz_control: control frames come from clients (hostile) and from the
// publisher (trusted, but over a stream that can be cut anywhere). This
// target runs parse_control on the input, and FrameAssembler on the input
// fed in pseudo-random pieces, checking that
//   - frames come out the same however the stream is split, and tile it;
//   - a frame that parses re-encodes to the same bytes (the parser accepts
//     nothing the encoders could not have produced, reserved bytes aside);
//   - the shared endpoint's first-frame routing reads only the first 14
//     bytes, and routes every Subscribe that parses to the channel it names
//     (the door never turns away what the channel's service would accept).
//
// Input: byte 0 seeds the split pattern; byte 1 bit 0 says whether to fix
// up the first frame's length and version (so mutations reach the bodies).
#include <algorithm>
#include <cstring>
#include <string>

#include "fuzz_support.hpp"
#include "mdcast/wire/control.hpp"

using namespace mdcast;
using namespace mdcast::wire;
using namespace mdcast::fuzz;

namespace {

// Zeroes the bytes a parser ignores, so a re-encoded frame can be compared.
std::vector<std::byte> canonical(std::span<const std::byte> f, CtlType t) {
  std::vector<std::byte> c(f.begin(), f.end());
  // Header reserved, except in a SubscribeAck, where it is the features.
  if (t != CtlType::kSubscribeAck) c[6] = c[7] = std::byte{0};
  // Reserved bytes after a status (protocol 2: status at 20), and a session
  // status's end sequence, which only travels once the session ended.
  if (t == CtlType::kRetransmitReply && c.size() >= 24) c[21] = c[22] = c[23] = std::byte{0};
  if (t == CtlType::kSnapshotDone && c.size() >= 24) c[21] = c[22] = c[23] = std::byte{0};
  if (t == CtlType::kSessionStatus && c.size() >= 48) {
    c[37] = c[38] = c[39] = std::byte{0};
    if ((static_cast<uint8_t>(c[36]) & 1) == 0) std::fill(c.begin() + 40, c.begin() + 48, std::byte{0});
  }
  return c;
}

std::vector<std::byte> reencode(const ControlFrame& p) {
  return std::visit(
      [&](const auto& b) -> std::vector<std::byte> {
        using T = std::decay_t<decltype(b)>;
        if constexpr (std::is_same_v<T, RetransmitReply>) {
          RetransmitReplyBuilder r(p.request_id, b.session, b.status, b.from_seq, b.oldest_available);
          for (auto d : b.datagrams) FUZZ_CHECK(r.add(d), "builder refused a parsed datagram");
          return std::move(r).finish();
        } else if constexpr (std::is_same_v<T, SnapshotData>) {
          SnapshotDataBuilder s(p.request_id, b.session);
          if (!b.messages.empty()) std::memcpy(s.reserve(b.messages.size()), b.messages.data(), b.messages.size());
          return std::move(s).finish();
        } else {
          return encode_control(p.request_id, b);
        }
      },
      p.body);
}

void check_frame(std::span<const std::byte> f) {
  std::string why;
  const auto p = parse_control(f, &why);
  if (!p) {
    FUZZ_CHECK(!why.empty(), "refused without a reason");
    return;
  }
  const auto t = static_cast<CtlType>(f[ctl::kType]);
  const auto again = reencode(*p);
  const auto want = canonical(f, t);
  FUZZ_CHECK(again.size() == want.size() && std::memcmp(again.data(), want.data(), want.size()) == 0,
             "%s: parsed frame of %zu bytes re-encodes differently (%zu bytes)", std::string(to_string(t)).c_str(),
             f.size(), again.size());
  // Views point inside the frame.
  if (const auto* r = std::get_if<RetransmitReply>(&p->body))
    for (auto d : r->datagrams) FUZZ_CHECK(d.data() >= f.data() && d.data() + d.size() <= f.data() + f.size(), "view");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  uint32_t seed = in.u8() * 2654435761u + 1;
  const uint8_t fix = in.u8();
  auto body = in.rest();
  std::vector<std::byte> s(body.begin(), body.end());
  if ((fix & 1) && s.size() >= ctl::kHeaderSize) {
    store_le<uint32_t>(s.data() + ctl::kLength, static_cast<uint32_t>(s.size()));
    store_le<uint8_t>(s.data() + ctl::kVersion, kVersion);
  }
  const std::span<const std::byte> stream(s);

  check_frame(stream);

  const FirstFrameRoute route = route_first_frame(stream);
  FUZZ_CHECK(route.kind != FirstFrameRoute::Kind::kChannel || s.size() >= ctl::kRouteBytes, "routed on %zu bytes",
             s.size());
  FUZZ_CHECK(route.kind != FirstFrameRoute::Kind::kBad || route.why[0] != '\0', "refused without a reason");
  if (s.size() >= ctl::kRouteBytes) {
    const FirstFrameRoute head = route_first_frame(stream.first(ctl::kRouteBytes));
    FUZZ_CHECK(head.kind == route.kind && head.channel == route.channel, "routing read past the first 14 bytes");
    FUZZ_CHECK(route.kind != FirstFrameRoute::Kind::kNeedMore, "14 bytes and still no answer");
  }
  // More bytes never undo a verdict: a refusal on a prefix stands.
  for (size_t k = 0; k < std::min<size_t>(s.size(), ctl::kRouteBytes); ++k)
    if (route_first_frame(stream.first(k)).kind == FirstFrameRoute::Kind::kBad)
      FUZZ_CHECK(route.kind == FirstFrameRoute::Kind::kBad, "refused on %zu bytes, not on %zu", k, s.size());

  // Reference: the whole stream at once.
  std::vector<std::vector<std::byte>> ref;
  bool ref_bad = false;
  {
    FrameAssembler a(1u << 16);
    a.append(stream);
    std::span<const std::byte> f;
    for (;;) {
      const auto st = a.next(f);
      if (st == FrameAssembler::Status::kFrame) {
        FUZZ_CHECK(f.size() >= ctl::kHeaderSize && load_le<uint32_t>(f.data()) == f.size(), "frame length");
        ref.emplace_back(f.begin(), f.end());
        check_frame(f);
        continue;
      }
      ref_bad = st == FrameAssembler::Status::kBadFrame;
      break;
    }
    size_t covered = 0;
    for (const auto& r : ref) {
      FUZZ_CHECK(std::memcmp(r.data(), s.data() + covered, r.size()) == 0, "frames do not tile the stream");
      covered += r.size();
    }
    FUZZ_CHECK(ref_bad || a.buffered() == s.size() - covered, "buffered %zu, expected %zu", a.buffered(),
               s.size() - covered);
  }
  if (!ref.empty())
    if (const auto first = parse_control(ref[0], nullptr))
      if (const auto* sub = std::get_if<Subscribe>(&first->body))
        FUZZ_CHECK(route.kind == FirstFrameRoute::Kind::kChannel && route.channel == sub->channel,
                   "a Subscribe for channel %u that parses was not routed to it", sub->channel);

  // The same stream in pieces of 1..64 bytes.
  FrameAssembler a(1u << 16);
  size_t off = 0, got = 0;
  bool bad = false;
  while (off < s.size() && !bad) {
    seed = seed * 1103515245u + 12345u;
    const size_t k = std::min<size_t>(1 + (seed >> 16) % 64, s.size() - off);
    a.append(stream.subspan(off, k));
    off += k;
    std::span<const std::byte> f;
    for (;;) {
      const auto st = a.next(f);
      if (st == FrameAssembler::Status::kFrame) {
        FUZZ_CHECK(got < ref.size(), "more frames in pieces than at once");
        FUZZ_CHECK(f.size() == ref[got].size() && std::memcmp(f.data(), ref[got].data(), f.size()) == 0,
                   "frame %zu differs when split", got);
        ++got;
        continue;
      }
      bad = st == FrameAssembler::Status::kBadFrame;
      break;
    }
  }
  FUZZ_CHECK(got == ref.size() && bad == ref_bad, "split: %zu frames (bad %d), at once: %zu (bad %d)", got, bad,
             ref.size(), ref_bad);
  return 0;
}
