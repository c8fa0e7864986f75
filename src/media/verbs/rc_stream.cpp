#include "rc_stream.hpp"

#include <algorithm>
#include <cstring>

#include "mdcast/core/error.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs::detail {

RcStream::RcStream(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, uint64_t tag, const Config& cfg)
    : cfg_(cfg), tag_(tag), free_slots_(cfg.send_slots) {
  const size_t bytes = cfg_.recv_chunk * cfg_.recv_slots + cfg_.send_chunk * cfg_.send_slots;
  mem_ = MappedMemory::anonymous(bytes, MappedMemory::Pages::kSmall);
  mr_.reset(ibv_reg_mr(pd, mem_.data(), mem_.size(), IBV_ACCESS_LOCAL_WRITE));
  if (!mr_) fail_errno("control connection on {}: ibv_reg_mr of {} bytes (is `ulimit -l` large enough?)", where(id), bytes);
  ibv_qp_init_attr qa{};
  qa.send_cq = cq;
  qa.recv_cq = cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = cfg_.send_slots + cfg_.extra_send_wr;
  qa.cap.max_recv_wr = cfg_.recv_slots;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, pd, &qa)) fail_errno("control connection on {}: rdma_create_qp(RC)", where(id));
  qp_.reset(id);
  for (uint32_t i = 0; i < cfg_.recv_slots; ++i)
    if (const int rc = repost(i)) fail("control connection on {}: ibv_post_recv: {}", where(id), std::strerror(rc));
}

int RcStream::repost(uint32_t slot) noexcept {
  ibv_sge sge{reinterpret_cast<uintptr_t>(mem_.data() + size_t{slot} * cfg_.recv_chunk),
              static_cast<uint32_t>(cfg_.recv_chunk), mr_->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = make_wr_id(tag_, WrKind::kRecv, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp_->qp, &wr, &bad);
}

bool RcStream::queue(std::span<const std::byte> frame) {
  if (backlog_ + frame.size() > cfg_.max_backlog) return false;
  out_.emplace_back(frame.begin(), frame.end());
  backlog_ += frame.size();
  return true;
}

bool RcStream::queue(std::vector<std::byte>&& frame) {
  if (backlog_ + frame.size() > cfg_.max_backlog) return false;
  backlog_ += frame.size();
  out_.push_back(std::move(frame));
  return true;
}

int RcStream::pump() noexcept {
  while (free_slots_ > 0 && backlog_ > 0) {
    const uint32_t slot = next_slot_;
    std::byte* buf = mem_.data() + cfg_.recv_chunk * cfg_.recv_slots + size_t{slot} * cfg_.send_chunk;
    size_t len = 0;
    // Pack as many queued bytes as fit: many small frames travel in one SEND.
    while (len < cfg_.send_chunk && !out_.empty()) {
      auto& f = out_.front();
      const size_t n = std::min(cfg_.send_chunk - len, f.size() - front_off_);
      std::memcpy(buf + len, f.data() + front_off_, n);
      len += n;
      front_off_ += n;
      if (front_off_ == f.size()) {
        out_.pop_front();
        front_off_ = 0;
      }
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(len), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = make_wr_id(tag_, WrKind::kSend, slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (const int rc = ibv_post_send(qp_->qp, &wr, &bad)) return rc;
    backlog_ -= len;
    bytes_sent_ += len;
    ++sends_posted_;
    --free_slots_;
    next_slot_ = (next_slot_ + 1) % cfg_.send_slots;
  }
  return 0;
}

}  // namespace mdcast::media::verbs::detail
