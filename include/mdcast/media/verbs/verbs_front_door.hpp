// One RC control endpoint for every channel of a verbs publisher: the
// rdma_cm counterpart of media/stream/front_door.hpp.
//
// A VerbsFrontDoor listens on control_ip:control_port on a thread of its
// owner's choosing (mdcast publish: the main thread). A connection request's
// private data is the client's hello, which names its channel (version 2,
// verbs_control.hpp); the door moves the request's rdma_cm id onto that
// channel's server's event channel (rdma_migrate_id, the call rdma_cm has
// for handing connections to other threads) and queues it in the channel's
// RequestInbox. The server, on the thread that publishes the channel,
// accepts it as if its own listener had heard it: its QP, its ring's RDMA
// READ advert, its limits. Later events of the connection arrive on the
// server's channel.
//
// A request without a hello, with a version-1 hello (no channel), for a
// channel the publisher lacks, or for a channel whose server is gone or has
// 64 requests waiting is rejected, with a reason the client logs (RejectNote),
// and counted.
//
// Threads: the door is single-threaded (its owner's). An inbox is shared by
// the door and one server; a mutex (control code, once per connection) keeps
// a request from being moved onto a server's event channel while that server
// is tearing it down. The server looks at its inbox with one atomic load per
// poll.
#pragma once

#include <rdma/rdma_cma.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/media/verbs/verbs_counters.hpp"
#include "mdcast/media/verbs/verbs_handles.hpp"
#include "mdcast/media/verbs/verbs_options.hpp"

namespace mdcast::media::verbs {

// Why a request was rejected, in the REJ's private data (at most 148 bytes
// on IB/RoCE): u32 magic "MDRJ", u16 mdcast ErrorCode, u16 text length, text.
struct RejectNote {
  static constexpr uint32_t kMagic = 0x4a52444d;
  static constexpr size_t kMaxText = 136;
  uint16_t code = 0;
  std::string text;
  [[nodiscard]] std::vector<std::byte> encode() const;
  [[nodiscard]] static std::optional<RejectNote> decode(std::span<const std::byte> in);
};

// Connection requests on their way from the door to one channel's server.
class RequestInbox {
 public:
  static constexpr size_t kCapacity = 64;
  struct Request {
    rdma_cm_id* id = nullptr;
    std::vector<std::byte> private_data;
  };
  explicit RequestInbox(uint16_t channel) noexcept : channel_(channel) {}
  RequestInbox(const RequestInbox&) = delete;
  RequestInbox& operator=(const RequestInbox&) = delete;
  ~RequestInbox();  // rejects and destroys what no server took

  // Server: where requests are moved to (its event channel), from now on.
  void attach(rdma_event_channel* server) noexcept;
  // Server, before its event channel goes: nothing more is moved onto it,
  // and what waits is rejected and destroyed.
  void detach() noexcept;
  // Door: moves id onto the server's event channel and queues it. False
  // with `why` (no server attached, full, rdma_migrate_id failed): the id
  // is still the caller's.
  bool hand_over(rdma_cm_id* id, std::span<const std::byte> private_data, std::string& why);
  // Server: one acquire load.
  [[nodiscard]] bool empty() const noexcept { return count_.load(std::memory_order_acquire) == 0; }
  // Server: the oldest request, whose id is now on its event channel.
  std::optional<Request> take();
  [[nodiscard]] uint16_t channel() const noexcept { return channel_; }

 private:
  void drain() noexcept;
  const uint16_t channel_;
  std::mutex mu_;
  rdma_event_channel* target_ = nullptr;
  std::deque<Request> queue_;
  std::atomic<size_t> count_{0};
};


class VerbsFrontDoor {
 public:
  // Listens on o.control_ip (resolved: local_ip if empty) : o.control_port.
  // Throws Error naming the address and errno.
  explicit VerbsFrontDoor(const Options& o);
  VerbsFrontDoor(const VerbsFrontDoor&) = delete;
  VerbsFrontDoor& operator=(const VerbsFrontDoor&) = delete;
  ~VerbsFrontDoor();

  // Channel `channel`'s inbox (a wire channel id), for its server
  // (Options::control_inbox). Throws Error for a channel added twice.
  std::shared_ptr<RequestInbox> add_channel(uint16_t channel);
  // Routes connection requests; waits up to wait_ns for one (0: never blocks).
  size_t poll(uint64_t wait_ns = 0);
  // media::ControlDoor.
  size_t wait(uint64_t wait_ns) { return poll(wait_ns); }
  [[nodiscard]] CounterGroup counter_group() const { return media::counter_group("door", counters_); }

  [[nodiscard]] uint16_t port() const noexcept;
  [[nodiscard]] const VerbsDoorCounters& counters() const noexcept { return counters_; }

 private:
  void route(rdma_cm_id* id, std::span<const std::byte> private_data);
  void reject(rdma_cm_id* id, uint16_t code, const std::string& text, Counter& reason);
  [[nodiscard]] std::string channel_list() const;

  Options opts_;
  VerbsDoorCounters counters_;
  std::map<uint16_t, std::shared_ptr<RequestInbox>> inboxes_;
  EventChannel channel_;  // after the inboxes: gone before them (what they hold was moved off it)
  CmId listen_;
};

static_assert(media::ControlDoor<VerbsFrontDoor>);

}  // namespace mdcast::media::verbs
