// libibverbs' view of the ports for `mdcast doctor`: what sysfs does not
// show (active and maximum MTU, multicast limits), from the verbs medium's
// own enumeration (verbs_device.hpp), so the two never disagree.
#include "checks.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::doctor::detail {

static_assert(kRdmaCmQKey == media::verbs::kDefaultQKey, "doctor names the medium's default QKey");

bool verbs_built() noexcept { return true; }

std::vector<VerbsPort> query_verbs_ports() {
  std::vector<VerbsPort> out;
  for (const auto& p : media::verbs::query_ports()) {
    VerbsPort v;
    v.device = p.info.name;
    v.port = p.info.port;
    v.active_mtu = p.info.mtu_bytes;
    v.max_mtu = p.max_mtu_bytes;
    v.max_mcast_grp = p.info.max_mcast_grp;
    v.max_mcast_qp_attach = p.info.max_mcast_qp_attach;
    v.max_total_mcast_qp_attach = p.info.max_total_mcast_qp_attach;
    v.error = p.error;
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace mdcast::doctor::detail
