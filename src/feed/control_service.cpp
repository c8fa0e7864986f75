#include "mdcast/feed/control_service.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "mdcast/core/crc32c.hpp"
#include "mdcast/wire/auth.hpp"

namespace mdcast::feed {

using namespace wire;

ControlService::ControlService(const ControlConfig& cfg, PublisherCore& core, ControlCounters* counters)
    : cfg_(cfg),
      core_(core),
      filter_buf_(core.config().max_datagram),
      dummy_key_(cfg.secrets ? SecretKey::random() : SecretKey{}),
      backoff_(cfg.auth_delay_min_ns, cfg.auth_delay_max_ns, cfg.auth_delay_decay_ns),
      poll_left_(cfg.snapshot_poll_bytes) {
  cfg_.validate();
  if (cfg.secrets && core.config().authenticate_data && !core.tagged()) {
    const uint16_t channel = core.config().channel;
    if (cfg.data_secret) {
      core.tag_with(derive_data_key(cfg.data_secret->key().view(), channel, core.session()));
    } else {
      DataKey k;
      random_bytes(k);
      core.tag_with(k);
      wipe(k);
    }
  }
  if (counters) {
    counters_ = counters;
  } else {
    owned_counters_ = std::make_unique<ControlCounters>();
    counters_ = owned_counters_.get();
  }
}

void ControlService::on_connect(ClientId c, uint64_t now) {
  if (const auto it = clients_.find(c); it != clients_.end()) {  // a reused id
    jobs_total_ -= it->second.jobs.size();
    unlist_subscriber(it->second);
  }
  Client& cl = clients_[c] = Client{};
  cl.connected_ns = now;
  cl.retransmit_budget = TokenBucket(cfg_.retransmit_rate, cfg_.retransmit_burst, now);
  cl.snapshot_budget = TokenBucket(cfg_.snapshot_rate, cfg_.snapshot_burst, now);
  counters_->client_connects.add();
  counters_->clients_connected.set(clients_.size());
}

void ControlService::on_disconnect(ClientId c) {
  // Its queued snapshot requests go with it, and with them its hold on
  // snapshot copies (streaming_ forgets it at the next tick).
  if (const auto it = clients_.find(c); it != clients_.end()) {
    jobs_total_ -= it->second.jobs.size();
    counters_->snapshot_streams.set(jobs_total_);
    unlist_subscriber(it->second);
    clients_.erase(it);
    counters_->client_disconnects.add();
    pacing_dirty_ = true;
  }
  counters_->clients_connected.set(clients_.size());
}

void ControlService::CountingSink::send(ClientId c, std::vector<std::byte> frame) {
  ++w_.frames;
  w_.bytes += frame.size();
  to_.send(c, std::move(frame));
}

bool ControlService::reject(ClientId c, Client& cl, uint32_t rid, ErrorCode code, std::string text, ReplySink& out) {
  counters_->requests_rejected.add();
  ++work_.refused;
  ++cl.refused;
  out.send(c, encode_control(rid, ErrorReply{code, std::move(text)}));
  return ++cl.errors <= cfg_.max_errors_per_client;
}

bool ControlService::overloaded(ClientId c, uint32_t rid, std::string_view what, uint64_t retry_ns, ReplySink& out) {
  counters_->requests_rejected.add();
  counters_->requests_overloaded.add();
  ++work_.refused;
  if (const auto it = clients_.find(c); it != clients_.end()) ++it->second.refused;
  const uint64_t ms = std::max<uint64_t>(1, (retry_ns + kNsPerMs - 1) / kNsPerMs);
  out.send(c, encode_control(rid, ErrorReply{ErrorCode::kOverloaded,
                                             fmt::format("{}; retry after {} ms", what, ms)}));
  return true;
}

bool ControlService::entitled(const Client& cl, uint32_t inst) const noexcept {
  if (!cl.entitlement || cl.entitlement->all) return true;
  const auto& v = cl.entitlement->instruments;  // sorted (parse_entitlement)
  return std::binary_search(v.begin(), v.end(), inst);
}

bool ControlService::on_frame(ClientId c, std::span<const std::byte> frame, uint64_t now, ReplySink& sink) {
  work_ = {};
  CountingSink out(sink, work_);
  begin_poll(now);
  auto it = clients_.find(c);
  if (it == clients_.end()) {
    on_connect(c, now);
    it = clients_.find(c);
  }
  Client& cl = it->second;
  cl.sink = &sink;
  // Reports are not requests: they are answered by nothing and cost no request budget.
  if (frame.size() < ctl::kHeaderSize ||
      (load_le<uint8_t>(frame.data() + ctl::kType) != static_cast<uint8_t>(CtlType::kStatusReport) &&
       load_le<uint8_t>(frame.data() + ctl::kType) != static_cast<uint8_t>(CtlType::kLatencyReport)))
    work_.requests = 1;
  // The transport's own sink: a refused proof is answered from tick(), after
  // this call's counting proxy is gone.
  if (auto verdict = gate(c, cl, frame, now, sink)) return *verdict;
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
          const bool keep = handle(c, cl, rid, body, out);
          if (cl.subscribed) list_subscriber(c, cl, now);
          return keep;
        } else if constexpr (std::is_same_v<T, Unsubscribe>) {
          return handle(c, cl, rid, body, out);
        } else if constexpr (std::is_same_v<T, RetransmitRequest>) {
          return handle(c, cl, rid, body, now, out);
        } else if constexpr (std::is_same_v<T, SnapshotRequest>) {
          return handle(c, cl, rid, body, now, out);
        } else if constexpr (std::is_same_v<T, StatusReport>) {
          return handle(c, cl, body, now);
        } else if constexpr (std::is_same_v<T, LatencyReport>) {
          // Shown, never acted on: a client may say anything about itself.
          if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "latency report before subscribe", out);
          cl.last_latency = body;
          return true;
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
  pacing_dirty_ = true;
  cl.sender_id = s.sender_id;
  cl.entitlement = ent;
  cl.subscribed_set = std::move(set);
  counters_->subscribes.add();
  const uint32_t granted = static_cast<uint32_t>(std::count(cl.subscribed_set.begin(), cl.subscribed_set.end(), true));
  cl.n_subscribed = granted;
  out.send(c, encode_control(rid, SubscribeAck{core_.session(), core_.last_committed(), core_.ring().oldest(),
                                               granted == n_inst ? ctl::kAll : granted,
                                               SubscribeAck::kAcceptsLatency}));
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
  cl.n_subscribed = static_cast<uint32_t>(std::count(cl.subscribed_set.begin(), cl.subscribed_set.end(), true));
  return true;
}

bool ControlService::handle(ClientId c, Client& cl, const StatusReport& r, uint64_t now) {
  // Only clients that report a capacity take part in pacing: the scan looks at them alone.
  if (r.capacity != 0 && !cl.capacity_listed) {
    cl.capacity_listed = true;
    capacity_reporters_.push_back(c);
  }
  // The slowest raising its capacity (or leaving it unknown) is seen at the next tick.
  if (cl.subscribed && slowest_ != 0 && cl.last_report.capacity == slowest_ && r.capacity != slowest_)
    pacing_dirty_ = true;
  cl.last_report = r;
  cl.report_time = now;
  counters_->status_reports.add();
  // A lower capacity takes effect at once; anything else waits for tick():
  // a stream of reports must not cost a pass over every client each.
  if (cl.subscribed && r.capacity != 0 && (slowest_ == 0 || r.capacity < slowest_)) {
    slowest_ = r.capacity;
    counters_->slowest_capacity.set(slowest_);
    const PacingConfig& p = core_.config().pacing;
    if (p.mode == PacingMode::kSlowest) {
      const double rate = std::max({kMinPacingFloor, p.min_rate, static_cast<double>(slowest_)});
      if (rate != core_.pacer().rate()) core_.set_pacing_rate(rate);
    }
  }
  return true;
}

void ControlService::update_pacing(uint64_t now) {
  const PacingConfig& p = core_.config().pacing;
  uint64_t slowest = 0;
  std::erase_if(capacity_reporters_, [&](ClientId id) {
    const auto it = clients_.find(id);
    if (it == clients_.end()) return true;
    Client& cl = it->second;
    if (cl.last_report.capacity == 0) {
      cl.capacity_listed = false;
      return true;
    }
    if (cl.subscribed && cl.report_time != 0 && now - cl.report_time <= p.report_ttl_ns &&
        (slowest == 0 || cl.last_report.capacity < slowest))
      slowest = cl.last_report.capacity;
    return false;
  });
  slowest_ = slowest;
  counters_->slowest_capacity.set(slowest);
  if (p.mode == PacingMode::kSlowest) {
    // min_rate is validated against the floor; the floor is applied again in
    // case a configuration reached the core without validation.
    const double rate = slowest ? std::max({kMinPacingFloor, p.min_rate, static_cast<double>(slowest)}) : p.rate;
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
  for (const auto& [id, cl] : clients_) n += cl.subscribed && cl.n_subscribed > 0;
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
