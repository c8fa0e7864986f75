// The publisher's control server over RC (see verbs_control.hpp). Control
// code on the publisher's thread: it never blocks, and no client can make it
// wait or reach another client.
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/history/slot_log.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"
#include "rc_stream.hpp"
#include "verbs_server_conn.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using namespace detail;

// --------------------------------------------------------------- advert ----

void RingAdvert::encode(std::byte* out) const noexcept {
  store_le<uint32_t>(out, kMagic);
  store_le<uint16_t>(out + 4, kVersion);
  store_le<uint16_t>(out + 6, 0);
  store_le<uint64_t>(out + 8, addr);
  store_le<uint32_t>(out + 16, rkey);
  store_le<uint32_t>(out + 20, slot_size);
  store_le<uint64_t>(out + 24, slots);
}

std::optional<RingAdvert> RingAdvert::decode(std::span<const std::byte> in) noexcept {
  if (in.size() < kSize || load_le<uint32_t>(in.data()) != kMagic || load_le<uint16_t>(in.data() + 4) != kVersion)
    return std::nullopt;
  RingAdvert a;
  a.addr = load_le<uint64_t>(in.data() + 8);
  a.rkey = load_le<uint32_t>(in.data() + 16);
  a.slot_size = load_le<uint32_t>(in.data() + 20);
  a.slots = load_le<uint64_t>(in.data() + 24);
  if (a.slots == 0 || a.slot_size < history::SlotLog::kSlotHeader + wire::dgram::kHeaderSize || a.slot_size % 64)
    return std::nullopt;
  return a;
}

// ---------------------------------------------------------------- hello ----

void Hello::encode(std::byte* out) const noexcept {
  store_le<uint32_t>(out, kHelloMagic);
  store_le<uint16_t>(out + 4, version);
  store_le<uint16_t>(out + 6, channel.value_or(0));
}

std::optional<Hello> parse_hello(std::span<const std::byte> in) noexcept {
  if (in.size() < kHelloSize || load_le<uint32_t>(in.data()) != kHelloMagic) return std::nullopt;
  Hello h;
  h.version = load_le<uint16_t>(in.data() + 4);
  if (h.version == 1) return h;
  if (h.version != 2) return std::nullopt;
  h.channel = load_le<uint16_t>(in.data() + 6);
  return h;
}

namespace {
ClientId client_of(rdma_cm_id* id) noexcept {
  return static_cast<ClientId>(reinterpret_cast<uintptr_t>(id->context));
}
}  // namespace

VerbsControlServer::VerbsControlServer(const Options& opts, const Ring& ring, const ServerLimits& limits)
    : opts_(opts), ring_(ring), limits_(limits) {
  if (limits_.frames_per_poll == 0 || limits_.frames_per_client_per_poll == 0 || limits_.max_clients == 0 ||
      limits_.max_unadmitted == 0 || limits_.max_frame_unadmitted < wire::ctl::kHeaderSize ||
      limits_.max_frame_admitted < limits_.max_frame_unadmitted || limits_.sweep_interval_ns == 0)
    fail("control server: limits out of range (frames per poll {}/{} per client, clients {}, un-admitted {}, "
         "inbound frames {}/{} bytes): each must be at least 1, frames at least {} and admitted >= un-admitted",
         limits_.frames_per_poll, limits_.frames_per_client_per_poll, limits_.max_clients, limits_.max_unadmitted,
         limits_.max_frame_unadmitted, limits_.max_frame_admitted, wire::ctl::kHeaderSize);
  const std::string what = fmt::format("control server {}:{}", opts_.control_ip, opts_.control_port);
  channel_ = make_event_channel(what);
  if (opts_.control_inbox) {
    // The shared endpoint's requests are moved onto channel_ from now on.
    opts_.control_inbox->attach(channel_.get());
  } else {
    listen_ = listen_rc(channel_.get(), opts_.control_ip, opts_.control_port, what);
  }
  // The data device first: its PD and the ring's MR are the sink's.
  if (ring_.context) {
    auto d = std::make_unique<DeviceCtx>();
    d->context = ring_.context;
    d->pd = ring_.pd;
    d->ring_mr = ring_.mr;
    devices_.push_back(std::move(d));
  }
}

VerbsControlServer::~VerbsControlServer() {
  // Nothing more is moved onto channel_, which goes with this server.
  if (opts_.control_inbox) opts_.control_inbox->detach();
  // Disconnect politely; the QPs, ids and CQs go in member order afterwards.
  for (auto& [id, c] : conns_)
    if (c->established) (void)rdma_disconnect(c->id());
  conns_.clear();
}

uint16_t VerbsControlServer::port() const noexcept {
  return listen_ ? ntohs(rdma_get_src_port(listen_.get())) : opts_.control_port;
}

void VerbsControlServer::log(std::string_view s) const { log_line(opts_.log, s); }

VerbsControlServer::DeviceCtx& VerbsControlServer::device_for(ibv_context* ctx) {
  for (auto& d : devices_) {
    if (d->context != ctx) continue;
    if (!d->cq) {
      d->cq.reset(ibv_create_cq(ctx, 4096, nullptr, nullptr, 0));
      if (!d->cq) fail_errno("control server: ibv_create_cq on {}", ibv_get_device_name(ctx->device));
      ibv_device_attr da{};
      if (ibv_query_device(ctx, &da) == 0) d->max_qp_rd_atom = da.max_qp_rd_atom;
    }
    return *d;
  }
  // A client reached us through another device: a PD there, and the ring
  // registered in it too, so RDMA READ works from that side as well.
  auto d = std::make_unique<DeviceCtx>();
  d->context = ctx;
  const char* name = ibv_get_device_name(ctx->device);
  d->own_pd.reset(ibv_alloc_pd(ctx));
  if (!d->own_pd) fail_errno("control server: ibv_alloc_pd on {}", name);
  d->pd = d->own_pd.get();
  if (!ring_.memory.empty()) {
    d->own_ring_mr.reset(ibv_reg_mr(d->pd, ring_.memory.data(), ring_.memory.size(),
                                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
    if (!d->own_ring_mr) log(fmt::format("control server: could not register the ring on {} ({}); clients there "
                                         "get retransmits over RC only", name, std::strerror(errno)));
    d->ring_mr = d->own_ring_mr.get();
  }
  d->cq.reset(ibv_create_cq(ctx, 4096, nullptr, nullptr, 0));
  if (!d->cq) fail_errno("control server: ibv_create_cq on {}", name);
  ibv_device_attr da{};
  if (ibv_query_device(ctx, &da) == 0) d->max_qp_rd_atom = da.max_qp_rd_atom;
  devices_.push_back(std::move(d));
  return *devices_.back();
}

size_t VerbsControlServer::queued_bytes(ClientId client) const noexcept {
  const auto it = conns_.find(client);
  return it == conns_.end() || it->second->closing ? 0 : it->second->stream().backlog();
}

void VerbsControlServer::send(ClientId client, std::vector<std::byte> frame) {
  auto it = conns_.find(client);
  if (it == conns_.end() || it->second->closing) return;
  const size_t size = frame.size();
  if (it->second->stream().queue(std::move(frame))) {
    total_backlog_ += size;
    counters_.frames_out.add();
    if (total_backlog_ > limits_.reply_budget_bytes) enforce_budget();
    return;
  }
  // Too far behind: cut it rather than let its backlog grow or wait for it.
  to_cut_.push_back(client);
  it->second->closing = true;
  counters_.cut_slow.add();
  log(fmt::format("control client {} cut off: more than {} bytes of replies queued", client,
                  opts_.max_client_backlog));
}

void VerbsControlServer::accept(ControlHandler& svc, rdma_cm_id* id, std::span<const std::byte> pdata,
                                uint64_t now) {
  counters_.connect_requests.add();
  if (!parse_hello(pdata)) {
    counters_.rejected.add();
    log(fmt::format("control server: rejected a connection from {} without an mdcast hello",
                    to_string(rdma_get_peer_addr(id))));
    (void)rdma_reject(id, nullptr, 0);
    (void)rdma_destroy_id(id);
    return;
  }
  const sockaddr* from = rdma_get_peer_addr(id);
  const uint64_t peer =
      from && from->sa_family == AF_INET ? ntohl(reinterpret_cast<const sockaddr_in*>(from)->sin_addr.s_addr) : 0;
  if (!limits_.allow.empty() && std::none_of(limits_.allow.begin(), limits_.allow.end(),
                                             [&](const Ipv4Network& n) { return n.contains(static_cast<uint32_t>(peer)); })) {
    // Before a QP or a byte of its is taken: an address outside control.allow.
    counters_.rejected.add();
    counters_.refused_peers.add();
    (void)rdma_reject(id, nullptr, 0);
    (void)rdma_destroy_id(id);
    return;
  }
  if (live_count(true) >= limits_.max_clients) {
    counters_.rejected.add();
    counters_.refused_full.add();
    (void)rdma_reject(id, nullptr, 0);
    (void)rdma_destroy_id(id);
    return;
  }
  const ClientId cid = next_id_++;
  std::unique_ptr<Connection> conn;
  DeviceCtx* dev = nullptr;
  try {
    dev = &device_for(id->verbs);
    RcStream::Config cfg;
    cfg.send_chunk = opts_.send_chunk;
    cfg.send_slots = opts_.send_slots;
    cfg.recv_chunk = opts_.send_chunk;
    cfg.recv_slots = opts_.recv_slots;
    cfg.max_backlog = opts_.max_client_backlog;
    conn = std::make_unique<Connection>(cid, id, *dev, cfg);
  } catch (const Error& e) {
    counters_.rejected.add();
    log(fmt::format("control server: rejected a client: {}", e.what()));
    (void)rdma_reject(id, nullptr, 0);
    if (!conn) (void)rdma_destroy_id(id);
    return;
  }
  rdma_conn_param p{};
  std::byte advert[RingAdvert::kSize];
  const std::byte* ring = ring_.memory.data();
  if (opts_.rdma_read && dev->ring_mr && ring && load_le<uint64_t>(ring + 24) == history::SlotLog::kMagic) {
    // The geometry comes from the ring's own control block, written by the
    // SlotLog the Publisher built in this memory.
    RingAdvert a;
    a.addr = reinterpret_cast<uintptr_t>(ring);
    a.rkey = dev->ring_mr->rkey;
    a.slot_size = static_cast<uint32_t>(load_le<uint64_t>(ring + 8));
    a.slots = load_le<uint64_t>(ring + 16);
    a.encode(advert);
    p.private_data = advert;
    p.private_data_len = RingAdvert::kSize;
    counters_.ring_advertised.add();
  }
  p.responder_resources = static_cast<uint8_t>(std::clamp(dev->max_qp_rd_atom, 1, 16));
  p.initiator_depth = 0;
  p.rnr_retry_count = 7;  // unlimited: a client slow to re-post only delays itself
  p.retry_count = 7;
  if (rdma_accept(id, &p)) {
    counters_.rejected.add();
    log(fmt::format("control server: rdma_accept failed: {}", std::strerror(errno)));
    return;  // conn (and the id it owns) goes away here
  }
  Connection& c = *conn;
  c.peer = peer;
  c.unadmitted_since = c.last_frame_ns = now;
  c.stream().assembler().set_max_frame(limits_.max_frame_unadmitted);
  conns_.emplace(cid, std::move(conn));
  // Known to the service from now on: its first frames may be polled from
  // the CQ before ESTABLISHED is read from the event channel.
  svc.on_connect(cid, now);
  counters_.clients_connected.set(conns_.size());
  if (svc.admitted(cid)) set_admitted(cid, c, true, now);
  else if (live_count(false) > limits_.max_unadmitted) evict_unadmitted(cid);
}

void VerbsControlServer::adopt(ControlHandler& svc, uint64_t now) {
  // Requests the shared endpoint routed here, already on channel_: accepted
  // as if the listener had heard them.
  for (auto r = opts_.control_inbox->take(); r; r = opts_.control_inbox->take()) accept(svc, r->id, r->private_data, now);
}

void VerbsControlServer::cut(ClientId c, ControlHandler& svc, const char* why, Counter& reason) {
  auto it = conns_.find(c);
  if (it == conns_.end()) return;
  if (why) {
    reason.add();
    log(fmt::format("control client {} cut off: {}", c, why));
  }
  total_backlog_ -= std::min(total_backlog_, it->second->stream().backlog());
  svc.on_disconnect(c);
  if (hold_) {
    parked_.push_back(std::move(it->second));
  } else {
    (void)rdma_disconnect(it->second->id());
  }
  conns_.erase(it);
  counters_.disconnects.add();
  counters_.clients_connected.set(conns_.size());
}

void VerbsControlServer::on_cm_event(ControlHandler& svc, uint64_t now) {
  while (auto ev = try_cm_event(channel_.get())) {
    const rdma_cm_event_type type = ev->event;
    rdma_cm_id* id = ev->id;
    const int status = ev->status;
    std::vector<std::byte> pdata;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST && ev->param.conn.private_data) {
      const auto* p = static_cast<const std::byte*>(ev->param.conn.private_data);
      pdata.assign(p, p + ev->param.conn.private_data_len);
    }
    ev.reset();  // acknowledged before anything may destroy the id
    switch (type) {
      case RDMA_CM_EVENT_CONNECT_REQUEST:
        accept(svc, id, pdata, now);
        break;
      case RDMA_CM_EVENT_ESTABLISHED: {
        const ClientId c = client_of(id);
        auto it = conns_.find(c);
        if (it == conns_.end()) break;
        it->second->established = true;
        break;
      }
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED: {
        if (id == listen_.get()) break;
        const ClientId c = client_of(id);
        if (conns_.count(c)) {
          if (type != RDMA_CM_EVENT_DISCONNECTED)
            log(fmt::format("control client {}: {} (status {})", c, rdma_event_str(type), status));
          cut(c, svc, nullptr, counters_.disconnects);
        }
        break;
      }
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        log("control server: RDMA device removed");
        break;
      default:
        break;
    }
  }
}

size_t VerbsControlServer::poll_cq(DeviceCtx& d) {
  ibv_wc wc[32];
  const int n = ibv_poll_cq(d.cq.get(), 32, wc);
  if (n <= 0) return 0;
  for (int i = 0; i < n; ++i) {
    const ClientId c = wr_tag(wc[i].wr_id);
    auto it = conns_.find(c);
    if (it == conns_.end()) continue;  // a connection already cut: its flushed work
    Connection& conn = *it->second;
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (!conn.closing) {
        conn.closing = true;
        to_cut_.push_back(c);
        counters_.cut_errors.add();
        log(fmt::format("control client {}: {} on its QP", c, ibv_wc_status_str(wc[i].status)));
      }
      continue;
    }
    if (wr_kind(wc[i].wr_id) == WrKind::kSend) {
      conn.stream().on_send_done();
      continue;
    }
    if (wr_kind(wc[i].wr_id) != WrKind::kRecv) continue;
    const uint32_t slot = wr_index(wc[i].wr_id);
    if (conn.closing) {
      // No more input taken; the slot goes back so the QP stays sane until the cut.
      if (conn.stream().repost(slot)) counters_.post_errors.add();
      continue;
    }
    // The bytes are copied into the assembler; the slot is re-posted once
    // the frames they brought are handled (serve), not before.
    conn.stream().assembler().append(conn.stream().received(slot, wc[i].byte_len));
    conn.held.push_back(slot);
    if (!conn.in_ready) {
      conn.in_ready = true;
      ready_.push_back(c);
    }
  }
  return static_cast<size_t>(n);
}

size_t VerbsControlServer::poll(ControlHandler& svc, uint64_t now) {
  ++poll_no_;
  frames_left_ = limits_.frames_per_poll;
  size_t work = 0;
  if (opts_.control_inbox && !opts_.control_inbox->empty()) {
    adopt(svc, now);
    ++work;
  }
  // Connection events need a syscall to notice: at most every 100 us, so a
  // publisher calling this between messages does not pay one each time.
  pollfd p{channel_->fd, POLLIN, 0};
  if (now - last_cm_check_ >= 100 * kNsPerUs && (last_cm_check_ = now, ::poll(&p, 1, 0) > 0)) {
    on_cm_event(svc, now);
    ++work;
  }
  for (auto& d : devices_)
    if (d->cq) work += poll_cq(*d);
  if (!hold_ && !parked_.empty()) {
    for (auto& gone : parked_)
      if (gone->established) (void)rdma_disconnect(gone->id());
    parked_.clear();
  }
  const uint64_t frames0 = counters_.frames_in.get(), writable0 = counters_.writable_calls.get();
  serve_ready(svc, now);
  serve_writable(svc, now);
  work += counters_.frames_in.get() - frames0 + counters_.writable_calls.get() - writable0;
  if (!swept_ || elapsed(now, last_sweep_) >= limits_.sweep_interval_ns) sweep(svc, now);
  // Clients marked inside send() or above: cut them now, outside the service.
  for (size_t i = 0; i < to_cut_.size(); ++i) cut(to_cut_[i], svc, nullptr, counters_.disconnects);
  to_cut_.clear();
  size_t backlog = 0;
  for (auto it = conns_.begin(); it != conns_.end();) {
    Connection& conn = *it->second;
    const ClientId c = it->first;
    ++it;  // cut() erases
    const uint64_t bytes0 = conn.stream().bytes_sent(), sends0 = conn.stream().sends_posted();
    const int rc = conn.stream().pump();
    counters_.bytes_out.add(conn.stream().bytes_sent() - bytes0);
    counters_.sends_posted.add(conn.stream().sends_posted() - sends0);
    if (rc) {
      counters_.post_errors.add();
      cut(c, svc, std::strerror(rc), counters_.cut_errors);
      continue;
    }
    if (conn.closing && (conn.stream().drained() || now >= conn.close_deadline)) {
      cut(c, svc, nullptr, counters_.disconnects);
      continue;
    }
    backlog += conn.stream().backlog();
    if (!conn.closing && conn.pending && !conn.in_writable && conn.stream().backlog() < opts_.max_client_backlog / 2) {
      conn.in_writable = true;
      writable_.push_back(c);
    }
  }
  total_backlog_ = backlog;  // recounted each poll: send() only ever adds
  return work;
}

}  // namespace mdcast::media::verbs
