// VerbsSink: the publisher's side of the data path, a DatagramSink that
// posts each datagram to a UD QP addressed to the multicast group.
//
// Setup (constructor, throws Error naming device, group and errno):
//   rdma_cm resolves local_ip -> group (that picks device and port); a UD QP
//   is created with the channel's QKey set at INIT; the group is joined
//   send-only (RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER), so the publisher never
//   hears itself - if the device refuses, a full join without attaching the QP
//   (logged); the address handle comes once from the join event's ah_attr.
//   The retransmit ring is allocated here (huge pages when the host has them)
//   and registered ONCE with LOCAL_WRITE | REMOTE_READ: the Publisher builds
//   datagrams in it and send() posts them straight from their slots (zero
//   copy), and subscribers may RDMA READ it for retransmission.
//
// Data path (send, send_unsequenced, reap): noexcept, no allocation. The
// immediate data carries the low 32 bits of the sequence (network order);
// a heartbeat's is the last sequenced number its header repeats. One send in `signal_every` is signaled; its
// completion (wr_id = post count) retires every earlier one. A full send
// queue answers kBackPressured (the Publisher re-offers the datagram in
// order). A failed post or an error completion is counted and marks the sink
// failed: sends then answer kBackPressured until the control code calls
// recover() (PublisherMedium::poll_control does). While the port is down
// (set_link_down), sends are not posted: they answer kSent and are counted
// (dropped_link_down), so the engine goes on; the datagrams stay in the
// retransmit ring, where the subscribers' retransmit requests find them.
//
// Rejoin (control, driven by LinkWatch through PublisherMedium): the group is
// left and joined again in the same mode; the join's answer replaces the
// address handle (the old one is freed once the sends that used it completed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_link.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs {

class VerbsSink {
 public:
  explicit VerbsSink(const Options& opts);
  ~VerbsSink();
  VerbsSink(const VerbsSink&) = delete;  // registered memory and the Publisher refer to it: it stays put
  VerbsSink& operator=(const VerbsSink&) = delete;

  // ---- data path
  SendResult send(std::span<const std::byte> datagram, uint64_t sequence) noexcept;
  SendResult send_unsequenced(std::span<const std::byte> datagram) noexcept;
  // Reaps send completions (send() does it when the queue runs full) and
  // drains the loopback probe. Returns completions seen.
  int reap() noexcept;

  // ---- control
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  [[nodiscard]] int last_error() const noexcept { return last_error_; }  // errno or ibv_wc_status
  [[nodiscard]] const std::string& failure() const noexcept { return failure_; }
  // Resets the QP and brings it back to RTS (datagrams lost meanwhile are
  // recovered by subscribers as gaps). Throws Error if the device refuses.
  void recover();

  // ---- what setup found
  [[nodiscard]] const DeviceInfo& device() const noexcept { return dev_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] std::span<std::byte> ring_memory() const noexcept { return ring_mem_.span(); }
  [[nodiscard]] bool ring_huge_pages() const noexcept { return ring_mem_.huge_pages(); }
  [[nodiscard]] ibv_context* context() const noexcept { return id_->verbs; }
  [[nodiscard]] ibv_pd* pd() const noexcept { return pd_.get(); }
  [[nodiscard]] ibv_mr* ring_mr() const noexcept { return ring_mr_.get(); }
  [[nodiscard]] uint32_t max_inline() const noexcept { return max_inline_; }
  [[nodiscard]] bool send_only() const noexcept { return send_only_; }
  [[nodiscard]] uint32_t qp_num() const noexcept { return qp_->qp_num; }
  [[nodiscard]] const SinkCounters& counters() const noexcept { return counters_; }
  // Leaves the group and asks to join it again, resetting the QP first if it
  // is in the error state: 0, or an errno with `why` saying what failed.
  int start_rejoin(std::string& why);
  // Drains the data cm_id's events without blocking; completes a join in
  // flight (attached for a full member, a new address handle).
  [[nodiscard]] CmEvents poll_events();
  void set_link_down(bool down) noexcept { link_down_ = down; }

 private:
  static constexpr uint32_t kProbeSlots = 16;  // receives posted to notice self-delivery
  static constexpr uint32_t kStagingSlots = 8;

  void bring_up_qp();
  void post_probe(uint32_t slot) noexcept;
  SendResult post_staged(std::span<const std::byte> d, bool with_imm, uint32_t imm) noexcept;
  SendResult post(const std::byte* data, size_t len, uint32_t lkey, bool with_imm, uint32_t imm,
                        bool force_signal) noexcept;
  void mark_failed(const char* what, int err) noexcept;

  Options opts_;
  DeviceInfo dev_;
  size_t max_datagram_ = 0;
  SinkCounters counters_;

  // Members in teardown order (reverse of declaration): join -> AH -> QP -> CQ -> MRs -> memory -> PD -> cm_id.
  EventChannel channel_;
  CmId id_;
  ProtectionDomain pd_;
  MappedMemory ring_mem_;
  MappedMemory aux_mem_;  // staging slots for unsequenced datagrams + probe receive buffers
  MemoryRegion ring_mr_;
  MemoryRegion aux_mr_;
  CompletionQueue cq_;
  QueuePair qp_;
  AddressHandle ah_;
  AddressHandle retired_ah_;  // the one a rejoin replaced, until the sends that used it completed
  MulticastJoin join_;
  sockaddr_storage group_{};
  uint64_t retired_until_ = 0;  // post count that must complete before retired_ah_ goes
  bool joining_ = false;

  // Hot state.
  uint32_t remote_qpn_ = 0;
  uint32_t remote_qkey_ = 0;
  uint32_t max_inline_ = 0;
  uint32_t sq_depth_ = 0;
  uint32_t signal_every_ = 0;
  uint32_t since_signal_ = 0;
  uint64_t posted_ = 0;     // sends posted
  uint64_t completed_ = 0;  // sends known complete (the last signaled wr_id reaped)
  const std::byte* ring_lo_ = nullptr;
  const std::byte* ring_hi_ = nullptr;
  size_t slot_bytes_ = 0;   // staging / probe slot size
  uint64_t staging_busy_until_[kStagingSlots] = {};  // post count that must complete before reuse
  uint32_t next_staging_ = 0;
  bool failed_ = false;
  bool link_down_ = false;
  int last_error_ = 0;
  std::string failure_;  // written on failure only (reserved at setup: no allocation then)
  bool send_only_ = false;
};
static_assert(DatagramSink<VerbsSink>);

}  // namespace mdcast::media::verbs
