// One RC connection carrying control frames as a byte stream (private to the
// verbs medium; both ends use it). Control path: it allocates (frame queue,
// assembler) and is driven from the owner's CQ.
//
// Send side: frames queue up to max_backlog bytes; pump() copies the queue
// into free send slots (<= send_chunk bytes each, frames may straddle) and
// posts one signaled SEND per slot. Receive side: recv_slots buffers of
// recv_chunk bytes stay posted; each completion's bytes go to a
// FrameAssembler and the buffer is re-posted at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "mdcast/core/mapped_memory.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/wire/control.hpp"

namespace mdcast::media::verbs::detail {

// wr_id layout shared by every control QP: connection tag | kind | index.
enum class WrKind : uint8_t { kRecv = 1, kSend = 2, kRead = 3 };
constexpr uint64_t make_wr_id(uint64_t tag, WrKind k, uint32_t index) noexcept {
  return (tag << 24) | (uint64_t{static_cast<uint8_t>(k)} << 20) | (index & 0xfffffu);
}
constexpr uint64_t wr_tag(uint64_t id) noexcept { return id >> 24; }
constexpr WrKind wr_kind(uint64_t id) noexcept { return static_cast<WrKind>((id >> 20) & 0xf); }
constexpr uint32_t wr_index(uint64_t id) noexcept { return static_cast<uint32_t>(id & 0xfffff); }

class RcStream {
 public:
  struct Config {
    size_t send_chunk = 64u << 10;
    uint32_t send_slots = 4;
    size_t recv_chunk = 64u << 10;
    uint32_t recv_slots = 8;
    size_t max_backlog = 8u << 20;
    uint32_t extra_send_wr = 0;  // room in the send queue for the owner's own WRs (RDMA READs)
  };

  // Registers the buffers in pd, creates the RC QP on id (rdma_create_qp,
  // both queues on cq) and posts every receive. Throws Error.
  RcStream(rdma_cm_id* id, ibv_pd* pd, ibv_cq* cq, uint64_t tag, const Config& cfg);
  ~RcStream() = default;
  RcStream(const RcStream&) = delete;
  RcStream& operator=(const RcStream&) = delete;

  // Queues a frame; false (nothing queued) when it would pass max_backlog.
  bool queue(std::span<const std::byte> frame);
  bool queue(std::vector<std::byte>&& frame);
  // Posts queued bytes into free send slots. Returns 0 or the post's errno.
  int pump() noexcept;

  void on_send_done() noexcept { ++free_slots_; }
  // The bytes of a receive completion (valid until repost(slot)).
  [[nodiscard]] std::span<const std::byte> received(uint32_t slot, uint32_t len) const noexcept {
    return {mem_.data() + size_t{slot} * cfg_.recv_chunk, len};
  }
  int repost(uint32_t slot) noexcept;

  [[nodiscard]] size_t backlog() const noexcept { return backlog_; }
  [[nodiscard]] bool drained() const noexcept { return backlog_ == 0 && free_slots_ == cfg_.send_slots; }
  [[nodiscard]] wire::FrameAssembler& assembler() noexcept { return asm_; }
  [[nodiscard]] ibv_qp* qp() const noexcept { return qp_ ? qp_->qp : nullptr; }
  [[nodiscard]] uint64_t tag() const noexcept { return tag_; }
  [[nodiscard]] uint64_t bytes_sent() const noexcept { return bytes_sent_; }
  [[nodiscard]] uint64_t sends_posted() const noexcept { return sends_posted_; }

 private:
  Config cfg_;
  uint64_t tag_;
  MappedMemory mem_;   // recv slots, then send slots
  MemoryRegion mr_;
  CmQueuePair qp_;     // destroyed first: no WR may outlive the memory it points at
  std::deque<std::vector<std::byte>> out_;
  size_t front_off_ = 0;
  size_t backlog_ = 0;
  uint32_t free_slots_;
  uint32_t next_slot_ = 0;
  uint64_t bytes_sent_ = 0;
  uint64_t sends_posted_ = 0;
  wire::FrameAssembler asm_;
};

}  // namespace mdcast::media::verbs::detail
