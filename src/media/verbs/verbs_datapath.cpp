// The verbs data path: posting sends, reaping completions, admitting and
// re-posting receives. Reviewed more strictly than the rest: noexcept, no
// allocation, no exception, no lock of ours, no virtual call; every
// ibv_post_* result is checked and counted, and a failure only marks state
// that the control code acts on.
#include <arpa/inet.h>

#include <cstring>

#include "mdcast/core/bytes.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::verbs {

// ------------------------------------------------------------------ sink --

void VerbsSink::mark_failed(const char* what, int err) noexcept {
  if (failed_) return;
  failed_ = true;
  last_error_ = err;
  // Capacity was reserved at setup: assign does not allocate for short texts.
  failure_.assign(what);
}

void VerbsSink::post_probe(uint32_t slot) noexcept {
  std::byte* buf = aux_mem_.data() + (kStagingSlots + slot) * slot_bytes_;
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(slot_bytes_), aux_mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(qp_.get(), &wr, &bad)) counters_.probe_post_errors.add();
}

int VerbsSink::reap() noexcept {
  ibv_wc wc[16];
  const int n = ibv_poll_cq(cq_.get(), 16, wc);
  if (n < 0) {
    mark_failed("ibv_poll_cq failed on the send CQ", -n);
    return 0;
  }
  for (int i = 0; i < n; ++i) {
    if (wc[i].opcode & IBV_WC_RECV) {
      // The probe: anything here is our own multicast looped back.
      if (wc[i].status == IBV_WC_SUCCESS) {
        counters_.loopback_received.add();
        post_probe(static_cast<uint32_t>(wc[i].wr_id));
      }
      continue;
    }
    if (wc[i].status != IBV_WC_SUCCESS) [[unlikely]] {
      counters_.completion_errors.add();
      mark_failed(ibv_wc_status_str(wc[i].status), wc[i].status);
      continue;
    }
    counters_.completions.add();
    // A signaled send completing means every send before it completed too.
    if (wc[i].wr_id > completed_) completed_ = wc[i].wr_id;
  }
  return n;
}

SendResult VerbsSink::post(const std::byte* data, size_t len, uint32_t lkey, bool with_imm, uint32_t imm,
                                 bool force_signal) noexcept {
  if (failed_ || link_down_) [[unlikely]] {
    // A port that is down would fail the post (rxe: the QP goes to error):
    // the datagram stays in the retransmit ring and the engine goes on.
    if (link_down_) {
      counters_.dropped_link_down.add();
      return SendResult::kSent;
    }
    return SendResult::kBackPressured;
  }
  if (posted_ - completed_ >= sq_depth_) {
    reap();
    if (posted_ - completed_ >= sq_depth_) {
      counters_.send_queue_full.add();
      return SendResult::kBackPressured;
    }
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(data), static_cast<uint32_t>(len), lkey};
  ibv_send_wr wr{};
  wr.wr_id = posted_ + 1;  // the post count: a signaled completion retires everything up to it
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (with_imm) {
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(imm);
  } else {
    wr.opcode = IBV_WR_SEND;
  }
  unsigned flags = 0;
  if (len <= max_inline_) {
    flags |= IBV_SEND_INLINE;
    counters_.inline_sends.add();
  }
  // Unsignaled sends are only retired by a later signaled one: signal at
  // least every signal_every (<= depth/4), so the queue never fills with
  // sends we cannot account for.
  if (force_signal || ++since_signal_ >= signal_every_) {
    flags |= IBV_SEND_SIGNALED;
    since_signal_ = 0;
    counters_.signaled.add();
  }
  wr.send_flags = flags;
  wr.wr.ud.ah = ah_.get();
  wr.wr.ud.remote_qpn = remote_qpn_;
  wr.wr.ud.remote_qkey = remote_qkey_;
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(qp_.get(), &wr, &bad)) [[unlikely]] {
    counters_.post_send_errors.add();
    mark_failed("ibv_post_send failed", rc);
    return SendResult::kBackPressured;
  }
  ++posted_;
  counters_.datagrams_posted.add();
  counters_.bytes_posted.add(len);
  // Keep completions flowing without a reap per send.
  if ((posted_ & 15) == 0) reap();
  return SendResult::kSent;
}

SendResult VerbsSink::send(std::span<const std::byte> d, uint64_t sequence) noexcept {
  const auto imm = static_cast<uint32_t>(sequence);
  if (d.data() >= ring_lo_ && d.data() + d.size() <= ring_hi_) [[likely]] {
    const SendResult r = post(d.data(), d.size(), ring_mr_->lkey, true, imm, false);
    if (r == SendResult::kSent && d.size() > max_inline_) counters_.zero_copy_sends.add();
    return r;
  }
  // Not from the registered ring (a Publisher given other memory).
  return post_staged(d, true, imm);
}

SendResult VerbsSink::send_unsequenced(std::span<const std::byte> d) noexcept {
  // Heartbeats carry immediate data like every datagram (docs/protocol.md,
  // 1.1): their header repeats the last sequenced number, so a receiver sees
  // a lost tail from the completion alone.
  const auto imm = d.size() >= wire::dgram::kHeaderSize
                       ? static_cast<uint32_t>(load_le<uint64_t>(d.data() + wire::dgram::kSequence))
                       : 0u;
  if (d.size() <= max_inline_) return post(d.data(), d.size(), 0, true, imm, false);
  // Heartbeats are built outside the ring.
  return post_staged(d, true, imm);
}

// A copy into a registered staging slot, signaled, so the slot is known free
// again once it completes.
SendResult VerbsSink::post_staged(std::span<const std::byte> d, bool with_imm, uint32_t imm) noexcept {
  const uint32_t s = next_staging_;
  if (staging_busy_until_[s] > completed_) {
    reap();
    if (staging_busy_until_[s] > completed_) return SendResult::kBackPressured;
  }
  std::byte* buf = aux_mem_.data() + s * slot_bytes_;
  std::memcpy(buf, d.data(), d.size());
  const SendResult r = post(buf, d.size(), aux_mr_->lkey, with_imm, imm, true);
  if (r == SendResult::kSent) {
    staging_busy_until_[s] = posted_;
    next_staging_ = (s + 1) % kStagingSlots;
    counters_.staged_sends.add();
  }
  return r;
}

// -------------------------------------------------------------- receiver --

bool VerbsReceiver::admit(uint32_t slot, uint32_t byte_len, std::optional<uint32_t> imm,
                          std::span<const std::byte>& d) noexcept {
  counters_.completions.add();
  --posted_;  // this buffer is ours until requeue() + flush_reposts()
  if (byte_len < kGrhBytes) [[unlikely]] {
    counters_.short_completions.add();
    return false;
  }
  const std::byte* buf = reinterpret_cast<const std::byte*>(sges_[slot].addr);
  d = {buf + kGrhBytes, byte_len - kGrhBytes};
  const bool heartbeat = d.size() >= wire::dgram::kHeaderSize &&
                         (static_cast<uint8_t>(d[wire::dgram::kFlags]) & wire::kFlagUnsequenced) != 0;
  if (!imm || heartbeat) counters_.unsequenced.add();
  if (imm && heartbeat) {
    // A heartbeat's immediate data is the last sequenced number: beyond what
    // arrived, the tail was lost.
    const auto missing = static_cast<int32_t>(*imm - last_imm_);
    if (have_imm_ && missing > 0) {
      counters_.imm_gaps.add();
      counters_.imm_missing.add(static_cast<uint64_t>(missing));
    }
    if (!have_imm_ || missing > 0) last_imm_ = *imm;
    have_imm_ = true;
  } else if (imm) {
    // Quick gap detection from the completion alone.
    if (have_imm_ && *imm != last_imm_ + 1) {
      const auto missing = static_cast<int32_t>(*imm - last_imm_ - 1);
      if (missing > 0) {
        counters_.imm_gaps.add();
        counters_.imm_missing.add(static_cast<uint64_t>(missing));
      }
    }
    if (!have_imm_ || static_cast<int32_t>(*imm - last_imm_) > 0) last_imm_ = *imm;
    have_imm_ = true;
  }
  if (imm) {
    if (d.size() >= wire::dgram::kHeaderSize &&
        static_cast<uint32_t>(load_le<uint64_t>(d.data() + wire::dgram::kSequence)) != *imm) [[unlikely]]
      counters_.imm_mismatch.add();
  }
  counters_.datagrams.add();
  counters_.bytes.add(d.size());
  return true;
}

void VerbsReceiver::flush_reposts() noexcept {
  if (n_pending_ == 0) return;
  if (posted_ < counters_.posted_low.get()) counters_.posted_low.set(posted_);
  for (uint32_t i = 0; i + 1 < n_pending_; ++i) wrs_[pending_[i]].next = &wrs_[pending_[i + 1]];
  wrs_[pending_[n_pending_ - 1]].next = nullptr;
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(qp_.get(), &wrs_[pending_[0]], &bad);
  uint32_t done = n_pending_;
  if (rc) [[unlikely]] {
    counters_.post_recv_errors.add();
    // Everything before `bad` was posted; keep the rest for the next poll.
    done = 0;
    while (done < n_pending_ && &wrs_[pending_[done]] != bad) ++done;
    std::memmove(pending_.get(), pending_.get() + done, (n_pending_ - done) * sizeof(uint32_t));
  }
  posted_ += done;
  counters_.reposted.add(done);
  n_pending_ -= done;
}

void VerbsReceiver::note_poll_error(int rc) noexcept {
  counters_.completion_errors.add();
  if (!failed_) {
    failed_ = true;
    failure_.assign("ibv_poll_cq failed");
  }
  (void)rc;
}

void VerbsReceiver::note_completion_error(const ibv_wc& wc) noexcept {
  counters_.completion_errors.add();
  --posted_;
  if (!failed_) {
    failed_ = true;
    failure_.assign(ibv_wc_status_str(wc.status));
  }
}

}  // namespace mdcast::media::verbs
