// A build without rdma-core: `mdcast doctor` still reads devices from sysfs
// and says that MTU and multicast limits need a build with libibverbs-dev.
#include "checks.hpp"

namespace mdcast::doctor::detail {

bool verbs_built() noexcept { return false; }
std::vector<VerbsPort> query_verbs_ports() { return {}; }

}  // namespace mdcast::doctor::detail
