// Publisher<Sink>: PublisherCore bound to one medium's sink (a
// media::DatagramSink, mdcast/media/medium.hpp). The sink is a template
// parameter, chosen once at setup: no virtual call per datagram.
// kBackPressured means "not now": the datagram stays in the ring and is
// offered again, in order, on the next publish()/poll().
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::feed {

using media::DatagramSink;
using media::SendResult;

template <DatagramSink Sink>
class Publisher {
 public:
  Publisher(const PublisherConfig& cfg, Sink& sink, std::span<std::byte> ring_memory = {},
            PublisherCounters* counters = nullptr)
      : core_(cfg, ring_memory, counters),
        sink_(sink),
        drill_(cfg.drill && cfg.drill->point() == DrillPoint::kFragment ? cfg.drill : nullptr) {}

  // Contract: see PublishResult. On kOk, m.instrument_seq holds the assigned
  // per-instrument sequence.
  PublishResult publish(wire::Message& m, uint64_t now) noexcept {
    drain(now);
    const PublishResult r = core_.stage(m, now);
    if (r == PublishResult::kOk) drain(now);
    return r;
  }

  // A burst of messages due together, on a medium that takes batches: stage
  // each (sequenced, packed, committed as publish() would) and hand what is
  // committed to the medium once, with send_committed: one sendmmsg for the
  // burst instead of one per datagram. Same results as publish().
  PublishResult stage(wire::Message& m, uint64_t now) noexcept { return core_.stage(m, now); }
  void send_committed(uint64_t now) noexcept { drain(now); }
  // Committed datagrams not yet handed to the medium.
  [[nodiscard]] uint64_t unsent() const noexcept { return core_.last_committed() + 1 - core_.next_unsent(); }

  // Seals the open datagram and sends everything committed.
  void flush(uint64_t now) noexcept {
    core_.commit_open(now);
    drain(now);
  }
  // Seals the open datagram without sending: the end of an upstream packet
  // in a burst on a medium that takes batches (send_committed sends it).
  void seal(uint64_t now) noexcept { core_.commit_open(now); }

  // A pair member catching up (runtime/pair_member.hpp): datagrams through
  // `seq` are its peer's, already on the wire. They are committed to the
  // ring as any (retransmits and snapshots serve them) but never handed to
  // the medium; the peer's subscribers have them, and this member's rail
  // joins the feed at the datagram after.
  void replay_through(uint64_t seq) noexcept { replay_through_ = seq; }

  // Call from the duty loop: time-bound flush, retries, heartbeats when idle.
  void poll(uint64_t now) noexcept {
    if (core_.flush_due(now)) core_.commit_open(now);
    drain(now);
    if (core_.next_unsent() > core_.last_committed() && core_.heartbeat_due(now)) send_heartbeat(now, core_.ended());
  }

  // Flushes and announces a clean end of session; returns false while the
  // medium still holds back committed datagrams (call again). Heartbeats
  // from poll() repeat the announcement afterwards, for receivers that lost it.
  bool end_session(uint64_t now) noexcept {
    flush(now);
    core_.mark_ended();  // later heartbeats repeat the announcement; the control plane confirms it
    if (core_.next_unsent() <= core_.last_committed()) return false;
    return send_heartbeat(now, true);
  }

  [[nodiscard]] PublisherCore& core() noexcept { return core_; }
  [[nodiscard]] const PublisherCore& core() const noexcept { return core_; }

 private:
  void drain(uint64_t now) noexcept {
    if (replay_through_ >= core_.next_unsent()) [[unlikely]] {
      const uint64_t last = std::min(replay_through_, core_.last_committed());
      for (uint64_t s = core_.next_unsent(); s <= last; ++s) core_.mark_replayed(s);
    }
    if (drill_) [[unlikely]] {
      send_each<true>(now);
      return;
    }
    if constexpr (media::BatchSink<Sink>) {
      // Everything committed in one call where the medium takes batches.
      static constexpr size_t kBatch = 32;
      while (core_.next_unsent() <= core_.last_committed()) {
        media::Outgoing batch[kBatch];
        size_t n = 0;
        for (uint64_t s = core_.next_unsent(); s <= core_.last_committed() && n < kBatch; ++s, ++n)
          batch[n] = {core_.datagram(s), s};
        const size_t taken = sink_.send_batch({batch, n});
        for (size_t i = 0; i < taken; ++i) core_.mark_sent(batch[i].sequence, batch[i].bytes.size(), now);
        if (taken < n) {
          core_.mark_send_back_pressured();
          return;
        }
      }
    } else {
      send_each<false>(now);
    }
  }

  // One datagram at a time; with a fragment drill (kDrill), so that the
  // process can die right after one that ends inside a fragmented message.
  template <bool kDrill>
  void send_each(uint64_t now) noexcept {
    for (uint64_t s = core_.next_unsent(); s <= core_.last_committed(); ++s) {
      const auto d = core_.datagram(s);
      if (sink_.send(d, s) != SendResult::kSent) {
        core_.mark_send_back_pressured();
        return;
      }
      core_.mark_sent(s, d.size(), now);
      if constexpr (kDrill)
        if (drill_->armed() && ends_inside_fragmented(d)) drill_->at(DrillPoint::kFragment);
    }
  }

  static bool ends_inside_fragmented(std::span<const std::byte> d) noexcept {
    auto cursor = wire::MessageCursor::payload_of(d);
    wire::MessageView v, last;
    while (cursor.next(v)) last = v;
    if (last.size() == 0 || last.type() != wire::MsgType::kFragment) return false;
    const wire::FragmentView f(last);
    return f.index() + 1 < f.count();
  }

  bool send_heartbeat(uint64_t now, bool end) noexcept {
    const auto d = core_.build_heartbeat(now, end);
    drain(now);  // build_heartbeat may have committed an open datagram
    if (core_.next_unsent() <= core_.last_committed()) return false;
    if (sink_.send_unsequenced(d) != SendResult::kSent) return false;
    core_.mark_heartbeat_sent(now);
    return true;
  }

  PublisherCore core_;
  Sink& sink_;
  const CrashDrill* drill_;  // a fragment drill, or null
  uint64_t replay_through_ = 0;
};

}  // namespace mdcast::feed
