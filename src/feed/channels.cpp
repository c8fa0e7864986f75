#include "mdcast/feed/channels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "mdcast/core/error.hpp"

namespace mdcast::feed {

uint32_t ChannelMap::channel_hash(uint32_t instrument, uint32_t count) noexcept {
  uint32_t h = instrument;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return count <= 1 ? 0 : h % count;
}

ChannelMap::ChannelMap(uint32_t count, uint32_t max_instruments, std::span<const ChannelRange> ranges)
    : count_(count), of_(max_instruments), ranges_(ranges.begin(), ranges.end()) {
  if (count < 1 || count > kMaxChannels)
    fail("feed.channels is {}: a publisher has 1 to {} channels", count, kMaxChannels);
  for (uint32_t i = 0; i < max_instruments; ++i) of_[i] = static_cast<uint8_t>(channel_hash(i, count));
  std::vector<ChannelRange> sorted = ranges_;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t k = 0; k < sorted.size(); ++k) {
    const ChannelRange& r = sorted[k];
    if (r.first > r.last) fail("feed.channel_map: range {}-{} is empty", r.first, r.last);
    if (r.channel >= count)
      fail("feed.channel_map: {}-{}:{} names channel index {}, but the feed has {} channels (0-{})", r.first, r.last,
           r.channel, r.channel, count, count - 1);
    if (r.last >= max_instruments)
      fail("feed.channel_map: {}-{}:{} reaches past feed.max_instruments ({})", r.first, r.last, r.channel,
           max_instruments);
    if (k > 0 && sorted[k - 1].last >= r.first)
      fail("feed.channel_map: {}-{} and {}-{} overlap: an instrument is on one channel", sorted[k - 1].first,
           sorted[k - 1].last, r.first, r.last);
    for (uint32_t i = r.first; i <= r.last; ++i) of_[i] = static_cast<uint8_t>(r.channel);
  }
}

namespace {
uint32_t parse_number(std::string_view item, std::string_view s) {
  uint32_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty())
    fail("feed.channel_map: '{}' is not FIRST[-LAST]:CHANNEL (numbers, e.g. 0-99:0)", item);
  return v;
}
}  // namespace

std::vector<ChannelRange> ChannelMap::parse_ranges(std::string_view text) {
  std::vector<ChannelRange> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      fail("feed.channel_map: '{}' has no ':CHANNEL' (e.g. 0-99:0)", item);
    const std::string_view insts = item.substr(0, colon);
    const size_t dash = insts.find('-');
    ChannelRange r;
    r.first = parse_number(item, insts.substr(0, dash));
    r.last = dash == std::string_view::npos ? r.first : parse_number(item, insts.substr(dash + 1));
    r.channel = parse_number(item, item.substr(colon + 1));
    out.push_back(r);
  }
  return out;
}

std::string ChannelMap::format_ranges(std::span<const ChannelRange> ranges) {
  std::string s;
  for (const ChannelRange& r : ranges) {
    if (!s.empty()) s += ',';
    s += r.first == r.last ? fmt::format("{}:{}", r.first, r.channel) : fmt::format("{}-{}:{}", r.first, r.last, r.channel);
  }
  return s;
}

std::vector<uint32_t> ChannelMap::instruments(uint32_t channel) const {
  std::vector<uint32_t> v;
  for (uint32_t i = 0; i < of_.size(); ++i)
    if (of_[i] == channel) v.push_back(i);
  return v;
}

std::vector<uint32_t> ChannelMap::select(std::span<const uint32_t> ids, uint32_t channel) const {
  std::vector<uint32_t> v;
  for (uint32_t i : ids)
    if (of(i) == channel) v.push_back(i);
  return v;
}

std::vector<uint32_t> ChannelMap::channels_of(std::span<const uint32_t> ids) const {
  std::vector<uint32_t> v;
  for (uint32_t i : ids) v.push_back(of(i));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<std::vector<uint32_t>> channels_per_thread(uint32_t channels, uint32_t threads) {
  if (threads == 0 || threads > channels)
    fail("{} publishing threads for {} channels: each thread publishes at least one channel (1 to {} threads)", threads,
         channels, channels);
  std::vector<std::vector<uint32_t>> out(threads);
  for (uint32_t k = 0; k < channels; ++k) out[k % threads].push_back(k);
  return out;
}

}  // namespace mdcast::feed
