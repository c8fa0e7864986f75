// Reassembles messages that the publisher fragmented across datagrams.
//
// Fragments reach it in sequence order (the subscriber orders datagrams
// first), so a message's fragments arrive consecutively from index 0. A
// bounded number of reassemblies may be open at once (each a preallocated
// max_message buffer); anything else - an orphan fragment after a snapshot
// jump, an index out of order, a length that does not add up, a hostile
// count - is dropped and counted, never buffered without bound.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "mdcast/wire/messages.hpp"

namespace mdcast::feed {

class Reassembler {
 public:
  enum class Result : uint8_t { kIncomplete, kComplete, kDropped };

  Reassembler(uint32_t slots, size_t max_message);

  // On kComplete, `out` views the whole message (valid until the next add or
  // reset); it has NOT been validated as a message yet.
  Result add(const wire::FragmentView& f, std::span<const std::byte>& out) noexcept;
  // add(), then the checks a reassembled message must pass before anything
  // uses it (the bytes came from the network, or a file, too): its length
  // field, a valid message, market data and not a snapshot chunk. kComplete
  // only for a message that passed; `whole` views it until the next add. The
  // subscriber engine and a replay both reassemble through this one.
  Result add_checked(const wire::FragmentView& f, wire::MessageView& whole) noexcept;
  void reset() noexcept;
  [[nodiscard]] uint32_t open() const noexcept;

 private:
  struct Slot {
    bool used = false;
    uint32_t message_id = 0;
    uint16_t next_index = 0;
    uint16_t count = 0;
    uint32_t total = 0;
    uint32_t have = 0;
    uint64_t age = 0;
    std::byte* buf = nullptr;
  };
  uint32_t n_;
  size_t max_message_;
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<std::byte[]> mem_;
  uint64_t clock_ = 0;
};

}  // namespace mdcast::feed
