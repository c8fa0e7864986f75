// Move-only owners for every libibverbs / librdmacm resource the verbs medium
// holds. They are unique_ptrs with a deleter per resource type: one pointer,
// no reference count, nothing copied per message.
//
// Teardown order is the owner's business: declare members in the order
// event channel, cm_id, PD, MR, completion channel, CQ, QP, AH, multicast join
// so C++ destroys them in reverse (join -> AH -> QP -> CQ -> MR -> PD -> cm_id).
// A destroy call that fails at teardown is ignored: there is nothing left to
// do with the resource, and the kernel reclaims it when the process exits.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>
#include <string>
#include <string_view>

namespace mdcast::media::verbs {

namespace detail {
struct EventChannelDeleter {
  void operator()(rdma_event_channel* c) const noexcept { rdma_destroy_event_channel(c); }
};
struct CmIdDeleter {
  void operator()(rdma_cm_id* id) const noexcept { (void)rdma_destroy_id(id); }
};
struct PdDeleter {
  void operator()(ibv_pd* p) const noexcept { (void)ibv_dealloc_pd(p); }
};
struct MrDeleter {
  void operator()(ibv_mr* m) const noexcept { (void)ibv_dereg_mr(m); }
};
struct CompChannelDeleter {
  void operator()(ibv_comp_channel* c) const noexcept { (void)ibv_destroy_comp_channel(c); }
};
struct CqDeleter {
  void operator()(ibv_cq* c) const noexcept { (void)ibv_destroy_cq(c); }
};
struct QpDeleter {
  void operator()(ibv_qp* q) const noexcept { (void)ibv_destroy_qp(q); }
};
// A QP created through rdma_create_qp belongs to its cm_id.
struct CmQpDeleter {
  void operator()(rdma_cm_id* id) const noexcept { rdma_destroy_qp(id); }
};
struct AhDeleter {
  void operator()(ibv_ah* a) const noexcept { (void)ibv_destroy_ah(a); }
};
struct CmEventAcker {
  void operator()(rdma_cm_event* e) const noexcept { (void)rdma_ack_cm_event(e); }
};
}  // namespace detail

using EventChannel = std::unique_ptr<rdma_event_channel, detail::EventChannelDeleter>;
using CmId = std::unique_ptr<rdma_cm_id, detail::CmIdDeleter>;
using ProtectionDomain = std::unique_ptr<ibv_pd, detail::PdDeleter>;
using MemoryRegion = std::unique_ptr<ibv_mr, detail::MrDeleter>;
using CompChannel = std::unique_ptr<ibv_comp_channel, detail::CompChannelDeleter>;
using CompletionQueue = std::unique_ptr<ibv_cq, detail::CqDeleter>;
using QueuePair = std::unique_ptr<ibv_qp, detail::QpDeleter>;
using CmQueuePair = std::unique_ptr<rdma_cm_id, detail::CmQpDeleter>;  // holds the id; destroys its QP
using AddressHandle = std::unique_ptr<ibv_ah, detail::AhDeleter>;
// A cm event, acknowledged when it goes out of scope. rdma_destroy_id blocks
// until every event of the id is acknowledged: copy what you need, let the
// event go, then destroy.
using CmEvent = std::unique_ptr<rdma_cm_event, detail::CmEventAcker>;

// Membership of one UD QP's cm_id in one multicast group: leaves the group
// (and detaches the QP, if it was attached) on destruction. Move-only.
class MulticastJoin {
 public:
  MulticastJoin() noexcept = default;
  MulticastJoin(rdma_cm_id* id, const sockaddr* group) noexcept;
  MulticastJoin(MulticastJoin&& o) noexcept;
  MulticastJoin& operator=(MulticastJoin&& o) noexcept;
  MulticastJoin(const MulticastJoin&) = delete;
  MulticastJoin& operator=(const MulticastJoin&) = delete;
  ~MulticastJoin() { reset(); }

  // Records that qp was attached to (mgid, mlid): detached before leaving.
  void attached(ibv_qp* qp, const ibv_gid& mgid, uint16_t mlid) noexcept {
    qp_ = qp;
    mgid_ = mgid;
    mlid_ = mlid;
  }
  void reset() noexcept;
  [[nodiscard]] explicit operator bool() const noexcept { return id_ != nullptr; }

 private:
  rdma_cm_id* id_ = nullptr;
  sockaddr_storage group_{};
  ibv_qp* qp_ = nullptr;
  ibv_gid mgid_{};
  uint16_t mlid_ = 0;
};

}  // namespace mdcast::media::verbs
