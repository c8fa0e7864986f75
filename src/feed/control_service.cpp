#include "mdcast/feed/control_service.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mdcast/core/crc32c.hpp"

namespace mdcast::feed {

using namespace wire;

ControlService::ControlService(const ControlConfig& cfg, PublisherCore& core, ControlCounters* counters)
    : cfg_(cfg),
      core_(core),
      filter_buf_(core.config().max_datagram),
      dummy_key_(cfg.secrets ? SecretKey::random() : SecretKey{}),
      backoff_(cfg.auth_delay_min_ns, cfg.auth_delay_max_ns, cfg.auth_delay_decay_ns) {
  if (counters) {
    counters_ = counters;
  } else {
    owned_counters_ = std::make_unique<ControlCounters>();
    counters_ = owned_counters_.get();
  }
}

void ControlService::on_connect(ClientId c, uint64_t) {
  clients_[c] = Client{};
  counters_->client_connects.add();
  counters_->clients_connected.set(clients_.size());
}

void ControlService::on_disconnect(ClientId c) {
  if (clients_.erase(c)) counters_->client_disconnects.add();
  counters_->clients_connected.set(clients_.size());
}

bool ControlService::reject(ClientId c, Client& cl, uint32_t rid, ErrorCode code, std::string text, ReplySink& out) {
  counters_->requests_rejected.add();
  out.send(c, encode_control(rid, ErrorReply{code, std::move(text)}));
  return ++cl.errors <= cfg_.max_errors_per_client;
}

bool ControlService::entitled(const Client& cl, uint32_t inst) const noexcept {
  if (!cl.entitlement || cl.entitlement->all) return true;
  const auto& v = cl.entitlement->instruments;  // sorted (parse_entitlement)
  return std::binary_search(v.begin(), v.end(), inst);
}

bool ControlService::on_frame(ClientId c, std::span<const std::byte> frame, uint64_t now, ReplySink& out) {
  auto it = clients_.find(c);
  if (it == clients_.end()) {
    on_connect(c, now);
    it = clients_.find(c);
  }
  Client& cl = it->second;
  if (auto verdict = gate(c, cl, frame, now, out)) return *verdict;
  std::string why;
  auto parsed = parse_control(frame, &why);
  if (!parsed) {
    counters_->malformed_frames.add();
    const uint32_t rid = frame.size() >= ctl::kHeaderSize ? load_le<uint32_t>(frame.data() + ctl::kRequestId) : 0;
    return reject(c, cl, rid, ErrorCode::kMalformed, "malformed control frame: " + why, out);
  }
  const uint32_t rid = parsed->request_id;
  return std::visit(
      [&](auto& body) -> bool {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, Subscribe>) {
          return handle(c, cl, rid, body, out);
        } else if constexpr (std::is_same_v<T, Unsubscribe>) {
          return handle(c, cl, rid, body, out);
        } else if constexpr (std::is_same_v<T, RetransmitRequest>) {
          return handle(c, cl, rid, body, now, out);
        } else if constexpr (std::is_same_v<T, SnapshotRequest>) {
          return handle(c, cl, rid, body, now, out);
        } else if constexpr (std::is_same_v<T, StatusReport>) {
          return handle(c, cl, body, now);
        } else if constexpr (std::is_same_v<T, SessionQuery>) {
          // What a subscriber checks before it acts on what a datagram claimed.
          if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "session query before subscribe", out);
          counters_->session_queries.add();
          out.send(c, encode_control(rid, SessionStatus{core_.session(), core_.last_committed(), core_.ring().oldest(),
                                                        core_.ended(), core_.end_seq()}));
          return true;
        } else {
          return reject(c, cl, rid, ErrorCode::kUnsupported,
                        fmt::format("a publisher does not accept {} frames", to_string(static_cast<CtlType>(
                                                                                 load_le<uint8_t>(frame.data() + ctl::kType)))),
                        out);
        }
      },
      parsed->body);
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const Subscribe& s, ReplySink& out) {
  if (s.channel != core_.config().channel)
    return reject(c, cl, rid, ErrorCode::kUnknownChannel,
                  fmt::format("channel {} is not published here (this publisher serves channel {})", s.channel,
                              core_.config().channel),
                  out);
  // gate() let only proven clients through on a feed with secrets.
  const Entitlement* ent = cl.auth.entry ? &cl.auth.entry->entitlement : nullptr;
  const uint32_t n_inst = core_.books().max_instruments();
  Client probe = cl;
  probe.entitlement = ent;
  std::vector<bool> set(n_inst, false);
  if (s.instruments.all) {
    for (uint32_t i = 0; i < n_inst; ++i) set[i] = entitled(probe, i);
  } else {
    for (uint32_t i : s.instruments.ids) {
      if (i >= n_inst)
        return reject(c, cl, rid, ErrorCode::kMalformed,
                      fmt::format("instrument {} outside this feed's range [0, {})", i, n_inst), out);
      if (!entitled(probe, i))
        return reject(c, cl, rid, ErrorCode::kNotEntitled,
                      fmt::format("identity '{}' is not entitled to instrument {}", cl.auth.identity, i), out);
      set[i] = true;
    }
  }
  cl.subscribed = true;
  cl.sender_id = s.sender_id;
  cl.entitlement = ent;
  cl.subscribed_set = std::move(set);
  counters_->subscribes.add();
  const uint32_t granted = static_cast<uint32_t>(std::count(cl.subscribed_set.begin(), cl.subscribed_set.end(), true));
  out.send(c, encode_control(rid, SubscribeAck{core_.session(), core_.last_committed(), core_.ring().oldest(),
                                               granted == n_inst ? ctl::kAll : granted}));
  return true;
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const Unsubscribe& u, ReplySink& out) {
  if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "unsubscribe before subscribe", out);
  if (u.instruments.all) {
    std::fill(cl.subscribed_set.begin(), cl.subscribed_set.end(), false);
  } else {
    for (uint32_t i : u.instruments.ids)
      if (i < cl.subscribed_set.size()) cl.subscribed_set[i] = false;
  }
  return true;
}

std::span<const std::byte> ControlService::filter_datagram(std::span<const std::byte> d, const Client& cl) {
  std::byte* o = filter_buf_.data();
  std::memcpy(o, d.data(), dgram::kHeaderSize);
  size_t len = dgram::kHeaderSize;
  uint16_t count = 0;
  MessageCursor cur = MessageCursor::payload_of(d);
  MessageView v;
  while (cur.next(v)) {
    bool keep = true;
    if (v.type() == MsgType::kFragment)
      keep = entitled(cl, FragmentView(v).instrument());
    else if (is_market_data(v.type()))
      keep = entitled(cl, v.instrument());
    if (!keep) continue;
    std::memcpy(o + len, v.data(), v.size());
    len += v.size();
    ++count;
  }
  store_le<uint8_t>(o + dgram::kFlags, static_cast<uint8_t>(load_le<uint8_t>(o + dgram::kFlags) | kFlagFiltered));
  store_le<uint16_t>(o + dgram::kMessageCount, count);
  store_le<uint16_t>(o + dgram::kLength, static_cast<uint16_t>(len));
  if (load_le<uint8_t>(o + dgram::kFlags) & kFlagCrc) seal_crc({o, len});
  return {o, len};
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const RetransmitRequest& r, uint64_t now,
                            ReplySink& out) {
  if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "retransmit before subscribe", out);
  if (r.from_seq == 0 || r.count == 0)
    return reject(c, cl, rid, ErrorCode::kMalformed, "retransmit of an empty range or from sequence 0", out);
  const RetransmitRing& ring = core_.ring();
  (void)now;
  auto status = RetransmitStatus::kOk;
  if (r.session != core_.session())
    status = RetransmitStatus::kWrongSession;
  else if (r.from_seq > ring.newest())
    status = RetransmitStatus::kNotYet;
  else if (ring.oldest() == 0 || r.from_seq < ring.oldest())
    status = RetransmitStatus::kTooOld;
  RetransmitReplyBuilder b(rid, core_.session(), status, r.from_seq, ring.oldest());
  if (status == RetransmitStatus::kOk) {
    const uint64_t last = std::min<uint64_t>(ring.newest(), r.from_seq + r.count - 1);
    const bool all = !cl.entitlement || cl.entitlement->all;
    for (uint64_t s = r.from_seq; s <= last; ++s) {
      auto d = ring.get(s);
      if (d.empty()) break;
      if (!b.add(all ? d : filter_datagram(d, cl), cfg_.max_reply_bytes)) break;
    }
    counters_->retransmit_requests.add();
    counters_->datagrams_retransmitted.add(b.count());
  } else if (status == RetransmitStatus::kTooOld) {
    counters_->retransmit_too_old.add();
  }
  out.send(c, std::move(b).finish());
  return true;
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const SnapshotRequest& r, uint64_t now,
                            ReplySink& out) {
  if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "snapshot before subscribe", out);
  const book::BookSet& books = core_.books();
  const uint32_t n_inst = books.max_instruments();
  std::vector<uint32_t> ids;
  if (r.instruments.all) {
    for (uint32_t i = 0; i < n_inst; ++i)
      if (cl.subscribed_set[i] && (books.book(i).instrument_seq() > 0 || books.book(i).defined())) ids.push_back(i);
  } else {
    std::vector<bool> seen(n_inst, false);  // repeats are served once: a list cannot multiply the work
    for (uint32_t i : r.instruments.ids) {
      if (i < n_inst && seen[i]) continue;
      if (i >= n_inst || !entitled(cl, i)) {
        out.send(c, encode_control(rid, SnapshotDone{core_.session(), SnapshotStatus::kNotEntitled, 0, 0}));
        return reject(c, cl, rid, i >= n_inst ? ErrorCode::kMalformed : ErrorCode::kNotEntitled,
                      fmt::format("snapshot of instrument {} refused", i), out);
      }
      seen[i] = true;
      ids.push_back(i);
    }
  }
  // The book must equal "every committed datagram": seal the open one.
  core_.commit_open(now);
  const uint64_t snap_seq = core_.last_committed();
  const uint64_t session = core_.session();
  constexpr size_t kMaxOrdersPerChunk = 2000;  // keeps a chunk under the u16 message length
  SnapshotDataBuilder b(rid, session);
  auto flush_if_full = [&](size_t next) {
    if (!b.empty() && b.size() + next > cfg_.snapshot_frame_bytes) {
      out.send(c, std::move(b).finish());
      b = SnapshotDataBuilder(rid, session);
    }
  };
  for (uint32_t i : ids) {
    const book::OrderBook& ob = books.book(i);
    if (ob.defined()) {
      flush_if_full(instrument_def::kSize);
      Message d;
      d.type = MsgType::kInstrumentDefinition;
      d.instrument = i;
      d.instrument_seq = ob.instrument_seq();
      d.definition = ob.definition();
      encode(d, b.reserve(instrument_def::kSize));
    }
    const uint32_t n = ob.order_count();
    const auto chunks = static_cast<uint16_t>(n == 0 ? 1 : (n + kMaxOrdersPerChunk - 1) / kMaxOrdersPerChunk);
    uint16_t chunk = 0;
    size_t in_chunk = 0;
    std::byte* cur = nullptr;
    auto start_chunk = [&](size_t orders) {
      const size_t len = snapshot_chunk::kOrders + orders * snapshot_chunk::kEntrySize;
      flush_if_full(len);
      cur = b.reserve(len);
      write_snapshot_chunk_header(cur, i, ob.instrument_seq(), snap_seq, chunk, chunks, static_cast<uint16_t>(orders),
                                  ob.status());
      in_chunk = 0;
    };
    uint32_t remaining = n;
    start_chunk(std::min<size_t>(remaining, kMaxOrdersPerChunk));
    books.for_each_order(i, [&](const book::Order& o) {
      if (in_chunk == kMaxOrdersPerChunk) {
        ++chunk;
        start_chunk(std::min<size_t>(remaining, kMaxOrdersPerChunk));
      }
      write_snapshot_entry(cur, in_chunk++, {o.id, o.price, o.quantity, o.side});
      --remaining;
    });
  }
  if (!b.empty()) out.send(c, std::move(b).finish());
  out.send(c, encode_control(rid, SnapshotDone{session, SnapshotStatus::kOk, static_cast<uint32_t>(ids.size()), snap_seq}));
  counters_->snapshot_requests.add();
  counters_->snapshot_instruments.add(ids.size());
  return true;
}

bool ControlService::handle(ClientId, Client& cl, const StatusReport& r, uint64_t now) {
  cl.last_report = r;
  cl.report_time = now;
  counters_->status_reports.add();
  tick(now);
  return true;
}

void ControlService::tick(uint64_t now) {
  tick_auth(now);
  const PacingConfig& p = core_.config().pacing;
  uint64_t slowest = 0;
  for (const auto& [id, cl] : clients_) {
    if (!cl.subscribed || cl.report_time == 0 || now - cl.report_time > p.report_ttl_ns) continue;
    if (cl.last_report.capacity == 0) continue;
    if (slowest == 0 || cl.last_report.capacity < slowest) slowest = cl.last_report.capacity;
  }
  counters_->slowest_capacity.set(slowest);
  if (p.mode == PacingMode::kSlowest) {
    const double rate = slowest ? std::max(p.min_rate, static_cast<double>(slowest)) : p.rate;
    if (rate != core_.pacer().rate()) core_.set_pacing_rate(rate);
  }
}

bool ControlService::admitted(ClientId c) const noexcept {
  const auto it = clients_.find(c);
  if (it == clients_.end()) return false;
  const Client& cl = it->second;
  return cl.subscribed && (!cfg_.secrets || cl.auth.stage == ServerAuth::Stage::kOk);
}

size_t ControlService::subscribed_clients() const noexcept {
  size_t n = 0;
  for (const auto& [id, cl] : clients_) n += cl.subscribed;
  return n;
}

std::vector<ControlService::ClientView> ControlService::client_views() const {
  std::vector<ClientView> v;
  for (const auto& [id, cl] : clients_)
    v.push_back({id, cl.subscribed, cl.sender_id, cl.last_report.position, cl.last_report.lag, cl.last_report.drops,
                 cl.last_report.capacity, cl.report_time});
  return v;
}

}  // namespace mdcast::feed
