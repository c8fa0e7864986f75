// ControlService: retransmit requests. Served from the ring, filtered for a
// partially entitled client, within the client's datagram budget.
//
// Coalescing: a storm of identical requests in one poll (many subscribers
// missing the same datagrams) is answered by copying the first reply and
// patching its request id. The copy is the floor: ReplySink takes each
// client's frame by value, so every client's reply is its own buffer, but
// the ring is read (and filtered) once, and one memcpy replaces a loop of
// small ones. A reply is kept only when its key repeats, so a poll of
// distinct requests pays nothing for it; a few keys are remembered, so a
// storm that mixes entitlements coalesces per entitlement.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mdcast/core/crc32c.hpp"
#include "mdcast/feed/control_service.hpp"

namespace mdcast::feed {

using namespace wire;

std::span<const std::byte> ControlService::filter_datagram(std::span<const std::byte> d, const Client& cl) {
  std::byte* o = filter_buf_.data();
  std::memcpy(o, d.data(), dgram::kHeaderSize);
  size_t len = dgram::kHeaderSize;
  uint16_t count = 0;
  MessageCursor cur = MessageCursor::payload_of(d);
  MessageView v;
  while (cur.next(v)) {
    bool keep = true;
    if (v.type() == MsgType::kFragment)
      keep = entitled(cl, FragmentView(v).instrument());
    else if (is_market_data(v.type()))
      keep = entitled(cl, v.instrument());
    if (!keep) continue;
    std::memcpy(o + len, v.data(), v.size());
    len += v.size();
    ++count;
  }
  store_le<uint8_t>(o + dgram::kFlags, static_cast<uint8_t>(load_le<uint8_t>(o + dgram::kFlags) | kFlagFiltered));
  store_le<uint16_t>(o + dgram::kMessageCount, count);
  // The copy differs from what was tagged: sealed again, with the same key
  // (the tag is nonce-free, so the sequence may carry two different bytes).
  const bool tagged = (load_le<uint8_t>(o + dgram::kFlags) & kFlagTag) != 0;
  if (tagged) len += dgram::kTagSize;
  store_le<uint16_t>(o + dgram::kLength, static_cast<uint16_t>(len));
  if (tagged)
    seal_tag({o, len}, core_.data_key());
  else if (load_le<uint8_t>(o + dgram::kFlags) & kFlagCrc)
    seal_crc({o, len});
  return {o, len};
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const RetransmitRequest& r, uint64_t now,
                            ReplySink& out) {
  if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "retransmit before subscribe", out);
  ++cl.retransmit_requests;
  if (r.from_seq == 0 || r.count == 0)
    return reject(c, cl, rid, ErrorCode::kMalformed, "retransmit of an empty range or from sequence 0", out);
  // Every request costs a token, every datagram served one more than that
  // first: a flood of tiny or hopeless requests drains the bucket too.
  TokenBucket& budget = cl.retransmit_budget;
  const double have = budget.available(now);
  if (have < 1) {
    return overloaded(c, rid, fmt::format("retransmit of {} datagrams from {} refused: this client's retransmit budget is spent",
                                  r.count, r.from_seq),
                      budget.wait_ns(r.count), out);
  }
  const history::RetransmitLog& ring = core_.ring();
  auto status = RetransmitStatus::kOk;
  if (r.session != core_.session())
    status = RetransmitStatus::kWrongSession;
  else if (r.from_seq > ring.newest())
    status = RetransmitStatus::kNotYet;
  else if (ring.oldest() == 0 || r.from_seq < ring.oldest())
    status = RetransmitStatus::kTooOld;
  if (status != RetransmitStatus::kOk) {
    budget.take(1);
    if (status == RetransmitStatus::kTooOld) counters_->retransmit_too_old.add();
    out.send(c, RetransmitReplyBuilder(rid, core_.session(), status, r.from_seq, ring.oldest()).finish());
    return true;
  }
  // from_seq <= newest here, so the sums cannot overflow.
  const uint64_t asked_last = std::min<uint64_t>(ring.newest(), r.from_seq + r.count - 1);
  const auto allowed = static_cast<uint64_t>(std::floor(have));
  const uint64_t last = std::min(asked_last, r.from_seq + allowed - 1);
  if (last < asked_last) counters_->retransmit_partial.add();  // the client asks again for the rest
  const bool all = !cl.entitlement || cl.entitlement->all;
  const ReplyKey key{now, r.from_seq, last, ring.oldest(), ring.newest(), all ? nullptr : cl.entitlement};

  ReplyCopy* seen = nullptr;
  for (auto& e : reply_copies_)
    if (e.key == key) seen = &e;
  std::vector<std::byte> frame;
  uint32_t served = 0;
  if (seen && seen->kept) {
    frame = seen->frame;
    store_le<uint32_t>(frame.data() + ctl::kRequestId, rid);
    served = seen->served;
    counters_->retransmit_coalesced.add();
  } else {
    RetransmitReplyBuilder b(rid, core_.session(), status, r.from_seq, ring.oldest());
    for (uint64_t s = r.from_seq; s <= last; ++s) {
      auto d = ring.get(s);
      if (d.empty()) break;
      const auto bytes = all ? d : filter_datagram(d, cl);
      // A reply always carries the first datagram: one without any would be
      // asked for again at once, forever.
      if (!b.add(bytes, b.count() == 0 ? ctl::kMaxFrame : cfg_.max_reply_bytes)) break;
    }
    served = b.count();
    frame = std::move(b).finish();
    if (seen) {  // the second time in this poll: a storm, keep a copy for the next
      seen->frame = frame;
      seen->served = served;
      seen->kept = true;
    } else {
      ReplyCopy& e = reply_copies_[next_copy_++ % kReplyCopies];
      e.key = key;
      e.kept = false;
    }
  }
  budget.take(std::max<uint32_t>(1, served));
  counters_->retransmit_requests.add();
  counters_->datagrams_retransmitted.add(served);
  cl.datagrams_retransmitted += served;
  if (served > 0) ++cl.recoveries;
  out.send(c, std::move(frame));
  return true;
}

}  // namespace mdcast::feed
