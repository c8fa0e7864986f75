// Joining the multicast group again after it was lost (verbs_link.hpp):
// the sink's and the receiver's part. Control code: it may allocate and
// throw; the data path only reads what it sets (the address handle, the
// link-down flag), from the same thread.
#include <cerrno>
#include <cstring>
#include <utility>

#include "mdcast/core/error.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using namespace detail;

namespace {

// Resets a QP the port's loss put in the error state (rxe does that to a
// sender's QP with its first failed send); false with `why` if it cannot be.
template <class Owner>
bool reset_if_failed(Owner& o, ibv_qp* qp, std::string& why) {
  if (!o.failed() && !qp_in_error(qp)) return true;
  try {
    o.recover();
    return true;
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
}

}  // namespace

// ------------------------------------------------------------------ sink --

int VerbsSink::start_rejoin(std::string& why) {
  if (!reset_if_failed(*this, qp_.get(), why)) return EIO;
  // Left first (the QP detached, for a full member): a group the fabric
  // deleted is created again by the join, and an old join's state goes.
  join_.reset();
  joining_ = false;
  if (const int err = post_join(id_.get(), group_, send_only_); err != 0) {
    why = fmt::format("{} of {} on {}: {}", send_only_ ? "rdma_join_multicast_ex (send-only)" : "rdma_join_multicast",
                      opts_.group_ip, where(id_.get()), std::strerror(err));
    return err;
  }
  // Owned from now: left on the next rejoin or at teardown, answered or not.
  join_ = MulticastJoin(id_.get(), reinterpret_cast<const sockaddr*>(&group_));
  joining_ = true;
  return 0;
}

CmEvents VerbsSink::poll_events() {
  rdma_ud_param ud{};
  CmEvents r = drain_data_events(channel_.get(), joining_, &ud);
  if (retired_ah_ && completed_ >= retired_until_) retired_ah_.reset();
  if (!joining_ || !(r.joined || r.join_failed)) return r;
  joining_ = false;
  if (r.join_failed) return r;
  if (opts_.join == JoinMode::kFull) {
    if (const int rc = ibv_attach_mcast(qp_.get(), &ud.ah_attr.grh.dgid, ud.ah_attr.dlid)) {
      r.joined = false;
      r.join_failed = true;
      r.error = fmt::format("ibv_attach_mcast on {}: {}", dev_.name, std::strerror(rc));
      return r;
    }
    join_.attached(qp_.get(), ud.ah_attr.grh.dgid, ud.ah_attr.dlid);
  }
  // The group's address may be new (an MLID on InfiniBand): a new handle.
  // Sends posted with the old one may still be in flight: it stays until they completed.
  AddressHandle ah(ibv_create_ah(pd_.get(), &ud.ah_attr));
  if (!ah) {
    r.joined = false;
    r.join_failed = true;
    r.error = fmt::format("ibv_create_ah for group {} on {}: {}", opts_.group_ip, dev_.name, std::strerror(errno));
    return r;
  }
  retired_ah_ = std::exchange(ah_, std::move(ah));
  retired_until_ = posted_;
  remote_qpn_ = ud.qp_num;
  return r;
}

// -------------------------------------------------------------- receiver --

int VerbsReceiver::start_rejoin(std::string& why) {
  if (!reset_if_failed(*this, qp_.get(), why)) return EIO;
  join_.reset();
  joining_ = false;
  if (const int err = post_join(id_.get(), group_, false); err != 0) {
    why = fmt::format("rdma_join_multicast of {} on {}: {}", opts_.group_ip, where(id_.get()), std::strerror(err));
    return err;
  }
  join_ = MulticastJoin(id_.get(), reinterpret_cast<const sockaddr*>(&group_));
  joining_ = true;
  return 0;
}

CmEvents VerbsReceiver::poll_events() {
  rdma_ud_param ud{};
  CmEvents r = drain_data_events(channel_.get(), joining_, &ud);
  if (!joining_ || !(r.joined || r.join_failed)) return r;
  joining_ = false;
  if (r.join_failed) return r;
  if (const int rc = ibv_attach_mcast(qp_.get(), &ud.ah_attr.grh.dgid, ud.ah_attr.dlid)) {
    r.joined = false;
    r.join_failed = true;
    r.error = fmt::format("ibv_attach_mcast on {}: {} (max_mcast_qp_attach is {})", dev_.name, std::strerror(rc),
                          dev_.max_mcast_qp_attach);
    return r;
  }
  join_.attached(qp_.get(), ud.ah_attr.grh.dgid, ud.ah_attr.dlid);
  return r;
}

}  // namespace mdcast::media::verbs
