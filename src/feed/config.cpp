#include "mdcast/feed/config.hpp"

#include <limits>

#include "mdcast/core/error.hpp"
#include "mdcast/wire/control.hpp"
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
  if (boundaries == Boundaries::kInput && flush_interval_ns != 0)
    fail("flush_interval {} ns with datagram boundaries set by the input: a timer would end datagrams where the "
         "other member of a pair does not; set it to 0 (the application's flush() ends each datagram)",
         flush_interval_ns);
  if (pacing.mode != PacingMode::kNone && pacing.rate <= 0) fail("pacing rate must be positive");
  if (pacing.burst < 1) fail("pacing burst must be at least 1 message");
  if (!(pacing.min_rate >= kMinPacingFloor))  // NaN too
    fail("pacing.min_rate {} msg/s is below the floor of {} msg/s: one subscriber's capacity report could all but "
         "stop the feed; raise it",
         pacing.min_rate, kMinPacingFloor);
}

void ControlConfig::validate() const {
  auto positive = [](const char* name, double v) {
    if (!(v > 0) || v == std::numeric_limits<double>::infinity())
      fail("{} {} must be a positive, finite number", name, v);
  };
  positive("control.retransmit_rate", retransmit_rate);
  positive("control.snapshot_rate", snapshot_rate);
  if (!(retransmit_burst >= 1) || retransmit_burst > 1e12)
    fail("control.retransmit_burst {} must be at least 1 datagram", retransmit_burst);
  if (!(snapshot_burst >= 1) || snapshot_burst > 1e15)
    fail("control.snapshot_burst {} must be at least 1 byte", snapshot_burst);
  if (max_reply_bytes < 64 || max_reply_bytes > wire::ctl::kMaxFrame)
    fail("control.max_reply_bytes {} outside [64, {}]", max_reply_bytes, wire::ctl::kMaxFrame);
  if (snapshot_frame_bytes < 1024 || snapshot_frame_bytes > (1u << 20))
    fail("control.snapshot_frame_bytes {} outside [1024, {}]", snapshot_frame_bytes, 1u << 20);
  if (snapshot_interval_ns == 0) fail("control.snapshot_interval must be positive");
  if (max_snapshot_generations < 1) fail("control.max_snapshot_generations must be at least 1");
  if (snapshot_share_bytes < snapshot_frame_bytes)
    fail("control.snapshot_share_bytes {} below one snapshot frame ({} bytes, control.snapshot_frame_bytes)",
         snapshot_share_bytes, snapshot_frame_bytes);
  if (snapshot_client_poll_bytes < snapshot_frame_bytes || snapshot_poll_bytes < snapshot_client_poll_bytes)
    fail("control.snapshot_client_poll_bytes {} must hold one frame ({}) and control.snapshot_poll_bytes {} at least "
         "that",
         snapshot_client_poll_bytes, snapshot_frame_bytes, snapshot_poll_bytes);
  if (max_snapshot_requests < 1) fail("control.max_snapshot_requests must be at least 1");
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
