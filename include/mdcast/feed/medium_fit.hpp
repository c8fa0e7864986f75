// An engine's settings fitted to its medium. A medium decides a few of them
// (the datagram size it carries, the history it hosts, the waits its delivery
// needs) through the contract's own small structs (media::PublisherFit,
// media::SubscriberFit), so that media never depend on the feed's settings.
#pragma once

#include "mdcast/feed/config.hpp"
#include "mdcast/media/medium.hpp"

namespace mdcast::feed {

// The publisher's settings with what `medium.configure` decided; throws what
// it throws (Error, naming the setting).
template <class Medium>
[[nodiscard]] PublisherConfig fit_to_medium(const Medium& medium, PublisherConfig c) {
  const media::PublisherFit f = medium.configure(media::PublisherFit{c.max_datagram, c.retransmit_bytes, c.max_unsent, c.session, true});
  c.max_datagram = f.max_datagram;
  c.retransmit_bytes = f.retransmit_bytes;
  c.authenticate_data = c.authenticate_data && f.open_data_plane;
  return c;
}

template <class Medium>
[[nodiscard]] SubscriberConfig fit_to_medium(const Medium& medium, SubscriberConfig c) {
  const media::SubscriberFit f =
      medium.configure(media::SubscriberFit{c.max_datagram, c.reorder_wait_ns, c.request_timeout_ns, c.window_bytes});
  c.max_datagram = f.max_datagram;
  c.reorder_wait_ns = f.reorder_wait_ns;
  c.request_timeout_ns = f.request_timeout_ns;
  c.window_bytes = f.window_bytes;
  c.confirm_ahead = c.confirm_ahead && f.open_data_plane;
  c.authenticate_data = c.authenticate_data && f.open_data_plane;
  return c;
}

}  // namespace mdcast::feed
