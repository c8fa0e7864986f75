#include "mdcast/feed/config.hpp"

#include "mdcast/core/error.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::feed {

void PublisherConfig::validate() const {
  if (max_datagram < wire::kMinDatagram || max_datagram > wire::kMaxDatagram)
    fail("max_datagram {} outside [{}, {}]", max_datagram, wire::kMinDatagram, wire::kMaxDatagram);
  if (max_message < 64 || max_message > wire::kMaxMessage)
    fail("max_message {} outside [64, {}]", max_message, wire::kMaxMessage);
  if (sender_id == 0) fail("sender_id must be non-zero (0 means 'none' to subscribers)");
  if (sender_id > 0xffff) fail("sender_id {} does not fit the datagram's 16-bit sender field", sender_id);
  if (max_unsent == 0) fail("max_unsent must be at least 1");
  if (heartbeat_interval_ns == 0) fail("heartbeat_interval must be positive");
  if (pacing.mode != PacingMode::kNone && pacing.rate <= 0) fail("pacing rate must be positive");
  if (pacing.burst < 1) fail("pacing burst must be at least 1 message");
}

void SubscriberConfig::validate() const {
  if (max_datagram < wire::kMinDatagram || max_datagram > wire::kMaxDatagram)
    fail("max_datagram {} outside [{}, {}]", max_datagram, wire::kMinDatagram, wire::kMaxDatagram);
  if (window_bytes < 16 * max_datagram) fail("window_bytes {} must hold at least 16 datagrams", window_bytes);
  if (max_message < 64 || max_message > wire::kMaxMessage)
    fail("max_message {} outside [64, {}]", max_message, wire::kMaxMessage);
  if (request_timeout_ns == 0) fail("request_timeout must be positive");
  if (max_outstanding == 0 || max_outstanding > 64) fail("max_outstanding {} outside [1, 64]", max_outstanding);
  if (max_instrument_recoveries > 64) fail("max_instrument_recoveries {} above 64", max_instrument_recoveries);
  if (!all_instruments)
    for (uint32_t i : instruments)
      if (i >= books.max_instruments)
        fail("instrument {} in the filter is outside [0, {}) (books.max_instruments)", i, books.max_instruments);
}

}  // namespace mdcast::feed
