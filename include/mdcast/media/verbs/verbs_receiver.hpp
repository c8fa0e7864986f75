// VerbsReceiver: the subscriber's side of the data path. A UD QP joined to
// the group as a full member, with a ring of receive buffers pre-posted from
// one registered pool.
//
// Each buffer is kGrhBytes (the 40-byte Global Routing Header every UD receive
// starts with) + max_datagram, rounded up to 64 bytes, 64-byte aligned. The
// ring holds ~100 ms at the configured peak rate (Options::rate), within
// [min_ring, max_ring] and the device's limits: a subscriber that stalls for
// longer loses datagrams to receive-not-ready, which the engine recovers.
//
// poll(fn) busy-polls the CQ and calls, for each datagram,
//     fn(std::span<const std::byte> datagram, std::optional<uint32_t> imm)
// with the datagram in place in its receive buffer (zero copy; valid only
// during the call) and the immediate data (the low 32 bits of the sequence;
// on a heartbeat the last sequenced number it repeats). Buffers are re-posted after fn returns, in one chained
// ibv_post_recv per poll. The immediate data gives quick gap detection
// (imm_gaps / imm_missing counters); the header's sequence stays the source
// of truth (imm_mismatch counts disagreements).
//
// Adaptive mode (Options::adaptive): after an idle spell the caller arms the
// CQ's completion channel (arm()) and sleeps in wait() instead of spinning.
//
// A datagram sent with another QKey is dropped by the device: poll() then
// sees nothing at all, and completions/datagrams stay 0.
#pragma once

#include <arpa/inet.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_link.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs {

// Every UD receive buffer starts with room for the GRH, present or not.
inline constexpr size_t kGrhBytes = 40;

class VerbsReceiver {
 public:
  explicit VerbsReceiver(const Options& opts);
  ~VerbsReceiver();
  VerbsReceiver(const VerbsReceiver&) = delete;
  VerbsReceiver& operator=(const VerbsReceiver&) = delete;

  // ---- data path
  template <class Fn>
  size_t poll(Fn&& fn) noexcept {
    ibv_wc wc[kBatch];
    const int n = ibv_poll_cq(cq_.get(), kBatch, wc);
    if (n <= 0) {
      if (n < 0) note_poll_error(n);
      return 0;
    }
    size_t delivered = 0;
    for (int i = 0; i < n; ++i) {
      const auto slot = static_cast<uint32_t>(wc[i].wr_id);
      if (wc[i].status != IBV_WC_SUCCESS) [[unlikely]] {
        note_completion_error(wc[i]);
        continue;  // a flushed buffer is re-posted by recover()
      }
      std::optional<uint32_t> imm;
      if (wc[i].wc_flags & IBV_WC_WITH_IMM) imm = ntohl(wc[i].imm_data);
      std::span<const std::byte> d;
      if (admit(slot, wc[i].byte_len, imm, d)) {
        fn(d, imm);
        ++delivered;
      }
      requeue(slot);
    }
    flush_reposts();
    return delivered;
  }

  // Adaptive mode: requests a completion event for the next completion.
  // Completions that landed before the arm raise none: poll once more after
  // arming, and sleep only if that finds nothing. False without a channel.
  bool arm() noexcept;
  // Sleeps until a completion event, one of `also` becomes readable, or
  // timeout_ms; takes the completion event if there was one. Call arm() and
  // poll once more first. True when anything woke it.
  bool wait(int timeout_ms, std::span<const int> also = {}) noexcept;
  [[nodiscard]] int event_fd() const noexcept { return comp_ ? comp_->fd : -1; }
  // After event_fd() polled readable: takes the event (acknowledged in batches).
  void take_event() noexcept;

  // ---- control
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  [[nodiscard]] const std::string& failure() const noexcept { return failure_; }
  // Resets the QP, brings it back to RTR and re-posts every buffer.
  void recover();
  // Leaves the group (detaching the QP) and asks to join it again, resetting
  // the QP first if it is in the error state: 0, or an errno with `why`.
  int start_rejoin(std::string& why);
  // Drains the data cm_id's events without blocking; completes a join in
  // flight (the QP attached with the new MGID/MLID).
  [[nodiscard]] CmEvents poll_events();

  // ---- what setup found
  [[nodiscard]] const DeviceInfo& device() const noexcept { return dev_; }
  [[nodiscard]] size_t max_datagram() const noexcept { return max_datagram_; }
  [[nodiscard]] uint32_t ring_size() const noexcept { return ring_; }
  [[nodiscard]] uint32_t posted() const noexcept { return posted_; }
  [[nodiscard]] uint32_t qkey() const noexcept { return opts_.qkey; }
  [[nodiscard]] ibv_context* context() const noexcept { return id_->verbs; }
  [[nodiscard]] const ReceiverCounters& counters() const noexcept { return counters_; }

 private:
  static constexpr int kBatch = 32;

  void bring_up_qp();
  void post_all();
  bool admit(uint32_t slot, uint32_t byte_len, std::optional<uint32_t> imm, std::span<const std::byte>& d) noexcept;
  void requeue(uint32_t slot) noexcept { pending_[n_pending_++] = slot; }
  void flush_reposts() noexcept;
  void note_poll_error(int rc) noexcept;
  void note_completion_error(const ibv_wc& wc) noexcept;

  Options opts_;
  DeviceInfo dev_;
  size_t max_datagram_ = 0;
  size_t slot_bytes_ = 0;
  uint32_t ring_ = 0;
  ReceiverCounters counters_;

  // Teardown order (reverse of declaration): join -> QP -> CQ -> comp channel -> MR -> memory -> PD -> cm_id.
  EventChannel channel_;
  CmId id_;
  ProtectionDomain pd_;
  MappedMemory pool_;
  MemoryRegion mr_;
  CompChannel comp_;
  CompletionQueue cq_;
  QueuePair qp_;
  MulticastJoin join_;
  sockaddr_storage group_{};
  bool joining_ = false;

  // Pre-built receive WRs and SGEs, one per slot, chained at re-post time.
  std::unique_ptr<ibv_recv_wr[]> wrs_;
  std::unique_ptr<ibv_sge[]> sges_;
  std::unique_ptr<uint32_t[]> pending_;  // slots waiting to be re-posted
  uint32_t n_pending_ = 0;
  uint32_t posted_ = 0;
  uint32_t last_imm_ = 0;
  bool have_imm_ = false;
  unsigned unacked_events_ = 0;
  bool failed_ = false;
  std::string failure_;
};

}  // namespace mdcast::media::verbs
