// The verbs control server's per-client state (private to
// verbs_control_server*.cpp): the device a client came through and its
// connection, with what the bounds (ServerLimits) track of it.
#pragma once

#include <cstdint>
#include <vector>

#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "rc_stream.hpp"

namespace mdcast::media::verbs {

struct VerbsControlServer::DeviceCtx {
  ibv_context* context = nullptr;
  // Teardown: CQ, then a ring MR and PD of our own (clients on another device).
  ProtectionDomain own_pd;
  MemoryRegion own_ring_mr;
  CompletionQueue cq;
  ibv_pd* pd = nullptr;
  ibv_mr* ring_mr = nullptr;
  int max_qp_rd_atom = 0;
};

class VerbsControlServer::Connection {
 public:
  Connection(ClientId cid, rdma_cm_id* id, DeviceCtx& d, const detail::RcStream::Config& cfg)
      : id_(id), stream_(id, d.pd, d.cq.get(), cid, cfg) {
    id->context = reinterpret_cast<void*>(static_cast<uintptr_t>(cid));
  }
  [[nodiscard]] rdma_cm_id* id() const noexcept { return id_.get(); }
  detail::RcStream& stream() noexcept { return stream_; }
  bool closing = false;            // no more input taken; cut once drained or at the deadline
  uint64_t close_deadline = 0;
  bool established = false;
  // Bounds (ServerLimits).
  bool admitted = false;
  uint64_t peer = 0;               // its IPv4 address (host order), for per-peer shares
  bool in_ready = false;           // in ready_: frames to handle
  bool pending = false;            // the service has more of a streamed reply
  bool in_writable = false;        // in writable_
  uint64_t unadmitted_since = 0;
  uint64_t last_frame_ns = 0;
  uint64_t partial_since = 0;      // 0: no frame half-received
  uint64_t frames = 0;             // handled, ever
  uint64_t budget_poll = 0;
  size_t frames_this_poll = 0;
  // Receive slots whose bytes sit in the assembler behind frames waiting for
  // their turn: re-posted once those are handled, so a client sending faster
  // than its budget waits (RNR), not the publisher's memory.
  std::vector<uint32_t> held;

 private:
  CmId id_;          // destroyed after the stream (which destroys the QP first)
  detail::RcStream stream_;
};

inline uint64_t elapsed(uint64_t now, uint64_t since) noexcept { return now > since ? now - since : 0; }

}  // namespace mdcast::media::verbs
