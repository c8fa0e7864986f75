// The UDP subscriber's receive buffers, set up once (udp_source.hpp).
#include "mdcast/media/udp/udp_source.hpp"

namespace mdcast::media::udp {

UdpSource::UdpSource(int rail_a, int rail_b, size_t buffer_bytes, SourceCounters& c)
    : fd_{rail_a, rail_b}, counters_(&c) {
  for (size_t r = 0; r < rx_.size(); ++r) {
    if (fd_[r] < 0) continue;
    Rx& rx = rx_[r];
    rx.buffers = std::make_unique<std::byte[]>(kBatch * buffer_bytes);
    for (size_t i = 0; i < kBatch; ++i) {
      rx.iov[i] = {rx.buffers.get() + i * buffer_bytes, buffer_bytes};
      rx.msgs[i].msg_hdr.msg_iov = &rx.iov[i];
      rx.msgs[i].msg_hdr.msg_iovlen = 1;
    }
  }
}

}  // namespace mdcast::media::udp
