// Subscriber<Handler>: exact, in-order delivery over an unreliable medium.
//
// Datagrams arrive through on_datagram() from one or two rails (A/B
// arbitration: the first copy of each sequence wins) and from retransmit
// replies. The engine delivers every message of its instrument filter exactly
// once and in order, or - when history is gone - replaces a range by a
// snapshot of the books, never a silent hole:
//
//   live      seq == next: deliver in place (zero-copy), then drain the window
//   gap       seq >  next: copy into the window, ask for the missing runs
//             (after `reorder_wait`), several requests in flight
//   snapshot  a gap too old or too large, retries exhausted, or the window
//             overflowed: ask for the books at some S, keep buffering, then
//             resume at S+1 from the window
//
// Per-instrument sequences back this up: an instrument whose sequence jumps,
// whose book refuses a message, or whose checksum disagrees with a heartbeat
// is recovered alone (a single-instrument snapshot, its messages held until
// it arrives) while the others keep flowing.
//
// This template is the live path only: the in-order datagram is validated,
// walked, filtered, checked against its instruments' sequences, applied to
// the books and handed to the Handler right here, inlined into the caller's
// loop. Everything else - the window, requests, snapshots, sessions,
// heartbeats, the control plane - is SubscriberCore (subscriber_core.hpp),
// compiled once; it reaches the Handler through a virtual call per recovered
// datagram or event, never per live message.
//
// The engine is a media::ControlEvents (through SubscriberCore): a medium's
// poll_control(ControlEvents&) drives it directly.
//
// Handler requirements (called on this thread, from within on_datagram /
// on_control_frame / on_retransmitted / poll; must not call back into the
// engine):
//   void on_message(const wire::Message&, const Delivery&) noexcept;
//   void on_snapshot(uint32_t instrument, const book::BookSet*) noexcept;  // book replaced
//   void on_reset(uint64_t new_session) noexcept;                          // every book cleared
// and optionally
//   void on_event(SubscriberEvent, std::string_view detail) noexcept;
//   void on_datagram_delivered(std::span<const std::byte> datagram, const Delivery&) noexcept;
//
// on_datagram_delivered is for recorders (a capture of the stream as it was
// delivered, a replay log): it sees each sequenced datagram once, in sequence
// order, live and recovered alike, just before that datagram's messages are
// delivered - whether or not any of them passes the filter or is held for an
// instrument's recovery. The bytes are the datagram as validated, valid
// during the call only. Datagrams a snapshot replaced are never delivered, so
// the hook skips them: after a full snapshot (on_snapshot for every filtered
// instrument) the next sequence it sees is the snapshot's + 1; after a new
// session (on_reset) the sequence starts over. Heartbeats are not sequenced
// and not passed. A Handler without the member pays nothing for it.
//
// The data path (on_datagram in the live state) allocates nothing, throws
// nothing and makes no virtual call per message. No datagram, in order or
// not, sends a control request: what it raises is marked due and goes out
// from the next poll() (SubscriberCore, "Requests leave the data path").
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string_view>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/feed/subscriber_core.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::feed {

namespace detail {
// Converts to a session id's type and to nothing else, so that a handler
// whose on_reset takes a narrower integer (and would truncate the 64-bit
// session) does not satisfy SubscriberHandler.
struct SessionIdArg {
  template <class T>
    requires std::same_as<T, uint64_t>
  operator T() const noexcept {
    return 0;
  }
};
}  // namespace detail

template <class H>
concept SubscriberHandler = requires(H& h, const wire::Message& m, const Delivery& d, uint32_t instrument,
                                     const book::BookSet* b, detail::SessionIdArg session) {
  h.on_message(m, d);
  h.on_snapshot(instrument, b);
  h.on_reset(session);
};

template <SubscriberHandler Handler>
class Subscriber final : public SubscriberCore {
 public:
  Subscriber(const SubscriberConfig& cfg, Handler& handler, ControlChannel* control,
             SubscriberCounters* counters = nullptr)
      : SubscriberCore(cfg, control, counters), handler_(handler) {}

  void on_datagram(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept;

 private:
  static constexpr bool kHasDatagramHook =
      requires(Handler& h, std::span<const std::byte> d, const Delivery& dl) { h.on_datagram_delivered(d, dl); };
  static constexpr bool kHasEvents =
      requires(Handler& h, SubscriberEvent e, std::string_view s) { h.on_event(e, s); };

  void deliver(std::span<const std::byte> d, const wire::DatagramHeader& h, uint64_t received,
               bool recovered) noexcept;
  // Inlined into deliver's loop: a call per message costs measurably there.
  [[gnu::always_inline]] inline void process(wire::MessageView v, const Delivery& dl) noexcept;

  // SubscriberCore's way to the handler (the recovery path).
  void receive_recovered(std::span<const std::byte> d, uint64_t now) noexcept override {
    on_datagram(d, Rail::kRecovery, now);
  }
  void receive_awaited(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept override {
    on_datagram(d, rail, now);
  }
  void deliver_buffered(std::span<const std::byte> d, const wire::DatagramHeader& h,
                        uint64_t received) noexcept override {
    deliver(d, h, received, true);
  }
  void replay_held(wire::MessageView v, const Delivery& dl) noexcept override { process(v, dl); }
  void notify_snapshot(uint32_t inst, const book::BookSet* b) noexcept override { handler_.on_snapshot(inst, b); }
  void notify_reset(uint64_t session) noexcept override { handler_.on_reset(session); }
  void notify_event(SubscriberEvent e, std::string_view detail) noexcept override {
    if constexpr (kHasEvents) handler_.on_event(e, detail);
  }

  Handler& handler_;
};

template <SubscriberHandler Handler>
void Subscriber<Handler>::on_datagram(std::span<const std::byte> d, Rail rail, uint64_t now) noexcept {
  wire::DatagramHeader h;
  uint32_t unknown = 0;
  const wire::DatagramCheck chk = wire::validate_datagram(d, h, &unknown);
  if (rail == Rail::kRecovery)
    counters_->datagrams_recovered.add();
  else
    counters_->datagrams_received.add();
  // On a feed that tags its data nothing below reads an unchecked datagram;
  // what is malformed, of another channel or our own is left to admit() to count.
  if (tags_required() && chk == wire::DatagramCheck::kOk && h.channel == cfg_.channel &&
      (cfg_.sender_id == 0 || h.sender != cfg_.sender_id) && !authentic(d, h, rail, now))
    return;
  // One test passes the usual datagram; which check failed (and whether a
  // new session begins) is worked out, and counted, out of line.
  if (chk != wire::DatagramCheck::kOk || d.size() > cfg_.max_datagram || h.channel != cfg_.channel ||
      (cfg_.sender_id != 0 && h.sender == cfg_.sender_id) || h.session != session_) [[unlikely]] {
    if (!admit(h, chk, d.size())) return;
  }
  if (unknown) counters_->unknown_messages.add(unknown);
  last_rx_ = now;
  rail_rx_[static_cast<uint8_t>(rail)] = now;
  if (publisher_silent_) [[unlikely]]
    publisher_back();
  if (!h.sequenced()) {
    on_unsequenced(d, h, rail, now);
    return;
  }
  const uint64_t seq = h.sequence;
  if (seq > highest_seen_) {
    // Beyond the window is a claim the control plane confirms first.
    if ((seq >= ahead_limit() || seq >= confirm_limit_) && !plausible_ahead(seq, true)) [[unlikely]]
      return;
    highest_seen_ = seq;
    counters_->highest_sequence.set(seq);
  }
  if (seq < next_seq_) {
    counters_->duplicates.add();
    return;
  }
  if (mode_ == Mode::kLive && seq == next_seq_) [[likely]] {
    // The common case: in order, delivered straight from the medium's buffer.
    rail_first(rail);
    deliver(d, h, now, rail == Rail::kRecovery);
    ++next_seq_;
    // Nothing is ever buffered above highest_seen_, so with next_seq_ past it
    // (no gap) and no full recovery started by this datagram, the window has
    // nothing to drain: no need to look (a division) per datagram.
    if (mode_ != Mode::kLive || next_seq_ <= highest_seen_) [[unlikely]] {
      drain(now);
      return;
    }
    counters_->next_sequence.set(next_seq_);
    gap_open_ = false;
    return;
  }
  store(d, seq, rail, now);
}

template <SubscriberHandler Handler>
void Subscriber<Handler>::deliver(std::span<const std::byte> d, const wire::DatagramHeader& h, uint64_t received,
                                  bool recovered) noexcept {
  counters_->datagrams_delivered.add();
  const Delivery dl{h.sequence, h.send_time_ns, received, recovered};  // received: when it arrived
  if constexpr (kHasDatagramHook) handler_.on_datagram_delivered(d, dl);
  wire::MessageCursor cur = wire::MessageCursor::payload_of(d);
  wire::MessageView v;
  while (cur.next(v)) {
    const auto t = static_cast<uint8_t>(v.type());
    if (t == static_cast<uint8_t>(wire::MsgType::kFragment)) [[unlikely]] {
      wire::MessageView whole;
      if (reassemble(wire::FragmentView(v), whole)) process(whole, dl);
      continue;
    }
    if (t < static_cast<uint8_t>(wire::MsgType::kInstrumentDefinition) ||
        t > static_cast<uint8_t>(wire::MsgType::kOpaque) ||
        t == static_cast<uint8_t>(wire::MsgType::kSnapshotChunk) ||
        t == static_cast<uint8_t>(wire::MsgType::kHeartbeat))
      continue;  // unknown types were counted at validation; others do not belong here
    process(v, dl);
  }
}

template <SubscriberHandler Handler>
void Subscriber<Handler>::process(wire::MessageView v, const Delivery& dl) noexcept {
  const uint32_t inst = v.instrument();
  if (!wants(inst)) {
    counters_->messages_filtered.add();
    return;
  }
  if (irec_of_[inst] != kNoRec) [[unlikely]] {
    hold(inst, v, dl);
    return;
  }
  const uint32_t iseq = v.instrument_seq();
  if (iseq != last_iseq_[inst] + 1) [[unlikely]] {
    out_of_sequence(inst, v, dl);
    return;
  }
  const wire::Message m = wire::decode(v);
  if (books_) {
    const book::ApplyResult r = books_->apply(m);
    if (r != book::ApplyResult::kOk && r != book::ApplyResult::kIgnored) [[unlikely]] {
      book_refused(inst, v, dl);
      return;
    }
    books_->set_instrument_seq(inst, iseq);
  }
  last_iseq_[inst] = iseq;
  counters_->messages_delivered.add();
  handler_.on_message(m, dl);
}

}  // namespace mdcast::feed
