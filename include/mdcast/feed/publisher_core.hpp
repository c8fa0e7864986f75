// The medium-independent half of a publisher: validation against the book,
// sequencing (datagram and per-instrument), batching into datagrams built in
// place in the retransmit ring, fragmentation, heartbeats and pacing.
//
// It never sends. Committed datagrams wait in the ring until the medium takes
// them (Publisher<Sink> drains them in order); a medium that pushes back simply
// leaves them there, and publish() back-pressures once `max_unsent` wait.
//
// Single-threaded; all methods are noexcept and allocation-free after
// construction. Construction throws Error for an invalid configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/feed/pacer.hpp"
#include "mdcast/history/retransmit_log.hpp"
#include "mdcast/wire/datagram.hpp"

namespace mdcast::feed {

// A session id for a new run of a publisher: 64 random bits from the kernel,
// never 0. Ids are compared for equality only (a subscriber adopts a new one
// when the control plane confirms it), so a clock step or a long uptime can
// never make a restarted publisher look older.
[[nodiscard]] uint64_t new_session_id();

enum class PublishResult : uint8_t {
  kOk,
  kBackPressured,  // pacing or the medium: try the same message again later
  kRejected,       // invalid for the book (see last_reject()); the feed is unchanged
  kTooLarge,       // above max_message
  kWrongChannel,   // its instrument's channel is not one this publisher (thread) publishes (PublisherChannels)
};

class PublisherCore {
 public:
  // ring_memory: where the retransmit ring lives (a medium may need it
  // registered); empty = allocate it here. counters: where counters live
  // (e.g. a counters file); null = owned here.
  PublisherCore(const PublisherConfig& cfg, std::span<std::byte> ring_memory = {},
                PublisherCounters* counters = nullptr);
  PublisherCore(const PublisherCore&) = delete;
  PublisherCore& operator=(const PublisherCore&) = delete;

  // Validates m, applies it to the book, assigns m.instrument_seq and adds it
  // to the open datagram (committing datagrams as they fill).
  PublishResult stage(wire::Message& m, uint64_t now) noexcept;

  // Commits the open datagram, if any, into the ring. Snapshot and heartbeat
  // code calls this first: book state then equals "all committed datagrams".
  // With Boundaries::kInput only the application's flush() and end of
  // session call it; everything else asks may_seal() first.
  void commit_open(uint64_t now) noexcept;
  [[nodiscard]] bool has_open() const noexcept { return open_count_ > 0; }
  [[nodiscard]] bool flush_due(uint64_t now) const noexcept {
    return open_count_ > 0 && cfg_.boundaries == Boundaries::kTimer && now - open_since_ >= cfg_.flush_interval_ns;
  }
  // Whether the engine itself (a heartbeat, a snapshot copy) may end the open
  // datagram now. With boundaries set by the input it may not: the other
  // member of a pair would cut the same messages elsewhere. Such work waits
  // for the application's flush(), which a feed handler calls at the end of
  // each upstream packet.
  [[nodiscard]] bool may_seal() const noexcept { return open_count_ == 0 || cfg_.boundaries == Boundaries::kTimer; }

  // The session goes on from sequence `next` with `books` (a copy is
  // taken): what a relay does whose upstream took a snapshot, before it
  // forwarded anything (it begins there) or after (it skips what the
  // snapshot covered). Nothing below `next` is served from then on: a
  // subscriber that asks for it is told it is too old and takes a snapshot.
  // Needs no open datagram, everything committed handed to the medium, and
  // `next` past the last committed; false otherwise (nothing changed), or
  // where the books do not fit (then they are not to be used).
  [[nodiscard]] bool begin_at(uint64_t next, const book::BookSet& books) noexcept;
  [[nodiscard]] uint64_t first_sequence() const noexcept { return first_seq_; }
  // The id the next fragmented message is cut under (fragments carry it):
  // a relay gives the upstream's, so its fragments are the origin's bytes
  // however late it began.
  void next_fragment_id(uint32_t id) noexcept { next_message_id_ = id; }

  // Committed datagrams not yet handed to the medium: [next_unsent, last_committed].
  [[nodiscard]] uint64_t next_unsent() const noexcept { return next_unsent_; }
  [[nodiscard]] uint64_t last_committed() const noexcept { return ring_.newest(); }
  [[nodiscard]] std::span<const std::byte> datagram(uint64_t seq) const noexcept { return ring_.get(seq); }
  void mark_sent(uint64_t seq, size_t bytes, uint64_t now) noexcept;
  // A datagram a pair member rebuilt from its input, which its peer sent.
  void mark_replayed(uint64_t seq) noexcept {
    next_unsent_ = seq + 1;
    counters_->datagrams_replayed.add();
  }
  void mark_send_back_pressured() noexcept { counters_->send_back_pressured.add(); }

  // Busy or idle: heartbeats carry the book checksums that catch a silent
  // divergence, and the tail that catches a silent loss, so they go out on a
  // clock, not only after the feed fell quiet.
  [[nodiscard]] bool heartbeat_due(uint64_t now) const noexcept {
    return now - last_heartbeat_ >= cfg_.heartbeat_interval_ns && may_seal();
  }
  // Builds a heartbeat (rotating per-instrument checksums) after committing
  // the open datagram. The span is valid until the next call.
  std::span<const std::byte> build_heartbeat(uint64_t now, bool end_of_session) noexcept;
  void mark_heartbeat_sent(uint64_t now) noexcept {
    last_send_ = now;
    last_heartbeat_ = now;
    counters_->heartbeats_sent.add();
  }

  [[nodiscard]] const PublisherConfig& config() const noexcept { return cfg_; }
  [[nodiscard]] uint64_t session() const noexcept { return session_; }
  // Every datagram and heartbeat from now on carries a tag made with `key`
  // (wire::kFlagTag, instead of a CRC). Setup only: throws mdcast::Error once
  // a datagram was committed, since the feed would change mid-session.
  void tag_with(const wire::DataKey& key);
  [[nodiscard]] bool tagged() const noexcept { return tagged_; }
  [[nodiscard]] const wire::DataKey& data_key() const noexcept { return tag_key_; }
  // The session ended cleanly after end_seq(): what the control plane
  // confirms to a subscriber that saw an end-of-session heartbeat.
  void mark_ended() noexcept {
    if (!ended_) end_seq_ = last_committed();
    ended_ = true;
  }
  [[nodiscard]] bool ended() const noexcept { return ended_; }
  [[nodiscard]] uint64_t end_seq() const noexcept { return end_seq_; }
  [[nodiscard]] const book::BookSet& books() const noexcept { return books_; }
  [[nodiscard]] const history::RetransmitLog& ring() const noexcept { return ring_; }
  [[nodiscard]] const Pacer& pacer() const noexcept { return pacer_; }
  void set_pacing_rate(double r) noexcept {
    pacer_.set_rate(r);
    counters_->pacing_rate.set(static_cast<uint64_t>(r));
  }
  [[nodiscard]] book::ApplyResult last_reject() const noexcept { return last_reject_; }
  [[nodiscard]] const PublisherCounters& counters() const noexcept { return *counters_; }
  [[nodiscard]] size_t datagram_capacity() const noexcept {
    return cfg_.max_datagram - wire::dgram::kHeaderSize - (tagged_ ? wire::dgram::kTagSize : 0);
  }

 private:
  void open(uint64_t now) noexcept;
  void seal(uint64_t now) noexcept;
  // The integrity flag every datagram of this publisher carries, and its seal.
  [[nodiscard]] uint8_t check_flag() const noexcept {
    return tagged_ ? wire::kFlagTag : (cfg_.crc ? wire::kFlagCrc : 0);
  }
  [[nodiscard]] size_t trailer() const noexcept { return tagged_ ? wire::dgram::kTagSize : 0; }
  void seal_check(std::span<std::byte> d) const noexcept;
  PublishResult stage_fragmented(wire::Message& m, const book::BookSet::Checked& checked, size_t size,
                                 uint64_t now) noexcept;

  PublisherConfig cfg_;
  uint64_t session_;
  bool tagged_ = false;
  wire::DataKey tag_key_{};
  MappedMemory owned_ring_;
  history::RetransmitLog ring_;
  book::BookSet books_;
  Pacer pacer_;
  std::unique_ptr<PublisherCounters> owned_counters_;
  PublisherCounters* counters_;

  // The open datagram (built in its ring slot).
  std::byte* open_ = nullptr;
  size_t open_len_ = 0;
  uint16_t open_count_ = 0;
  uint64_t open_since_ = 0;

  uint64_t next_unsent_ = 1;
  uint64_t first_seq_ = 1;  // begin_at's, else 1
  uint64_t last_send_ = 0;
  uint64_t last_heartbeat_ = 0;
  bool ended_ = false;
  uint64_t end_seq_ = 0;
  uint32_t next_message_id_ = 1;
  uint32_t hb_cursor_ = 0;
  book::ApplyResult last_reject_ = book::ApplyResult::kOk;
  std::unique_ptr<std::byte[]> scratch_;    // encoded form of a message being fragmented
  std::unique_ptr<std::byte[]> heartbeat_;  // heartbeat datagram
};

}  // namespace mdcast::feed
