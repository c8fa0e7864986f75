// The publisher's retransmit history, as the engine sees it: one of the two
// logs, whichever the medium formatted in the memory it offers
// (ring_memory()), built in place and kept for retransmissions.
//
//   SlotLog (slot_log.hpp): fixed slots addressed by sequence; verbs, whose
//     subscribers RDMA READ a slot they compute from a sequence, and the
//     engine's own memory on UDP and the in-memory medium
//   TermLog (term_log.hpp): records back to back with an index; shm, whose
//     readers read the log live (term_reader.hpp)
//
// Why a tag and not a template or a virtual call. The layout is known only
// at setup, from the medium's memory, and feed::PublisherCore is one
// compiled class for every medium: making it (and the control service that
// serves retransmits from it) a template over the log would double the
// engine's code for one branch. So this holds either log in place, with a
// tag beside the hot words, and every call tests the tag once and calls the
// log's inline member: a claim, a commit and a get per datagram each cost
// one perfectly predicted branch on a line they load anyway, which is what
// the one class with `if (packed_)` in every method cost before the two
// logs were split. newest() takes no branch: the engine asks it several
// times per message (back-pressure, draining), so the facade keeps its own
// copy, stored by commit(). A virtual call would cost an indirect call per
// message and keep the logs' members from inlining into the engine.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <type_traits>

#include "mdcast/history/slot_log.hpp"
#include "mdcast/history/term_log.hpp"

namespace mdcast::history {

// What the engine asks of a log, so either serves it.
template <class L>
concept DatagramLog = requires(L& l, const L& c, uint64_t seq, uint16_t len) {
  { l.claim(seq) } -> std::same_as<std::byte*>;
  l.commit(seq, len);
  { c.get(seq) } -> std::same_as<std::span<const std::byte>>;
  { c.oldest() } -> std::same_as<uint64_t>;
  { c.newest() } -> std::same_as<uint64_t>;
  { c.slots() } -> std::same_as<size_t>;      // datagrams of the largest size held at least
  { c.slot_size() } -> std::same_as<size_t>;  // the largest record's bytes
  { c.memory() } -> std::same_as<std::byte*>;
};
static_assert(DatagramLog<SlotLog> && DatagramLog<TermLog>);
// The union below switches its member by placement new and is copied whole.
static_assert(std::is_trivially_copyable_v<SlotLog> && std::is_trivially_destructible_v<SlotLog>);
static_assert(std::is_trivially_copyable_v<TermLog> && std::is_trivially_destructible_v<TermLog>);

class RetransmitLog {
 public:
  enum class Layout : uint8_t { kSlots, kTerm };
  // The record header in front of every datagram, in either log.
  static constexpr size_t kRecordHeader = record::kHeader;

  // Memory for the engine's own log (fixed slots) of at least `budget` bytes,
  // and the least memory any log needs for datagrams of max_datagram.
  static constexpr size_t memory_for(size_t budget, size_t max_datagram) noexcept {
    return SlotLog::memory_for(budget, max_datagram);
  }

  RetransmitLog() noexcept : slots_() {}
  // mem: 64-byte aligned, at least memory_for(0, max_datagram). A term log
  // formatted for records this large is adopted; anything else becomes
  // fixed slots (SlotLog's constructor: adopted or formatted).
  RetransmitLog(std::span<std::byte> mem, size_t max_datagram) noexcept : slots_() {
    if (TermLog::adoptable(mem, max_datagram)) {
      layout_ = Layout::kTerm;
      ::new (&term_) TermLog(mem, max_datagram);
    } else {
      ::new (&slots_) SlotLog(mem, max_datagram);
    }
  }

  [[nodiscard]] std::byte* claim(uint64_t seq) noexcept { return term() ? term_.claim(seq) : slots_.claim(seq); }
  void commit(uint64_t seq, uint16_t len) noexcept {
    if (term())
      term_.commit(seq, len);
    else
      slots_.commit(seq, len);
    newest_ = seq;  // as either log does
  }
  // The log goes on at `next` (claim(next) is the next claim, newest() + 1
  // or beyond), and nothing below it is served: oldest() is at least `next`
  // from now on, so a request for what lies before, or for the skipped
  // sequences, is answered as too old. Either log takes a claim ahead.
  void begin_at(uint64_t next) noexcept {
    newest_ = next - 1;
    floor_ = next;
  }
  [[nodiscard]] std::span<const std::byte> get(uint64_t seq) const noexcept {
    return term() ? term_.get(seq) : slots_.get(seq);
  }
  [[nodiscard]] uint64_t oldest() const noexcept {
    const uint64_t o = term() ? term_.oldest() : slots_.oldest();
    return o == 0 ? 0 : std::max(o, floor_);
  }
  [[nodiscard]] uint64_t newest() const noexcept { return newest_; }
  [[nodiscard]] size_t slots() const noexcept { return term() ? term_.slots() : slots_.slots(); }
  [[nodiscard]] size_t slot_size() const noexcept { return term() ? term_.slot_size() : slots_.slot_size(); }
  [[nodiscard]] std::byte* memory() const noexcept { return term() ? term_.memory() : slots_.memory(); }
  [[nodiscard]] Layout layout() const noexcept { return layout_; }

 private:
  [[nodiscard]] bool term() const noexcept { return layout_ == Layout::kTerm; }

  Layout layout_ = Layout::kSlots;
  uint64_t newest_ = 0;  // the log's newest(), without the tag
  uint64_t floor_ = 0;   // begin_at's: nothing below it is served
  union {
    SlotLog slots_;
    TermLog term_;
  };
};

}  // namespace mdcast::history
