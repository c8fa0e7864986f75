// Channels: one feed split over up to 16 channels, each its own multicast
// group (or shm ring) with its own sequence space, retransmit history,
// snapshots and heartbeats, so that each can be published by its own thread
// on its own core and a subscriber joins only the channels its instruments
// are on. The split is the ChannelMap: an instrument's channel is configured
// (ranges) or, where not, a stable hash every release and every foreign
// implementation computes alike (docs/protocol.md §2.1).
//
// A channel's id on the wire is the feed's base channel + its index:
// channel index 0 of a feed on channel 7 is channel 7, index 3 is 10.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::feed {

inline constexpr uint32_t kMaxChannels = 16;

// Instruments [first, last] on channel index `channel`.
struct ChannelRange {
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t channel = 0;
};


class ChannelMap {
 public:
  // One channel: every instrument on index 0.
  ChannelMap() = default;
  // `count` channels (1..16) over instruments [0, max_instruments); an
  // instrument no range names goes where channel_hash() says. Throws Error
  // for a count out of range, a range past max_instruments or naming a
  // channel index >= count, or ranges that overlap.
  ChannelMap(uint32_t count, uint32_t max_instruments, std::span<const ChannelRange> ranges = {});

  // "0-99:0,100-199:1,500:3": instrument ranges (or single instruments) and
  // the channel index each goes to. Throws Error naming the bad item.
  static std::vector<ChannelRange> parse_ranges(std::string_view text);
  [[nodiscard]] static std::string format_ranges(std::span<const ChannelRange> ranges);

  // The stable hash: murmur3's 32-bit finalizer of the instrument id, modulo
  // the channel count. Spreads consecutive ids (the usual numbering) evenly.
  [[nodiscard]] static uint32_t channel_hash(uint32_t instrument, uint32_t count) noexcept;

  [[nodiscard]] uint32_t count() const noexcept { return count_; }
  [[nodiscard]] uint32_t max_instruments() const noexcept { return static_cast<uint32_t>(of_.size()); }
  // The channel index of an instrument (the data path's routing: one load).
  // An instrument beyond max_instruments goes by the hash.
  [[nodiscard]] uint32_t of(uint32_t instrument) const noexcept {
    return instrument < of_.size() ? of_[instrument] : channel_hash(instrument, count_);
  }
  // The instruments of one channel index, ascending.
  [[nodiscard]] std::vector<uint32_t> instruments(uint32_t channel) const;
  // Of `ids`, those on `channel`, in their order.
  [[nodiscard]] std::vector<uint32_t> select(std::span<const uint32_t> ids, uint32_t channel) const;
  // The channel indexes `ids` are on, ascending, each once.
  [[nodiscard]] std::vector<uint32_t> channels_of(std::span<const uint32_t> ids) const;
  [[nodiscard]] std::span<const ChannelRange> ranges() const noexcept { return ranges_; }

 private:
  uint32_t count_ = 1;
  std::vector<uint8_t> of_;
  std::vector<ChannelRange> ranges_;
};

// Which channels `threads` threads publish: channel index k goes to thread
// k mod threads. Returns, per thread, its channel indexes.
[[nodiscard]] std::vector<std::vector<uint32_t>> channels_per_thread(uint32_t channels, uint32_t threads);

}  // namespace mdcast::feed
