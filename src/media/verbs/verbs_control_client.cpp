// The subscriber's control client over RC, with RDMA READ retransmission
// (see verbs_control.hpp). Control code on the subscriber's thread: never
// blocks; a lost connection is retried every reconnect_interval.
#include <poll.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "mdcast/core/bytes.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/history/slot_log.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_device.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"
#include "mdcast/wire/control.hpp"
#include "mdcast/wire/datagram.hpp"
#include "rc_stream.hpp"
#include "verbs_setup.hpp"

namespace mdcast::media::verbs {

using namespace detail;

struct VerbsControlClient::Conn {
  enum class State : uint8_t { kResolvingAddr, kResolvingRoute, kConnecting, kConnected };
  State state = State::kResolvingAddr;
  uint64_t deadline = 0;
  uint64_t tag = 0;

  struct Read {
    bool busy = false;      // posted, or its answer not yet handed to the engine
    uint32_t rid = 0;
    uint64_t session = 0;
    uint64_t from = 0;
    uint32_t asked = 0;     // datagrams the engine asked for
    uint32_t count = 0;     // slots read
    std::vector<std::span<const std::byte>> valid;  // the validated prefix, in the READ buffer (capacity reserved)
  };

  // Teardown order (reverse): stream (QP) -> CQ -> comp channel -> read MR -> memory -> PD -> id -> channel.
  EventChannel channel;
  CmId id;
  ProtectionDomain pd;
  MappedMemory read_mem;
  MemoryRegion read_mr;
  CompChannel comp;
  CompletionQueue cq;
  std::unique_ptr<RcStream> stream;

  std::optional<RingAdvert> ring;
  size_t read_region = 0;  // bytes per in-flight READ request
  std::vector<Read> reads;
};

VerbsControlClient::VerbsControlClient(const Options& opts) : opts_(opts) {
  // Validate addresses now: a typo is an error, an absent publisher is not.
  (void)parse_address(opts_.control_ip, opts_.control_port, "control_ip (the publisher's control address)");
  if (!opts_.local_ip.empty()) (void)parse_address(opts_.local_ip, 0, "local_ip");
}

namespace {
bool port_active(rdma_cm_id* id) {
  ibv_port_attr a{};
  return id && id->verbs && ibv_query_port(id->verbs, id->port_num, &a) == 0 && a.state == IBV_PORT_ACTIVE;
}
}  // namespace

VerbsControlClient::~VerbsControlClient() {
  if (conn_ && conn_->state == Conn::State::kConnected) (void)rdma_disconnect(conn_->id.get());
}

void VerbsControlClient::log(std::string_view s) const { log_line(opts_.log, s); }

bool VerbsControlClient::connected() const noexcept { return conn_ && conn_->state == Conn::State::kConnected; }
size_t VerbsControlClient::outbound_backlog() const noexcept {
  return conn_ && conn_->stream ? conn_->stream->backlog() : 0;
}
std::optional<RingAdvert> VerbsControlClient::ring() const noexcept {
  return connected() ? conn_->ring : std::nullopt;
}
int VerbsControlClient::cm_fd() const noexcept { return conn_ ? conn_->channel->fd : -1; }
int VerbsControlClient::completion_fd() const noexcept { return conn_ && conn_->comp ? conn_->comp->fd : -1; }
bool VerbsControlClient::arm() noexcept {
  armed_ = conn_ && conn_->cq && ibv_req_notify_cq(conn_->cq.get(), 0) == 0;
  return armed_;
}

bool VerbsControlClient::next(Inbound& out) {
  while (!inbound_.empty()) {
    out = std::move(inbound_.front());
    inbound_.pop_front();
    if (out.kind != Inbound::Kind::kRetransmitted) return true;
    release_read(out.read);  // nobody to hand it to: the request times out and is asked again
  }
  return false;
}

void VerbsControlClient::release_read(uint32_t idx) noexcept {
  if (conn_ && idx < conn_->reads.size()) conn_->reads[idx].busy = false;
}

size_t VerbsControlClient::poll(ControlEvents& e, uint64_t now) {
  size_t work = poll(now);
  while (!inbound_.empty()) {
    Inbound in = std::move(inbound_.front());
    inbound_.pop_front();
    ++work;
    switch (in.kind) {
      case Inbound::Kind::kConnected: e.on_control_connected(now); break;
      case Inbound::Kind::kDisconnected: e.on_control_disconnected(); break;
      case Inbound::Kind::kFrame: e.on_control_frame(in.frame, now); break;
      case Inbound::Kind::kRetransmitted: {
        // The READ buffer stays ours until the engine is done with it: the
        // engine may ask for more (and so take READ slots) while it handles
        // this answer, so the slot is released only afterwards.
        if (!conn_ || in.read >= conn_->reads.size() || !conn_->reads[in.read].busy) break;
        const Conn::Read& r = conn_->reads[in.read];
        const uint64_t gen = conn_->tag;
        e.on_retransmitted(r.rid, r.session, r.valid, now);
        if (conn_ && conn_->tag == gen) release_read(in.read);
        break;
      }
    }
  }
  return work;
}

void VerbsControlClient::start_connect(uint64_t now) {
  auto c = std::make_unique<Conn>();
  c->tag = ++connection_gen_;
  const std::string what = fmt::format("control client -> {}:{}", opts_.control_ip, opts_.control_port);
  c->channel = make_event_channel(what);
  rdma_cm_id* raw = nullptr;
  if (rdma_create_id(c->channel.get(), &raw, nullptr, RDMA_PS_TCP)) fail_errno("{}: rdma_create_id", what);
  c->id.reset(raw);
  auto dst = parse_address(opts_.control_ip, opts_.control_port, "control_ip");
  sockaddr_storage src{};
  sockaddr* srcp = nullptr;
  if (!opts_.local_ip.empty()) {
    src = parse_address(opts_.local_ip, 0, "local_ip");
    srcp = reinterpret_cast<sockaddr*>(&src);
  }
  if (rdma_resolve_addr(c->id.get(), srcp, reinterpret_cast<sockaddr*>(&dst), opts_.setup_timeout_ms))
    fail_errno("{}: rdma_resolve_addr", what);
  c->state = Conn::State::kResolvingAddr;
  c->deadline = now + static_cast<uint64_t>(opts_.setup_timeout_ms) * kNsPerMs * 2;
  conn_ = std::move(c);
}

void VerbsControlClient::drop_connection(const std::string& why, uint64_t now) {
  if (!conn_) return;
  const bool was_up = conn_->state == Conn::State::kConnected;
  // A connection lost with its port is put aside, not closed: closing sends
  // a disconnect request, and on Soft-RoCE a CM message sent through a port
  // that is down left the device's RDMA CM unable to connect anyone after
  // (its GSI QP's receives flushed). Closed once the port is back.
  const bool park = was_up && (hold_ || !port_active(conn_->id.get()));
  if (was_up) {
    if (!park) (void)rdma_disconnect(conn_->id.get());
    counters_.disconnects.add();
    inbound_.push_back({Inbound::Kind::kDisconnected, {}});
    log(fmt::format("control connection to {}:{} lost: {}", opts_.control_ip, opts_.control_port, why));
  } else {
    counters_.connect_failures.add();
    if (last_error_ != why && !why.empty())
      log(fmt::format("control connection to {}:{} failed: {} (retrying every {} ms)", opts_.control_ip,
                      opts_.control_port, why, opts_.reconnect_interval_ns / kNsPerMs));
  }
  last_error_ = why;
  // READ answers not yet handed over point into this connection's buffers.
  std::erase_if(inbound_, [](const Inbound& in) { return in.kind == Inbound::Kind::kRetransmitted; });
  if (park) parked_ = std::move(conn_);
  conn_.reset();
  armed_ = false;
  next_attempt_ = now + opts_.reconnect_interval_ns;
}

void VerbsControlClient::on_cm_event(uint64_t now) {
  while (conn_) {
    auto ev = try_cm_event(conn_->channel.get());
    if (!ev) return;
    const rdma_cm_event_type type = ev->event;
    const int status = ev->status;
    std::vector<std::byte> pdata;
    if ((type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED) && ev->param.conn.private_data) {
      const auto* p = static_cast<const std::byte*>(ev->param.conn.private_data);
      pdata.assign(p, p + ev->param.conn.private_data_len);
    }
    ev.reset();
    Conn& c = *conn_;
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(c.id.get(), opts_.setup_timeout_ms)) {
          drop_connection(fmt::format("rdma_resolve_route: {}", std::strerror(errno)), now);
          return;
        }
        c.state = Conn::State::kResolvingRoute;
        break;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        const std::string what = fmt::format("control client on {}", where(c.id.get()));
        ibv_device_attr da{};
        (void)ibv_query_device(c.id->verbs, &da);
        c.pd.reset(ibv_alloc_pd(c.id->verbs));
        if (!c.pd) fail_errno("{}: ibv_alloc_pd", what);
        c.comp.reset(ibv_create_comp_channel(c.id->verbs));
        if (!c.comp) fail_errno("{}: ibv_create_comp_channel", what);
        if (set_nonblocking(c.comp->fd) < 0) fail_errno("{}: O_NONBLOCK", what);
        const uint32_t read_wrs = opts_.read_in_flight * 3;  // up to two slot READs + the reserved word
        c.cq.reset(ibv_create_cq(c.id->verbs, static_cast<int>(opts_.recv_slots + opts_.send_slots + read_wrs + 8),
                                 nullptr, c.comp.get(), 0));
        if (!c.cq) fail_errno("{}: ibv_create_cq", what);
        RcStream::Config cfg;
        cfg.send_chunk = opts_.send_chunk;
        cfg.send_slots = opts_.send_slots;
        cfg.recv_chunk = opts_.send_chunk;
        cfg.recv_slots = opts_.recv_slots;
        cfg.max_backlog = opts_.max_outbound_backlog;
        cfg.extra_send_wr = read_wrs;
        c.stream = std::make_unique<RcStream>(c.id.get(), c.pd.get(), c.cq.get(), c.tag, cfg);
        std::byte hello[kHelloSize] = {};
        Hello{kHelloVersion, opts_.channel}.encode(hello);
        rdma_conn_param p{};
        p.private_data = hello;
        p.private_data_len = kHelloSize;
        p.initiator_depth = static_cast<uint8_t>(std::clamp(da.max_qp_init_rd_atom, 1, 16));
        p.responder_resources = 1;
        p.retry_count = 7;
        p.rnr_retry_count = 7;
        if (rdma_connect(c.id.get(), &p)) {
          drop_connection(fmt::format("rdma_connect: {}", std::strerror(errno)), now);
          return;
        }
        c.state = Conn::State::kConnecting;
        break;
      }
      case RDMA_CM_EVENT_ESTABLISHED: {
        c.state = Conn::State::kConnected;
        c.ring = opts_.rdma_read ? RingAdvert::decode(pdata) : std::nullopt;
        if (c.ring) {
          // READ landing area: per in-flight request, read_max_slots slots + the reserved word.
          c.read_region = size_t{opts_.read_max_slots} * c.ring->slot_size + 64;
          c.read_mem = MappedMemory::anonymous(c.read_region * opts_.read_in_flight, MappedMemory::Pages::kSmall);
          c.read_mr.reset(ibv_reg_mr(c.pd.get(), c.read_mem.data(), c.read_mem.size(), IBV_ACCESS_LOCAL_WRITE));
          if (!c.read_mr) {
            log(fmt::format("control client: cannot register the READ buffer ({}); retransmits go over RC",
                            std::strerror(errno)));
            c.ring.reset();
          } else {
            c.reads.assign(opts_.read_in_flight, {});
            for (auto& r : c.reads) r.valid.reserve(opts_.read_max_slots);
          }
        }
        counters_.connects.add();
        last_error_.clear();
        log(fmt::format("control connected to {}:{} via {}{}", opts_.control_ip, opts_.control_port,
                        where(c.id.get()),
                        c.ring ? fmt::format(" (ring: {} slots of {} bytes, RDMA READ retransmits)", c.ring->slots,
                                             c.ring->slot_size)
                               : std::string(" (retransmits over RC)")));
        inbound_.push_back({Inbound::Kind::kConnected, {}});
        break;
      }
      case RDMA_CM_EVENT_REJECTED:
        // A shared endpoint says why (its channel unknown, busy ...).
        if (const auto note = RejectNote::decode(pdata)) {
          drop_connection(fmt::format("the publisher refused the connection: {}: {}",
                                      wire::to_string(static_cast<wire::ErrorCode>(note->code)), note->text),
                          now);
          return;
        }
        [[fallthrough]];
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
        drop_connection(fmt::format("{} (status {})", rdma_event_str(type), status), now);
        return;
      case RDMA_CM_EVENT_DISCONNECTED:
        drop_connection("the publisher disconnected", now);
        return;
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        drop_connection("RDMA device removed", now);
        return;
      default:
        break;
    }
  }
}

bool VerbsControlClient::queue_rc(std::span<const std::byte> frame) {
  if (!connected() || !conn_->stream->queue(frame)) {
    counters_.send_dropped.add();
    return false;
  }
  counters_.frames_sent.add();
  if (const int rc = conn_->stream->pump()) {
    counters_.post_errors.add();
    last_error_ = fmt::format("ibv_post_send: {}", std::strerror(rc));
  }
  return true;
}

bool VerbsControlClient::send(std::span<const std::byte> frame) {
  if (!connected()) {
    counters_.send_dropped.add();
    return false;
  }
  return queue_rc(frame);
}

bool VerbsControlClient::request_retransmit(uint32_t rid, uint64_t session, uint64_t from, uint32_t count) {
  if (!connected()) {
    counters_.send_dropped.add();
    return false;
  }
  if (try_read(rid, session, from, count)) return true;
  counters_.rc_retransmit_requests.add();
  std::array<std::byte, wire::ctl::kSmallFrame> f;
  const size_t n = wire::encode_control(rid, wire::RetransmitRequest{session, from, count}, f);
  return queue_rc(std::span<const std::byte>(f.data(), n));
}

bool VerbsControlClient::try_read(uint32_t rid, uint64_t session, uint64_t from, uint32_t count) {
  Conn& c = *conn_;
  if (!c.ring || from == 0 || count == 0) return false;
  uint32_t idx = 0;
  while (idx < c.reads.size() && c.reads[idx].busy) ++idx;
  if (idx == c.reads.size()) return false;  // every READ buffer busy: RC takes this one

  const RingAdvert& ring = *c.ring;
  const auto n = static_cast<uint32_t>(std::min<uint64_t>({count, opts_.read_max_slots, ring.slots}));
  std::byte* base = c.read_mem.data() + idx * c.read_region;
  const uint64_t first = from % ring.slots;
  const uint64_t run1 = std::min<uint64_t>(n, ring.slots - first);  // the range may wrap the ring's end
  const size_t ss = ring.slot_size;

  ibv_sge sge[3];
  ibv_send_wr wr[3] = {};
  int k = 0;
  auto add = [&](uint64_t raddr, std::byte* local, size_t len, bool last) {
    sge[k] = {reinterpret_cast<uintptr_t>(local), static_cast<uint32_t>(len), c.read_mr->lkey};
    wr[k].wr_id = make_wr_id(c.tag, WrKind::kRead, idx);
    wr[k].sg_list = &sge[k];
    wr[k].num_sge = 1;
    wr[k].opcode = IBV_WR_RDMA_READ;
    wr[k].wr.rdma.remote_addr = raddr;
    wr[k].wr.rdma.rkey = ring.rkey;
    // The reserved word is read only after the slot READs have completed
    // (fence): a value seen then proves the slots were not being rewritten.
    wr[k].send_flags = last ? (IBV_SEND_SIGNALED | IBV_SEND_FENCE) : 0;
    if (k > 0) wr[k - 1].next = &wr[k];
    ++k;
  };
  add(ring.addr + history::SlotLog::kControlSize + first * ss, base, run1 * ss, false);
  if (run1 < n) add(ring.addr + history::SlotLog::kControlSize, base + run1 * ss, (n - run1) * ss, false);
  add(ring.addr, base + size_t{n} * ss, sizeof(uint64_t), true);
  ibv_send_wr* bad = nullptr;
  if (const int rc = ibv_post_send(c.stream->qp(), &wr[0], &bad)) {
    counters_.post_errors.add();
    last_error_ = fmt::format("RDMA READ post: {}", std::strerror(rc));
    return false;
  }
  auto& r = c.reads[idx];
  r.busy = true;
  r.rid = rid;
  r.session = session;
  r.from = from;
  r.asked = count;
  r.count = n;
  r.valid.clear();
  counters_.read_requests.add();
  counters_.read_wrs.add(static_cast<uint64_t>(k));
  counters_.read_bytes.add(size_t{n} * ss + sizeof(uint64_t));
  return true;
}

void VerbsControlClient::finish_read(uint32_t idx, bool ok) {
  Conn& c = *conn_;
  if (idx >= c.reads.size() || !c.reads[idx].busy) return;
  auto& r = c.reads[idx];
  if (!ok) {
    // An error completion takes the QP down with it (the caller drops the
    // connection next): asking over RC now would be lost with the stream.
    // The engine re-sends its outstanding requests after reconnecting.
    counters_.read_errors.add();
    r.busy = false;
    return;
  }
  const RingAdvert& ring = *c.ring;
  const size_t ss = ring.slot_size;
  const std::byte* base = c.read_mem.data() + idx * c.read_region;
  const uint64_t reserved = load_le<uint64_t>(base + size_t{r.count} * ss);
  r.valid.clear();
  for (uint32_t i = 0; i < r.count; ++i) {
    const uint64_t s = r.from + i;
    const std::byte* slot = base + size_t{i} * ss;
    const uint64_t seq = load_le<uint64_t>(slot);
    const uint32_t len = load_le<uint32_t>(slot + 8);
    // Valid: committed as s, a sane length, and not reclaimed before the
    // reserved word was read (a wrap to s + slots claims the slot first).
    bool valid = seq == s && len >= wire::dgram::kHeaderSize && len <= ss - history::SlotLog::kSlotHeader &&
                 reserved < s + ring.slots;
    if (valid) {
      const auto h = wire::read_header(slot + history::SlotLog::kSlotHeader);
      valid = h.sequence == s && h.session == r.session && h.length == len;
    }
    if (!valid) {
      counters_.read_invalid.add();
      break;
    }
    r.valid.emplace_back(slot + history::SlotLog::kSlotHeader, len);
  }
  if (r.valid.empty()) {
    // Not in the ring (too old, not yet sent, another session): the publisher answers.
    r.busy = false;
    counters_.read_fallbacks.add();
    counters_.rc_retransmit_requests.add();
    (void)queue_rc(wire::encode_control(r.rid, wire::RetransmitRequest{r.session, r.from, r.asked}));
    return;
  }
  counters_.read_validated.add(r.valid.size());
  inbound_.push_back({Inbound::Kind::kRetransmitted, {}, idx});
}

size_t VerbsControlClient::poll_cq(uint64_t now) {
  Conn* c = conn_.get();
  if (!c || !c->cq) return 0;
  // Take (and acknowledge) the completion event of an armed CQ, if it fired:
  // a read(2) only after an adaptive sleep, never on the busy path.
  if (armed_) {
    ibv_cq* ecq = nullptr;
    void* ectx = nullptr;
    if (ibv_get_cq_event(c->comp.get(), &ecq, &ectx) == 0) ibv_ack_cq_events(ecq, 1);
    armed_ = false;
  }
  ibv_wc wc[32];
  const int n = ibv_poll_cq(c->cq.get(), 32, wc);
  if (n <= 0) return 0;
  for (int i = 0; i < n; ++i) {
    if (wr_tag(wc[i].wr_id) != c->tag) continue;
    const WrKind kind = wr_kind(wc[i].wr_id);
    const uint32_t idx = wr_index(wc[i].wr_id);
    if (wc[i].status != IBV_WC_SUCCESS) {
      if (kind == WrKind::kRead) finish_read(idx, false);
      drop_connection(fmt::format("{} on the control QP", ibv_wc_status_str(wc[i].status)), now);
      return static_cast<size_t>(n);
    }
    switch (kind) {
      case WrKind::kSend:
        c->stream->on_send_done();
        break;
      case WrKind::kRead:
        finish_read(idx, true);
        break;
      case WrKind::kRecv: {
        c->stream->assembler().append(c->stream->received(idx, wc[i].byte_len));
        if (const int rc = c->stream->repost(idx)) {
          counters_.post_errors.add();
          drop_connection(fmt::format("ibv_post_recv: {}", std::strerror(rc)), now);
          return static_cast<size_t>(n);
        }
        std::span<const std::byte> frame;
        for (;;) {
          const auto st = c->stream->assembler().next(frame);
          if (st == wire::FrameAssembler::Status::kNeedMore) break;
          if (st == wire::FrameAssembler::Status::kBadFrame) {
            drop_connection("the publisher sent a malformed control stream", now);
            return static_cast<size_t>(n);
          }
          counters_.frames_received.add();
          inbound_.push_back({Inbound::Kind::kFrame, std::vector<std::byte>(frame.begin(), frame.end())});
        }
        break;
      }
    }
  }
  if (const int rc = c->stream->pump()) {
    counters_.post_errors.add();
    drop_connection(fmt::format("ibv_post_send: {}", std::strerror(rc)), now);
  }
  return static_cast<size_t>(n);
}

size_t VerbsControlClient::poll(uint64_t now) {
  if (parked_ && !hold_ && port_active(parked_->id.get())) {
    (void)rdma_disconnect(parked_->id.get());
    parked_.reset();
  }
  if (hold_ && conn_ && conn_->state != Conn::State::kConnected) {
    drop_connection("the port is down: connecting again once it is back", now);
    return 1;
  }
  if (!conn_) {
    if (hold_ || now < next_attempt_) return 0;
    try {
      start_connect(now);
    } catch (const Error& e) {
      drop_connection(e.what(), now);
      return 0;
    }
  }
  size_t work = 0;
  // Connection events are rare: look for them at most every 100 us while
  // connected (a syscall), every call while connecting.
  const bool up = conn_->state == Conn::State::kConnected;
  pollfd p{conn_->channel->fd, POLLIN, 0};
  if ((!up || now - last_cm_check_ >= 100 * kNsPerUs) && (last_cm_check_ = now, ::poll(&p, 1, 0) > 0)) {
    try {
      on_cm_event(now);
    } catch (const Error& e) {
      drop_connection(e.what(), now);
      return 1;
    }
    ++work;
  }
  if (!conn_) return work;
  if (conn_->state != Conn::State::kConnected) {
    if (now >= conn_->deadline) drop_connection("timed out connecting (is the publisher running?)", now);
    return work;
  }
  return work + poll_cq(now);
}

}  // namespace mdcast::media::verbs
