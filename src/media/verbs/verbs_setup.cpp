// Setup of the verbs data path: device queries, rdma_cm address resolution
// and multicast joins, UD QP bring-up, memory registration. Control code:
// it may allocate and throw; every error names device, group and errno.
#include "verbs_setup.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "mdcast/core/error.hpp"
#include "mdcast/history/slot_log.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_receiver.hpp"
#include "mdcast/media/verbs/verbs_sink.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::verbs {

static_assert(kDefaultQKey == RDMA_UDP_QKEY, "the default QKey is rdma_cm's (docs/protocol.md 1.4)");

namespace detail {

sockaddr_storage parse_address(const std::string& ip, uint16_t port, std::string_view what) {
  if (ip.empty()) fail("{}: no address given", what);
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(ip.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) fail("{}: '{}' is not a numeric IPv4/IPv6 address ({})", what, ip, gai_strerror(rc));
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  if (ss.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(port);
  else reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(port);
  return ss;
}

std::string to_string(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    port = ntohs(in->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in->sin6_addr, buf, sizeof buf);
    port = ntohs(in->sin6_port);
  }
  return port ? fmt::format("{}:{}", buf, port) : std::string(buf);
}

int set_nonblocking(int fd) {
  const int fl = fcntl(fd, F_GETFL);
  return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

EventChannel make_event_channel(std::string_view what) {
  EventChannel ch(rdma_create_event_channel());
  if (!ch)
    fail_errno("{}: rdma_create_event_channel (is /dev/infiniband/rdma_cm there and rdma_ucm loaded?)", what);
  if (set_nonblocking(ch->fd) < 0) fail_errno("{}: O_NONBLOCK on the rdma_cm event channel", what);
  return ch;
}

CmId listen_rc(rdma_event_channel* ch, const std::string& ip, uint16_t port, std::string_view what) {
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch, &raw, nullptr, RDMA_PS_TCP)) fail_errno("{}: rdma_create_id", what);
  CmId id(raw);
  auto addr = parse_address(ip, port, "control_ip");
  if (rdma_bind_addr(id.get(), reinterpret_cast<sockaddr*>(&addr)))
    fail_errno("{}: rdma_bind_addr (is {} a local address of an RDMA netdev, and the port free?)", what, ip);
  if (rdma_listen(id.get(), 64)) fail_errno("{}: rdma_listen", what);
  return id;
}

CmEvent try_cm_event(rdma_event_channel* ch) {
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) == 0) return CmEvent(ev);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return nullptr;
  fail_errno("rdma_get_cm_event");
}

CmEvent next_cm_event(rdma_event_channel* ch, int timeout_ms) {
  const uint64_t deadline = monotonic_ns() + static_cast<uint64_t>(timeout_ms) * kNsPerMs;
  for (;;) {
    if (auto ev = try_cm_event(ch)) return ev;
    const uint64_t now = monotonic_ns();
    if (now >= deadline) return nullptr;
    pollfd p{ch->fd, POLLIN, 0};
    (void)::poll(&p, 1, static_cast<int>((deadline - now) / kNsPerMs) + 1);
  }
}

CmEvent expect_cm_event(rdma_event_channel* ch, rdma_cm_event_type want, int timeout_ms, std::string_view what) {
  auto ev = next_cm_event(ch, timeout_ms);
  if (!ev) fail("{}: no {} within {} ms", what, rdma_event_str(want), timeout_ms);
  if (ev->event != want)
    fail("{}: got {} (status {}: {}) instead of {}", what, rdma_event_str(ev->event), ev->status,
         std::strerror(ev->status < 0 ? -ev->status : ev->status), rdma_event_str(want));
  return ev;
}

namespace {
void modify(ibv_qp* qp, ibv_qp_attr& a, int mask, std::string_view state, std::string_view what) {
  if (const int rc = ibv_modify_qp(qp, &a, mask))
    fail("{}: ibv_modify_qp to {}: {} (errno {})", what, state, std::strerror(rc), rc);
}
}  // namespace

void ud_qp_to_rts(rdma_cm_id* id, ibv_qp* qp, uint32_t qkey, bool send, std::string_view what) {
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  // rdma_cm knows the port and the P_Key index for this address; the QKey is
  // ours: every member of the group must use the same one.
  if (rdma_init_qp_attr(id, &a, &mask)) fail_errno("{}: rdma_init_qp_attr(INIT)", what);
  a.qkey = qkey;
  mask |= IBV_QP_QKEY;
  modify(qp, a, mask, "INIT", what);
  a = {};
  a.qp_state = IBV_QPS_RTR;
  modify(qp, a, IBV_QP_STATE, "RTR", what);
  if (!send) return;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  modify(qp, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS", what);
}

void log_line(const LogFn& log, std::string_view s) {
  if (log) {
    log(s);
    return;
  }
  std::fprintf(stderr, "mdcast-verbs: %.*s\n", static_cast<int>(s.size()), s.data());
}

int post_join(rdma_cm_id* id, const sockaddr_storage& group, bool send_only) noexcept {
  auto* g = const_cast<sockaddr*>(reinterpret_cast<const sockaddr*>(&group));
  if (send_only) {
    rdma_cm_join_mc_attr_ex mc{};
    mc.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
    mc.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
    mc.addr = g;
    return rdma_join_multicast_ex(id, &mc, nullptr) == 0 ? 0 : errno;
  }
  return rdma_join_multicast(id, g, nullptr) == 0 ? 0 : errno;
}

CmEvents drain_data_events(rdma_event_channel* ch, bool joining, rdma_ud_param* ud) {
  CmEvents r;
  // Each event is acknowledged before the next is read: rdma_leave_multicast
  // waits for every event of its group to be acknowledged.
  while (auto ev = try_cm_event(ch)) {
    switch (ev->event) {
      case RDMA_CM_EVENT_MULTICAST_JOIN:
        if (joining && !r.joined) {
          r.joined = true;
          *ud = ev->param.ud;
        }
        break;
      case RDMA_CM_EVENT_MULTICAST_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
        if (joining && !r.joined) {
          r.join_failed = true;
          r.error = fmt::format("{} (status {}: {})", rdma_event_str(ev->event), ev->status,
                                std::strerror(ev->status < 0 ? -ev->status : ev->status));
        } else if (ev->event == RDMA_CM_EVENT_MULTICAST_ERROR) {
          ++r.multicast_errors;
        }
        break;
      case RDMA_CM_EVENT_ADDR_CHANGE:
        ++r.addr_changes;
        break;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        r.device_removed = true;
        break;
      default:
        break;
    }
  }
  return r;
}

bool qp_in_error(ibv_qp* qp) noexcept {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) != 0) return true;
  return a.qp_state == IBV_QPS_ERR || a.qp_state == IBV_QPS_SQE;
}

std::string where(rdma_cm_id* id) {
  if (!id || !id->verbs) return "(no device)";
  return fmt::format("{} port {}", ibv_get_device_name(id->verbs->device), id->port_num);
}

}  // namespace detail

using namespace detail;

// ------------------------------------------------------------------ join --

MulticastJoin::MulticastJoin(rdma_cm_id* id, const sockaddr* group) noexcept : id_(id) {
  std::memcpy(&group_, group, group->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
}

MulticastJoin::MulticastJoin(MulticastJoin&& o) noexcept
    : id_(std::exchange(o.id_, nullptr)), group_(o.group_), qp_(std::exchange(o.qp_, nullptr)), mgid_(o.mgid_),
      mlid_(o.mlid_) {}

MulticastJoin& MulticastJoin::operator=(MulticastJoin&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = std::exchange(o.id_, nullptr);
    group_ = o.group_;
    qp_ = std::exchange(o.qp_, nullptr);
    mgid_ = o.mgid_;
    mlid_ = o.mlid_;
  }
  return *this;
}

void MulticastJoin::reset() noexcept {
  if (qp_) (void)ibv_detach_mcast(qp_, &mgid_, mlid_);
  if (id_) (void)rdma_leave_multicast(id_, reinterpret_cast<sockaddr*>(&group_));
  qp_ = nullptr;
  id_ = nullptr;
}

// ------------------------------------------------------- shared pieces ----

namespace {

// Resolves local_ip -> group on a fresh UDP-port-space id: that binds the id
// to the device and port that own local_ip.
CmId resolve_group(rdma_event_channel* ch, const Options& o, sockaddr_storage& group, const std::string& what) {
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(ch, &raw, nullptr, RDMA_PS_UDP)) fail_errno("{}: rdma_create_id", what);
  CmId id(raw);
  auto src = parse_address(o.local_ip, 0, "local_ip");
  group = parse_address(o.group_ip, 0, "group_ip");
  if (rdma_resolve_addr(id.get(), reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&group),
                        o.setup_timeout_ms))
    fail_errno("{}: rdma_resolve_addr {} -> {} (is {} configured on an RDMA-capable netdev with a route to 224.0.0.0/4?)",
               what, o.local_ip, o.group_ip, o.local_ip);
  (void)expect_cm_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, o.setup_timeout_ms,
                        fmt::format("{}: resolving {} -> {}", what, o.local_ip, o.group_ip));
  if (!id->verbs) fail("{}: {} is not on an RDMA device", what, o.local_ip);
  const std::string dev = ibv_get_device_name(id->verbs->device);
  if (!o.device.empty() && o.device != dev)
    fail("{}: local_ip {} belongs to device {}, not to the configured device {}", what, o.local_ip, dev, o.device);
  return id;
}

struct Joined {
  MulticastJoin join;
  rdma_ud_param ud{};
  bool send_only = false;
};

Joined join_group(rdma_event_channel* ch, rdma_cm_id* id, sockaddr_storage& group, JoinMode mode, const Options& o,
                  const std::string& what) {
  auto* g = reinterpret_cast<sockaddr*>(&group);
  Joined r;
  if (mode == JoinMode::kSendOnly) {
    rdma_cm_join_mc_attr_ex mc{};
    mc.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
    mc.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
    mc.addr = g;
    if (rdma_join_multicast_ex(id, &mc, nullptr) == 0) {
      auto ev = next_cm_event(ch, o.setup_timeout_ms);
      if (ev && ev->event == RDMA_CM_EVENT_MULTICAST_JOIN) {
        r.ud = ev->param.ud;
        r.join = MulticastJoin(id, g);
        r.send_only = true;
        return r;
      }
      log_line(o.log, fmt::format("{}: send-only join of {} failed ({}); falling back to a full join without "
                                  "attaching the QP (subscribers drop own frames by sender id)",
                                  what, o.group_ip, ev ? rdma_event_str(ev->event) : "timeout"));
      (void)rdma_leave_multicast(id, g);
    } else {
      log_line(o.log, fmt::format("{}: {} refuses send-only multicast joins ({}); falling back to a full join "
                                  "without attaching the QP (subscribers drop own frames by sender id)",
                                  what, where(id), std::strerror(errno)));
    }
  }
  if (rdma_join_multicast(id, g, nullptr)) fail_errno("{}: rdma_join_multicast {}", what, o.group_ip);
  auto ev = expect_cm_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, o.setup_timeout_ms,
                            fmt::format("{}: joining {} on {}", what, o.group_ip, where(id)));
  r.ud = ev->param.ud;
  r.join = MulticastJoin(id, g);
  return r;
}

constexpr size_t round64(size_t n) { return (n + 63) / 64 * 64; }

MemoryRegion register_memory(ibv_pd* pd, std::span<std::byte> m, int access, const std::string& what) {
  MemoryRegion mr(ibv_reg_mr(pd, m.data(), m.size(), access));
  if (!mr) fail_errno("{}: ibv_reg_mr of {} bytes (is `ulimit -l` large enough?)", what, m.size());
  return mr;
}

}  // namespace

// ------------------------------------------------------------------ sink --

VerbsSink::VerbsSink(const Options& opts) : opts_(opts) {
  const std::string what = fmt::format("verbs publisher (local {}, group {})", opts_.local_ip, opts_.group_ip);
  channel_ = make_event_channel(what);
  id_ = resolve_group(channel_.get(), opts_, group_, what);
  dev_ = with_context(what, [&] { return query_device(id_->verbs, id_->port_num); });
  max_datagram_ = dev_.max_datagram;
  if (opts_.max_datagram) {
    if (opts_.max_datagram > dev_.max_datagram || opts_.max_datagram < wire::kMinDatagram)
      fail("{}: max_datagram {} outside [{}, {}] (the active MTU of {})", what, opts_.max_datagram,
           wire::kMinDatagram, dev_.max_datagram, dev_.describe());
    max_datagram_ = opts_.max_datagram;
  }
  if (opts_.qkey & 0x80000000u) fail("{}: qkey 0x{:x} has the high bit set (a controlled QKey needs privilege)", what, opts_.qkey);

  pd_.reset(ibv_alloc_pd(id_->verbs));
  if (!pd_) fail_errno("{} on {}: ibv_alloc_pd", what, dev_.name);

  // The retransmit ring: allocated and registered once; datagrams are built
  // in its slots and sent from them, and subscribers READ it.
  ring_mem_ = MappedMemory::anonymous(history::SlotLog::memory_for(opts_.retransmit_bytes, max_datagram_));
  if (!ring_mem_.huge_pages())
    log_line(opts_.log, fmt::format("retransmit ring ({} bytes): no huge pages reserved (vm.nr_hugepages); "
                                    "using 4 KiB pages",
                                    ring_mem_.size()));
  ring_mr_ = register_memory(pd_.get(), ring_mem_.span(),
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, what + ": retransmit ring");
  ring_lo_ = ring_mem_.data();
  ring_hi_ = ring_mem_.data() + ring_mem_.size();

  slot_bytes_ = round64(kGrhBytes + max_datagram_);
  aux_mem_ = MappedMemory::anonymous(slot_bytes_ * (kStagingSlots + kProbeSlots), MappedMemory::Pages::kSmall);
  aux_mr_ = register_memory(pd_.get(), aux_mem_.span(), IBV_ACCESS_LOCAL_WRITE, what + ": staging buffers");

  sq_depth_ = std::min<uint32_t>(opts_.send_queue_depth, static_cast<uint32_t>(dev_.max_qp_wr));
  if (sq_depth_ < 16) fail("{}: send_queue_depth {} too small (at least 16)", what, sq_depth_);
  signal_every_ = std::clamp<uint32_t>(opts_.signal_every, 1, sq_depth_ / 4);
  cq_.reset(ibv_create_cq(id_->verbs, static_cast<int>(sq_depth_ + kProbeSlots + 16), nullptr, nullptr, 0));
  if (!cq_) fail_errno("{} on {}: ibv_create_cq", what, dev_.name);

  ibv_qp_init_attr qa{};
  qa.send_cq = cq_.get();
  qa.recv_cq = cq_.get();
  qa.qp_type = IBV_QPT_UD;
  qa.cap.max_send_wr = sq_depth_;
  qa.cap.max_recv_wr = kProbeSlots;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = opts_.max_inline;
  qp_.reset(ibv_create_qp(pd_.get(), &qa));
  if (!qp_ && opts_.max_inline) {
    // Some devices refuse the inline size asked for: go without inline.
    qa.cap.max_inline_data = 0;
    qp_.reset(ibv_create_qp(pd_.get(), &qa));
  }
  if (!qp_) fail_errno("{} on {}: ibv_create_qp(UD, {} send WRs)", what, dev_.name, sq_depth_);
  max_inline_ = std::min(qa.cap.max_inline_data, opts_.max_inline);
  bring_up_qp();

  auto j = join_group(channel_.get(), id_.get(), group_, opts_.join, opts_, what);
  send_only_ = j.send_only;
  counters_.send_only_join.set(send_only_ ? 1 : 0);
  join_ = std::move(j.join);
  if (opts_.join == JoinMode::kFull) {
    // An explicit full member: attach, so the QP hears the group (itself included).
    if (const int rc = ibv_attach_mcast(qp_.get(), &j.ud.ah_attr.grh.dgid, j.ud.ah_attr.dlid))
      fail("{}: ibv_attach_mcast on {}: {} (errno {})", what, dev_.name, std::strerror(rc), rc);
    join_.attached(qp_.get(), j.ud.ah_attr.grh.dgid, j.ud.ah_attr.dlid);
  }
  // One address handle for the group, made once per join (a rejoin makes the next: verbs_rejoin.cpp).
  ah_.reset(ibv_create_ah(pd_.get(), &j.ud.ah_attr));
  if (!ah_) fail_errno("{} on {}: ibv_create_ah for group {}", what, dev_.name, opts_.group_ip);
  remote_qpn_ = j.ud.qp_num;
  remote_qkey_ = opts_.qkey;
  failure_.reserve(256);
}

VerbsSink::~VerbsSink() = default;

void VerbsSink::bring_up_qp() {
  ud_qp_to_rts(id_.get(), qp_.get(), opts_.qkey, true,
               fmt::format("verbs publisher UD QP on {}", where(id_.get())));
  for (uint32_t i = 0; i < kProbeSlots; ++i) post_probe(i);
}

void VerbsSink::recover() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  if (const int rc = ibv_modify_qp(qp_.get(), &a, IBV_QP_STATE))
    fail("verbs publisher: resetting the UD QP on {} after '{}': {}", where(id_.get()), failure_, std::strerror(rc));
  // Drain whatever the reset left in the CQ (flushed completions).
  ibv_wc wc[16];
  while (ibv_poll_cq(cq_.get(), 16, wc) > 0) {
  }
  bring_up_qp();
  completed_ = posted_;
  since_signal_ = 0;
  for (auto& s : staging_busy_until_) s = 0;
  failed_ = false;
  counters_.qp_recoveries.add();
}

// -------------------------------------------------------------- receiver --

VerbsReceiver::VerbsReceiver(const Options& opts) : opts_(opts) {
  const std::string what = fmt::format("verbs subscriber (local {}, group {})", opts_.local_ip, opts_.group_ip);
  channel_ = make_event_channel(what);
  id_ = resolve_group(channel_.get(), opts_, group_, what);
  dev_ = with_context(what, [&] { return query_device(id_->verbs, id_->port_num); });
  max_datagram_ = dev_.max_datagram;
  if (opts_.qkey & 0x80000000u) fail("{}: qkey 0x{:x} has the high bit set (a controlled QKey needs privilege)", what, opts_.qkey);

  // ~100 ms of the peak rate, within the configured and the device's bounds.
  const auto want = static_cast<uint64_t>(opts_.rate / 10.0);
  uint64_t ring = std::clamp<uint64_t>(want, opts_.min_ring, std::max(opts_.min_ring, opts_.max_ring));
  ring = std::min<uint64_t>(ring, static_cast<uint64_t>(dev_.max_qp_wr));
  ring = std::min<uint64_t>(ring, static_cast<uint64_t>(dev_.max_cqe) - 1);
  ring_ = static_cast<uint32_t>(ring);
  slot_bytes_ = round64(kGrhBytes + max_datagram_);

  pd_.reset(ibv_alloc_pd(id_->verbs));
  if (!pd_) fail_errno("{} on {}: ibv_alloc_pd", what, dev_.name);
  pool_ = MappedMemory::anonymous(slot_bytes_ * ring_);
  if (!pool_.huge_pages())
    log_line(opts_.log, fmt::format("receive ring ({} x {} bytes): no huge pages reserved; using 4 KiB pages", ring_,
                                    slot_bytes_));
  mr_ = register_memory(pd_.get(), pool_.span(), IBV_ACCESS_LOCAL_WRITE, what + ": receive ring");
  if (opts_.adaptive) {
    comp_.reset(ibv_create_comp_channel(id_->verbs));
    if (!comp_) fail_errno("{} on {}: ibv_create_comp_channel", what, dev_.name);
    if (set_nonblocking(comp_->fd) < 0) fail_errno("{}: O_NONBLOCK on the completion channel", what);
  }
  cq_.reset(ibv_create_cq(id_->verbs, static_cast<int>(ring_ + 1), nullptr, comp_.get(), 0));
  if (!cq_) fail_errno("{} on {}: ibv_create_cq({} entries)", what, dev_.name, ring_ + 1);

  ibv_qp_init_attr qa{};
  qa.send_cq = cq_.get();
  qa.recv_cq = cq_.get();
  qa.qp_type = IBV_QPT_UD;
  qa.cap.max_send_wr = 1;
  qa.cap.max_recv_wr = ring_;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qp_.reset(ibv_create_qp(pd_.get(), &qa));
  if (!qp_) fail_errno("{} on {}: ibv_create_qp(UD, {} receive WRs)", what, dev_.name, ring_);

  wrs_ = std::make_unique<ibv_recv_wr[]>(ring_);
  sges_ = std::make_unique<ibv_sge[]>(ring_);
  pending_ = std::make_unique<uint32_t[]>(ring_ + kBatch);
  for (uint32_t i = 0; i < ring_; ++i) {
    sges_[i] = {reinterpret_cast<uintptr_t>(pool_.data() + size_t{i} * slot_bytes_),
                static_cast<uint32_t>(slot_bytes_), mr_->lkey};
    wrs_[i] = {};
    wrs_[i].wr_id = i;
    wrs_[i].sg_list = &sges_[i];
    wrs_[i].num_sge = 1;
  }
  bring_up_qp();

  // Receives are posted before the join: nothing that arrives is lost for want of a buffer.
  auto j = join_group(channel_.get(), id_.get(), group_, opts_.subscriber_join, opts_, what);
  join_ = std::move(j.join);
  if (const int rc = ibv_attach_mcast(qp_.get(), &j.ud.ah_attr.grh.dgid, j.ud.ah_attr.dlid))
    fail("{}: ibv_attach_mcast on {}: {} (errno {}; max_mcast_qp_attach is {})", what, dev_.name,
         std::strerror(rc), rc, dev_.max_mcast_qp_attach);
  join_.attached(qp_.get(), j.ud.ah_attr.grh.dgid, j.ud.ah_attr.dlid);
  counters_.posted_low.set(posted_);
  failure_.reserve(256);
}

VerbsReceiver::~VerbsReceiver() {
  // A CQ with unacknowledged events cannot be destroyed.
  if (unacked_events_) ibv_ack_cq_events(cq_.get(), unacked_events_);
}

void VerbsReceiver::bring_up_qp() {
  ud_qp_to_rts(id_.get(), qp_.get(), opts_.qkey, false,
               fmt::format("verbs subscriber UD QP on {}", where(id_.get())));
  post_all();
}

void VerbsReceiver::post_all() {
  n_pending_ = 0;
  posted_ = 0;
  for (uint32_t i = 0; i < ring_; ++i) pending_[n_pending_++] = i;
  flush_reposts();
  if (posted_ != ring_)
    fail("verbs subscriber on {}: could only post {} of {} receive buffers", where(id_.get()), posted_, ring_);
}

void VerbsReceiver::recover() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  if (const int rc = ibv_modify_qp(qp_.get(), &a, IBV_QP_STATE))
    fail("verbs subscriber: resetting the UD QP on {} after '{}': {}", where(id_.get()), failure_, std::strerror(rc));
  ibv_wc wc[kBatch];
  while (ibv_poll_cq(cq_.get(), kBatch, wc) > 0) {
  }
  bring_up_qp();
  failed_ = false;
  counters_.qp_recoveries.add();
}

bool VerbsReceiver::arm() noexcept { return comp_ && ibv_req_notify_cq(cq_.get(), 0) == 0; }

bool VerbsReceiver::wait(int timeout_ms, std::span<const int> also) noexcept {
  pollfd fds[8];
  nfds_t n = 0;
  if (comp_) fds[n++] = {comp_->fd, POLLIN, 0};
  for (const int fd : also)
    if (fd >= 0 && n < 8) fds[n++] = {fd, POLLIN, 0};
  if (n == 0) return false;
  counters_.blocking_waits.add();
  if (::poll(fds, n, timeout_ms) <= 0) return false;
  if (comp_ && (fds[0].revents & POLLIN)) take_event();
  return true;
}

void VerbsReceiver::take_event() noexcept {
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(comp_.get(), &cq, &ctx) == 0) {
    counters_.wakeups.add();
    // Acknowledging takes a lock: do it in batches.
    if (++unacked_events_ >= 64) {
      ibv_ack_cq_events(cq_.get(), unacked_events_);
      unacked_events_ = 0;
    }
  }
}

}  // namespace mdcast::media::verbs
