// The synthetic order flow as a feed handler's input (feed::run_paced's
// Source): Generator's messages in upstream packets, and now and then a
// large opaque message. `mdcast publish` publishes it.
//
// Packets are what lets two publishers of a pair cut the same datagrams
// (feed::Boundaries::kInput): a packet's length, 1..packet_messages messages,
// is drawn from the seed, never from time, so every member that replays the
// same seed sees the same packets however fast it runs. A large message
// (large_bytes above a datagram's room) is fragmented by the publisher, which
// is where a member may die between two datagrams of one message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mdcast/book/generator.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::book {

struct SyntheticConfig {
  uint32_t packet_messages = 0;  // 0: no packets (the paced loop's bursts decide); else 1..this per packet
  uint32_t large_every = 0;      // 0: none; else every large_every-th message is opaque, large_bytes long
  uint32_t large_bytes = 3000;
};

class SyntheticSource {
 public:
  SyntheticSource(const GeneratorConfig& g, const SyntheticConfig& c)
      : gen_(g), cfg_(c), rng_(g.seed ^ 0x9e3779b97f4a7c15ull), large_(c.large_every ? c.large_bytes : 0) {
    for (size_t i = 0; i < large_.size(); ++i) large_[i] = std::byte{static_cast<uint8_t>(i * 31 + g.seed)};
  }

  bool next(wire::Message& m) noexcept {
    // The first definitions and openings stay the generator's own, so a
    // large message always names an instrument already defined.
    if (cfg_.large_every && produced_ % cfg_.large_every == cfg_.large_every - 1 && last_instrument_ != kNone) {
      m = wire::Message::make_opaque(last_instrument_, large_);
    } else {
      gen_.next(m);
      last_instrument_ = m.instrument;
    }
    ++produced_;
    if (cfg_.packet_messages) {
      if (left_ == 0) left_ = 1 + static_cast<uint32_t>(rng_.below(cfg_.packet_messages));
      end_ = --left_ == 0;
    }
    return true;
  }
  [[nodiscard]] bool packet_end() const noexcept { return end_; }

  // Messages given so far, large ones included.
  [[nodiscard]] uint64_t produced() const noexcept { return produced_; }
  [[nodiscard]] const SyntheticConfig& config() const noexcept { return cfg_; }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  Generator gen_;
  SyntheticConfig cfg_;
  Rng rng_;
  std::vector<std::byte> large_;
  uint32_t last_instrument_ = kNone;
  uint32_t left_ = 0;  // messages still to come in the current packet
  bool end_ = false;
  uint64_t produced_ = 0;
};

}  // namespace mdcast::book
