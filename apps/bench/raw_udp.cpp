// `mdcast bench --medium udp`: being written (the raw sendmmsg/recvmmsg
// baseline and the runs over the UDP medium). Until then the bench says so.
#include "medium.hpp"
#include "mdcast/core/error.hpp"
#include "registry.hpp"

namespace mdcast::app {

std::unique_ptr<bench::MediumBench> UdpEntry::bench(const Settings&, const bench::Placement&) {
  fail("mdcast bench --medium udp: not in this build yet (mdcast publish/subscribe/demo --medium udp are)");
}

}  // namespace mdcast::app
