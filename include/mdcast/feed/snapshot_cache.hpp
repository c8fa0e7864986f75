// The publisher's books serialized once, at one sequence, for every client
// that asks for a snapshot: the control service answers full,
// per-instrument and entitlement-filtered requests by copying slices of it,
// so the work of a snapshot request is a memcpy of what the client is
// sent, not a walk over every book.
//
// A copy is immutable once built and shared (shared_ptr) by the streams
// reading it: a newer copy replaces it for new requests without
// invalidating a stream in progress.
//
// Each instrument's slice (its "run") is the messages a SnapshotData frame
// carries for it: an InstrumentDefinition when the book is defined, then
// its SnapshotChunks (at most kMaxOrdersPerChunk orders each). An
// instrument with no history (never defined, never sequenced) has no run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::feed {

class SnapshotCache {
 public:
  // The session as the snapshot frames carry it (whatever width that is).
  using Session = decltype(wire::SnapshotDone::session);
  // Keeps a chunk's u16 message length: 28 + 2000 * 24 bytes.
  static constexpr uint32_t kMaxOrdersPerChunk = 2000;

  // Serializes instruments [first, first + count) of `books`, which must
  // equal the stream up to and including datagram `snapshot_seq`.
  static std::shared_ptr<const SnapshotCache> build(const book::BookSet& books, uint32_t first, uint32_t count,
                                                    uint64_t snapshot_seq, Session session, uint64_t built_ns);
  // Bytes the run of one live book would take (what a build would make of it).
  [[nodiscard]] static size_t run_size(const book::OrderBook& b) noexcept;

  [[nodiscard]] uint64_t seq() const noexcept { return seq_; }
  [[nodiscard]] Session session() const noexcept { return session_; }
  [[nodiscard]] uint64_t built_ns() const noexcept { return built_ns_; }
  [[nodiscard]] bool covers(uint32_t inst) const noexcept { return inst >= first_ && inst - first_ < entries_.size(); }
  // The instrument's messages at seq(); empty when it has no history (or is not covered).
  [[nodiscard]] std::span<const std::byte> run(uint32_t inst) const noexcept {
    if (!covers(inst)) return {};
    const Entry& e = entries_[inst - first_];
    return {data_.data() + e.offset, e.length};
  }
  // The instrument's sequence at seq() (0: no history).
  [[nodiscard]] uint32_t instrument_seq(uint32_t inst) const noexcept {
    return covers(inst) ? entries_[inst - first_].iseq : 0;
  }
  // Bytes of every run together, and what the copy occupies in memory.
  [[nodiscard]] size_t bytes() const noexcept { return data_.size(); }
  [[nodiscard]] size_t memory() const noexcept { return data_.capacity() + entries_.capacity() * sizeof(Entry); }

  // The run of a listed instrument that has no history: one empty chunk, so
  // the client learns its book is empty at seq() (written into out, which
  // holds kEmptyChunkBytes).
  static constexpr size_t kEmptyChunkBytes = wire::snapshot_chunk::kOrders;
  void write_empty_chunk(std::byte* out, uint32_t inst) const noexcept;

  // Appends whole messages of `run`, from byte `offset`, to b while the frame
  // stays within frame_bytes (at least one message when b is empty).
  // Returns the offset after what was appended (== offset: the frame is full).
  static size_t append(wire::SnapshotDataBuilder& b, std::span<const std::byte> run, size_t offset,
                       size_t frame_bytes);

 private:
  struct Entry {
    uint64_t offset = 0;
    uint32_t length = 0;
    uint32_t iseq = 0;
  };
  SnapshotCache() = default;

  uint64_t seq_ = 0;
  Session session_ = 0;
  uint64_t built_ns_ = 0;
  uint32_t first_ = 0;
  std::vector<Entry> entries_;
  std::vector<std::byte> data_;
};

}  // namespace mdcast::feed
