// ControlService: the subscriber table (feed/subscriber_table.hpp), the
// publisher's view of each subscriber for `mdcast stat --subscribers`.
//
// A client takes a row when it is granted a subscription, not when it
// connects: connections that never subscribe (scanners, failed proofs) cost
// no row. The rows are written again in turn, kRowsPerPoll per tick and each
// at most every kRefreshNs, so the table's cost per poll does not grow with
// the number of subscribers.
#include <algorithm>
#include <cstring>

#include "mdcast/feed/control_service.hpp"

namespace mdcast::feed {

namespace {
// Client::row when a subscribed client found every row taken (counted once).
constexpr size_t kUnlisted = SubscriberTable::kNone - 1;
}  // namespace

void ControlService::show_subscribers(SubscriberTable* table) {
  table_ = table;
  row_client_.assign(table ? table->rows() : 0, 0);
  row_used_.assign(table ? table->rows() : 0, false);
  next_row_ = 0;
}

void ControlService::on_peer(ClientId c, const media::PeerInfo& peer) {
  if (const auto it = clients_.find(c); it != clients_.end()) it->second.peer = peer;
}

SubscriberRow ControlService::row_of(ClientId c, const Client& cl, uint64_t now) const noexcept {
  SubscriberRow r;
  // Row value 0 means free: a transport whose ids start at 0 still shows.
  r.client = c + 1;
  r.channel = core_.config().channel;
  r.flags = (cl.subscribed ? SubscriberRow::kSubscribed : 0) |
            (cl.auth.stage == ServerAuth::Stage::kOk ? SubscriberRow::kAuthenticated : 0);
  switch (cl.peer.kind) {
    case media::PeerInfo::Kind::kUnix:
      r.flags |= SubscriberRow::kUnixPeer;
      r.pid = cl.peer.pid;
      r.peer = cl.peer.uid;
      break;
    case media::PeerInfo::Kind::kTcp:
      r.flags |= SubscriberRow::kTcpPeer;
      r.peer = cl.peer.ipv4;
      r.port = cl.peer.port;
      break;
    case media::PeerInfo::Kind::kUnknown: break;
  }
  r.connected_ns = cl.connected_ns;
  const wire::StatusReport& rep = cl.last_report;
  r.position = rep.position;
  // position is the next sequence it delivers: it has everything before.
  const uint64_t last = core_.last_committed();
  r.lag = rep.position != 0 && last + 1 > rep.position ? last + 1 - rep.position : 0;
  r.reported_lag = rep.lag;
  r.drops = rep.drops;
  r.capacity = rep.capacity;
  r.retransmit_requests = cl.retransmit_requests;
  r.datagrams_retransmitted = cl.datagrams_retransmitted;
  r.snapshot_requests = cl.snapshot_requests;
  r.recoveries = cl.recoveries;
  r.refused = cl.refused;
  r.report_ns = cl.report_time;
  r.latency_count = cl.last_latency.count;
  r.latency_p50_ns = cl.last_latency.p50_ns;
  r.latency_p99_ns = cl.last_latency.p99_ns;
  r.latency_max_ns = cl.last_latency.max_ns;
  r.written_ns = now;
  if (cl.auth.stage == ServerAuth::Stage::kOk) {
    const size_t n = std::min(cl.auth.identity.size(), sizeof r.identity - 1);
    std::memcpy(r.identity, cl.auth.identity.data(), n);
  }
  return r;
}

std::optional<SubscriberRow> ControlService::subscriber_row(ClientId c, uint64_t now) const {
  const auto it = clients_.find(c);
  if (it == clients_.end()) return std::nullopt;
  return row_of(c, it->second, now);
}

void ControlService::list_subscriber(ClientId c, Client& cl, uint64_t now) noexcept {
  if (!table_ || cl.row != SubscriberTable::kNone) return;
  const size_t row = table_->claim();
  if (row == SubscriberTable::kNone) {
    cl.row = kUnlisted;
    counters_->subscribers_unlisted.set(++unlisted_);
    return;
  }
  cl.row = row;
  row_client_[row] = c;
  row_used_[row] = true;
  table_->write(row, row_of(c, cl, now));
}

void ControlService::unlist_subscriber(Client& cl) noexcept {
  if (cl.row == kUnlisted) {
    counters_->subscribers_unlisted.set(--unlisted_);
  } else if (table_ && cl.row != SubscriberTable::kNone) {
    row_used_[cl.row] = false;
    table_->release(cl.row);
  }
  cl.row = SubscriberTable::kNone;
}

void ControlService::refresh_rows(uint64_t now) noexcept {
  if (!table_ || row_used_.empty()) return;
  if (next_row_ == 0) {
    if (sweep_started_ != 0 && now - sweep_started_ < SubscriberTable::kRefreshNs) return;
    sweep_started_ = now;
  }
  for (size_t k = 0; k < SubscriberTable::kRowsPerPoll && next_row_ < row_used_.size(); ++next_row_) {
    if (!row_used_[next_row_]) continue;
    const auto it = clients_.find(row_client_[next_row_]);
    if (it == clients_.end()) continue;  // cannot be: a client leaving gives its row back
    table_->write(next_row_, row_of(it->first, it->second, now));
    ++k;
  }
  if (next_row_ >= row_used_.size()) next_row_ = 0;
}

}  // namespace mdcast::feed
