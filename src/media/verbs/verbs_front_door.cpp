// The shared RC control endpoint (verbs_front_door.hpp).
#include "mdcast/media/verbs/verbs_front_door.hpp"

#include <poll.h>

#include <algorithm>
#include <cstring>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_medium.hpp"
#include "mdcast/wire/control.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using namespace detail;

// ---------------------------------------------------------------- reject ----

std::vector<std::byte> RejectNote::encode() const {
  const size_t n = std::min(text.size(), kMaxText);
  std::vector<std::byte> out(8 + n);
  store_le<uint32_t>(out.data(), kMagic);
  store_le<uint16_t>(out.data() + 4, code);
  store_le<uint16_t>(out.data() + 6, static_cast<uint16_t>(n));
  std::memcpy(out.data() + 8, text.data(), n);
  return out;
}

std::optional<RejectNote> RejectNote::decode(std::span<const std::byte> in) {
  if (in.size() < 8 || load_le<uint32_t>(in.data()) != kMagic) return std::nullopt;
  const size_t n = load_le<uint16_t>(in.data() + 6);
  if (n > kMaxText || 8 + n > in.size()) return std::nullopt;
  RejectNote r;
  r.code = load_le<uint16_t>(in.data() + 4);
  r.text.assign(reinterpret_cast<const char*>(in.data() + 8), n);
  return r;
}

// ----------------------------------------------------------------- inbox ----

namespace {
void refuse(rdma_cm_id* id) noexcept {
  (void)rdma_reject(id, nullptr, 0);
  (void)rdma_destroy_id(id);
}
}  // namespace

RequestInbox::~RequestInbox() { drain(); }

void RequestInbox::attach(rdma_event_channel* server) noexcept {
  const std::lock_guard lock(mu_);
  target_ = server;
}

void RequestInbox::detach() noexcept {
  const std::lock_guard lock(mu_);
  target_ = nullptr;
  drain();
}

void RequestInbox::drain() noexcept {
  for (auto& r : queue_) refuse(r.id);
  queue_.clear();
  count_.store(0, std::memory_order_release);
}

bool RequestInbox::hand_over(rdma_cm_id* id, std::span<const std::byte> private_data, std::string& why) {
  const std::lock_guard lock(mu_);
  if (!target_) {
    why = "its publishing thread has not started serving it, or has stopped";
    return false;
  }
  if (queue_.size() >= kCapacity) {
    why = fmt::format("{} connection requests wait for its publishing thread", kCapacity);
    return false;
  }
  Request r{id, std::vector<std::byte>(private_data.begin(), private_data.end())};
  if (rdma_migrate_id(id, target_) != 0) {
    why = fmt::format("rdma_migrate_id: {}", std::strerror(errno));
    return false;
  }
  queue_.push_back(std::move(r));
  count_.store(queue_.size(), std::memory_order_release);
  return true;
}

std::optional<RequestInbox::Request> RequestInbox::take() {
  const std::lock_guard lock(mu_);
  if (queue_.empty()) return std::nullopt;
  Request r = std::move(queue_.front());
  queue_.pop_front();
  count_.store(queue_.size(), std::memory_order_release);
  return r;
}

// ------------------------------------------------------------------ door ----

VerbsFrontDoor::VerbsFrontDoor(const Options& o) : opts_(resolve_options(o, true)) {
  if (opts_.control_ip.empty()) opts_.control_ip = opts_.local_ip;
  const std::string what = fmt::format("shared control endpoint {}:{}", opts_.control_ip, opts_.control_port);
  channel_ = make_event_channel(what);
  listen_ = listen_rc(channel_.get(), opts_.control_ip, opts_.control_port, what);
}

VerbsFrontDoor::~VerbsFrontDoor() = default;

uint16_t VerbsFrontDoor::port() const noexcept { return ntohs(rdma_get_src_port(listen_.get())); }

std::shared_ptr<RequestInbox> VerbsFrontDoor::add_channel(uint16_t channel) {
  auto [it, fresh] = inboxes_.try_emplace(channel);
  if (!fresh) fail("shared control endpoint {}:{}: channel {} added twice", opts_.control_ip, port(), channel);
  it->second = std::make_shared<RequestInbox>(channel);
  return it->second;
}

std::string VerbsFrontDoor::channel_list() const {
  std::vector<uint16_t> ids;
  for (const auto& [id, inbox] : inboxes_) ids.push_back(id);
  return wire::format_channel_ids(ids);
}

void VerbsFrontDoor::reject(rdma_cm_id* id, uint16_t code, const std::string& text, Counter& reason) {
  reason.add();
  log_line(opts_.log, fmt::format("shared control endpoint: rejected a connection from {}: {}",
                                  to_string(rdma_get_peer_addr(id)), text));
  const auto note = RejectNote{code, text}.encode();
  (void)rdma_reject(id, note.data(), static_cast<uint8_t>(note.size()));
  (void)rdma_destroy_id(id);
}

void VerbsFrontDoor::route(rdma_cm_id* id, std::span<const std::byte> pd) {
  counters_.connect_requests.add();
  const auto hello = parse_hello(pd);
  if (!hello || !hello->channel) {
    reject(id, static_cast<uint16_t>(wire::ErrorCode::kMalformed),
           hello ? "a version-1 hello names no channel; this endpoint serves several: upgrade the subscriber"
                 : "not an mdcast control client (no hello in the connection request)",
           counters_.no_channel);
    return;
  }
  const auto it = inboxes_.find(*hello->channel);
  if (it == inboxes_.end()) {
    reject(id, static_cast<uint16_t>(wire::ErrorCode::kUnknownChannel),
           fmt::format("this publisher serves channels {}; channel {} is not among them", channel_list(),
                       *hello->channel),
           counters_.unknown_channel);
    return;
  }
  std::string why;
  if (!it->second->hand_over(id, pd, why)) {
    reject(id, static_cast<uint16_t>(wire::ErrorCode::kOverloaded), fmt::format("channel {}: {}", *hello->channel, why),
           counters_.channel_busy);
    return;
  }
  counters_.routed.add();
}

size_t VerbsFrontDoor::poll(uint64_t wait_ns) {
  pollfd p{channel_->fd, POLLIN, 0};
  const int timeout_ms = wait_ns == 0 ? 0 : static_cast<int>(std::min<uint64_t>((wait_ns + kNsPerMs - 1) / kNsPerMs, 1000));
  if (::poll(&p, 1, timeout_ms) <= 0) return 0;
  size_t work = 0;
  while (auto ev = try_cm_event(channel_.get())) {
    const rdma_cm_event_type type = ev->event;
    rdma_cm_id* id = ev->id;
    std::vector<std::byte> pdata;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data) {
      const auto* b = static_cast<const std::byte*>(ev->param.conn.private_data);
      pdata.assign(b, b + ev->param.conn.private_data_len);
    }
    ev.reset();  // acknowledged before the id moves or goes
    ++work;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) route(id, pdata);
    else if (type == RDMA_CM_EVENT_DEVICE_REMOVAL) log_line(opts_.log, "shared control endpoint: RDMA device removed");
  }
  return work;
}

}  // namespace mdcast::media::verbs
