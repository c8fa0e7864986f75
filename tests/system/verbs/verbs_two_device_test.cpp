// Publisher and subscribers on different RDMA devices (veth mode in the VM:
// the publisher on rxe1, the subscribers on rxe0), so datagrams, control
// frames and RDMA READs really cross a netdev pair. Skips without a second
// device address (SOFTROCE_IP2 or MDCAST_VERBS_IP2).
#include <gtest/gtest.h>

#include "verbs_feed_scenario.hpp"
#include "verbs_proc.hpp"

namespace mdcast::test::verbs {
namespace {

TEST(VerbsTwoDevices, PublisherAndSubscribersOnDifferentDevices) {
  MDCAST_REQUIRE_RDMA();
  const std::string pub_ip = second_ip();
  if (pub_ip.empty())
    GTEST_SKIP() << "needs two RDMA devices: set SOFTROCE_IP2 / MDCAST_VERBS_IP2 (scripts/test-verbs.sh runs this "
                    "in the VM's veth mode)";
  const std::string sub_ip = local_ip();
  ASSERT_NE(pub_ip, sub_ip);
  run_feed({"two_devices", pub_ip, sub_ip, "239.77.2.10", 7620});
}

}  // namespace
}  // namespace mdcast::test::verbs
