// ControlService: snapshot requests. Admission against the client's byte
// budget, the shared copy of the books (SnapshotCache), and streaming each
// client's request as it reads.
//
// Which copy answers what:
//  * a full request (everything, or a subscriber's filter) is answered from
//    the shared copy while it is reusable: the subscriber reconciles an older
//    snapshot with the live stream by its sequence (it asks the ring for
//    what follows), so the copy serves as long as that sequence is well
//    inside the ring (three quarters of a lap) and the copy is younger than
//    the interval. The same
//    request id asked again after it was answered means the copy was older
//    than the client's position: it waits for the next build (at most an
//    interval), never forces one;
//  * a one-instrument request is a subscriber recovering that instrument: it
//    holds the instrument's messages from the moment it asked, so the book
//    it gets must be at least that recent. The shared copy answers when the
//    instrument has not changed since it was made; otherwise that one book
//    is serialized now (its cost is charged like any other).
//
// Per client one request streams at a time; others wait in a short queue. A
// full request replaces the client's previous full one (a subscriber has one
// at a time: an older one is one it gave up on), and that one is answered
// "replaced". The same request id again while it is queued or streaming is
// absorbed: the answer under way is its answer.
#include <fmt/format.h>

#include <algorithm>

#include "mdcast/feed/control_service.hpp"

namespace mdcast::feed {

using namespace wire;

void ControlService::begin_poll(uint64_t now) noexcept {
  if (now != poll_now_) new_poll(now);
}

void ControlService::new_poll(uint64_t now) noexcept {
  poll_now_ = now;
  ++poll_epoch_;
  poll_left_ = cfg_.snapshot_poll_bytes;
}

void ControlService::tick(uint64_t now) {
  new_poll(now);
  tick_auth(now);
  refresh_rows(now);
  if (pacing_dirty_ || now - last_pacing_scan_ >= kPacingScanNs) {
    update_pacing(now);
    last_pacing_scan_ = now;
    pacing_dirty_ = false;
  }
  if (streaming_.empty()) return;
  // Clients in turn, starting one further each tick, so that when the
  // poll's budget runs out it is not always the same ones who wait.
  const size_t n = streaming_.size();
  for (size_t k = 0; k < n && poll_left_ > 0; ++k) {
    const ClientId c = streaming_[(turn_ + k) % n];
    const auto it = clients_.find(c);
    if (it == clients_.end() || it->second.jobs.empty() || !it->second.sink) continue;
    produce(c, it->second, now, *it->second.sink);
  }
  turn_ = (turn_ + 1) % n;
  std::erase_if(streaming_, [&](ClientId c) {
    const auto it = clients_.find(c);
    if (it == clients_.end()) return true;
    if (!it->second.jobs.empty()) return false;
    it->second.listed = false;
    return true;
  });
  update_cache_counters();
}

bool ControlService::has_pending(ClientId c) const noexcept {
  const auto it = clients_.find(c);
  return it != clients_.end() && !it->second.jobs.empty();
}

void ControlService::on_writable(ClientId c, uint64_t now, ReplySink& sink) {
  work_ = {};
  const auto it = clients_.find(c);
  if (it == clients_.end()) return;
  CountingSink out(sink, work_);
  it->second.sink = &sink;
  produce(c, it->second, now, out);
}

bool ControlService::handle(ClientId c, Client& cl, uint32_t rid, const SnapshotRequest& r, uint64_t now,
                            ReplySink& out) {
  if (!cl.subscribed) return reject(c, cl, rid, ErrorCode::kNotSubscribed, "snapshot before subscribe", out);
  ++cl.snapshot_requests;
  const uint32_t n_inst = core_.books().max_instruments();
  SnapshotJob job;
  job.rid = rid;
  job.all = r.instruments.all;
  if (!job.all) {
    std::vector<bool> seen(n_inst, false);  // repeats are served once: a list cannot multiply the work
    for (uint32_t i : r.instruments.ids) {
      if (i < n_inst && seen[i]) continue;
      if (i >= n_inst || !entitled(cl, i)) {
        out.send(c, encode_control(rid, SnapshotDone{core_.session(), SnapshotStatus::kNotEntitled, 0, 0}));
        return reject(c, cl, rid, i >= n_inst ? ErrorCode::kMalformed : ErrorCode::kNotEntitled,
                      fmt::format("snapshot of instrument {} refused", i), out);
      }
      seen[i] = true;
      job.ids.push_back(i);
    }
  }
  for (const auto& j : cl.jobs)
    if (j.rid == rid) {
      counters_->snapshot_duplicates.add();
      return true;
    }
  if (rid == cl.last_rid) job.newer_than = cl.last_seq;

  TokenBucket& budget = cl.snapshot_budget;
  if (budget.available(now) < 1)
    return overloaded(c, rid, fmt::format("snapshot request {} refused: this client's snapshot budget is spent", rid),
                      budget.wait_ns(static_cast<double>(cfg_.snapshot_min_cost)), out);
  // Pricing may build a copy, which may cut streams (this client's too):
  // where the job goes is decided after it.
  const double cost = static_cast<double>(std::max(cfg_.snapshot_min_cost, snapshot_cost(cl, job, now)));
  size_t at = cl.jobs.size();
  if (job.full())
    for (size_t k = 0; k < cl.jobs.size(); ++k)
      if (cl.jobs[k].full()) at = k;
  if (at == cl.jobs.size() && cl.jobs.size() >= cfg_.max_snapshot_requests)
    return overloaded(c, rid,
                      fmt::format("snapshot request {} refused: {} requests of this client are already queued", rid,
                                  cl.jobs.size()),
                      cfg_.snapshot_interval_ns, out);
  if (budget.available(now) < budget.needed(cost))
    return overloaded(c, rid, fmt::format("snapshot request {} ({} bytes) refused: this client's snapshot budget is spent", rid,
                                  static_cast<uint64_t>(cost)),
                      budget.wait_ns(cost), out);
  budget.take(cost);

  if (at < cl.jobs.size()) {
    counters_->snapshot_replaced.add();
    out.send(c, encode_control(cl.jobs[at].rid,
                               ErrorReply{ErrorCode::kOverloaded,
                                          fmt::format("snapshot request {} replaced by request {} from this client: "
                                                      "one full snapshot at a time",
                                                      cl.jobs[at].rid, rid)}));
    cl.jobs[at] = std::move(job);
  } else {
    cl.jobs.push_back(std::move(job));
    ++jobs_total_;
    counters_->snapshot_streams.set(jobs_total_);
  }
  list_streaming(c, cl);
  produce(c, cl, now, out);
  return true;
}

bool ControlService::reusable(const SnapshotCache& k, uint64_t now) const noexcept {
  if (k.session() != core_.session()) return false;
  const uint64_t last = core_.last_committed();
  if (k.seq() == last && !core_.has_open()) return true;  // nothing happened since
  // Its sequence must stay in the ring, with a quarter of the ring to spare
  // for the client to fetch what follows after it has read the copy. (A
  // ring that laps within the interval forces a build per three quarters of
  // a lap, whatever clients ask: a copy older than that serves no one.)
  const size_t slots = core_.ring().slots();
  return now < k.built_ns() + cfg_.snapshot_interval_ns && last - k.seq() <= slots - slots / 4;
}

std::shared_ptr<const SnapshotCache> ControlService::full_cache(uint64_t now, uint64_t newer_than) {
  if (current_ && reusable(*current_, now)) {
    const bool unchanged = current_->seq() == core_.last_committed() && !core_.has_open();
    if (newer_than == 0 || current_->seq() > newer_than || unchanged) return current_;
    // The client has this copy already and needs a later one: the next
    // build, which no client can bring forward.
    return nullptr;
  }
  // A copy equals "every committed datagram", so building one seals the open
  // datagram, which with boundaries set by the input only the application
  // may do: the copy waits for its flush() (tick() asks again).
  if (!core_.may_seal()) return nullptr;
  rebuild(now);
  return current_;
}

void ControlService::rebuild(uint64_t now) {
  // The copy must equal "every committed datagram": seal the open one.
  core_.commit_open(now);
  // Copies live on while streams read them. Beyond the cap, the streams on
  // the oldest are cut (told so: they ask again and get a recent copy).
  std::erase_if(generations_, [](const auto& w) { return w.expired(); });
  while (!generations_.empty() && generations_.size() >= cfg_.max_snapshot_generations) {
    const SnapshotCache* oldest = generations_.front().lock().get();
    for (const ClientId id : streaming_) {
      const auto it = clients_.find(id);
      if (it == clients_.end() || it->second.jobs.empty() || it->second.jobs.front().cache.get() != oldest) continue;
      if (!it->second.sink) continue;
      drop_job(id, it->second, 0,
               fmt::format("snapshot abandoned: this client read it more slowly than the books changed (the "
                           "publisher keeps {} copies); ask again",
                           cfg_.max_snapshot_generations),
               *it->second.sink);
    }
    generations_.erase(generations_.begin());  // current_ may still hold it: replaced just below
  }
  current_ = SnapshotCache::build(core_.books(), 0, core_.books().max_instruments(), core_.last_committed(),
                                  core_.session(), now);
  last_build_ = now;
  generations_.push_back(current_);
  counters_->snapshot_builds.add();
  update_cache_counters();
}

bool ControlService::bind(SnapshotJob& j, uint64_t now) {
  if (j.full()) {
    auto k = full_cache(now, j.newer_than);
    if (!k) return false;
    j.cache = std::move(k);
    counters_->snapshot_cached.add();
    return true;
  }
  const uint32_t i = j.ids[0];
  if (current_ && reusable(*current_, now) && (j.newer_than == 0 || current_->seq() > j.newer_than) &&
      current_->instrument_seq(i) == core_.books().book(i).instrument_seq()) {
    j.cache = current_;
    counters_->snapshot_cached.add();
    return true;
  }
  if (!core_.may_seal()) return false;  // as full_cache: the input ends the open datagram
  core_.commit_open(now);
  j.cache = SnapshotCache::build(core_.books(), i, 1, core_.last_committed(), core_.session(), now);
  counters_->snapshot_single_builds.add();
  return true;
}

size_t ControlService::snapshot_cost(const Client& cl, const SnapshotJob& j, uint64_t now) {
  auto listed = [](const SnapshotCache& k, uint32_t i) {
    return std::max(k.run(i).size(), SnapshotCache::kEmptyChunkBytes);
  };
  if (!j.full()) {
    const uint32_t i = j.ids[0];
    const book::OrderBook& ob = core_.books().book(i);
    if (current_ && current_->instrument_seq(i) == ob.instrument_seq()) return listed(*current_, i);
    return std::max(SnapshotCache::run_size(ob), SnapshotCache::kEmptyChunkBytes);
  }
  // Without newer_than: the price is that of the copy that exists or is built now.
  const auto k = full_cache(now, 0);
  // No copy can be built before the input ends the open datagram: charged the
  // least, as a request whose copy is not priced yet.
  if (!k) return cfg_.snapshot_min_cost;
  size_t cost = 0;
  if (j.all) {
    if (cl.n_subscribed == cl.subscribed_set.size()) return k->bytes();
    for (uint32_t i = 0; i < cl.subscribed_set.size(); ++i)
      if (cl.subscribed_set[i]) cost += k->run(i).size();
  } else {
    for (uint32_t i : j.ids) cost += listed(*k, i);
  }
  return cost;
}

void ControlService::produce(ClientId c, Client& cl, uint64_t now, ReplySink& out) {
  begin_poll(now);
  if (cl.poll_epoch != poll_epoch_) {
    cl.poll_epoch = poll_epoch_;
    cl.poll_bytes = 0;
  }
  while (!cl.jobs.empty()) {
    SnapshotJob& j = cl.jobs.front();
    if (!j.cache && !bind(j, now)) return;  // waits for a newer copy: tick() tries again
    if (out.queued_bytes(c) >= cfg_.snapshot_share_bytes) return;  // on_writable continues
    if (cl.poll_bytes >= cfg_.snapshot_client_poll_bytes || poll_left_ == 0) return;  // tick continues
    SnapshotDataBuilder b(j.rid, j.cache->session());
    const bool done = fill(j, cl, b);
    if (!done && b.empty()) {  // cannot happen with a well-formed copy; a stuck loop would freeze the feed
      drop_job(c, cl, 0, "snapshot stream made no progress (publisher bug); ask again", out);
      continue;
    }
    if (!b.empty()) {
      const size_t n = b.size();
      out.send(c, std::move(b).finish());
      cl.poll_bytes += n;
      poll_left_ -= std::min(n, poll_left_);
      counters_->snapshot_bytes.add(n);
      if (drill_ && !done) [[unlikely]]
        drill_->at(DrillPoint::kSnapshot);
    }
    if (done) finish_job(c, cl, out);
  }
}

bool ControlService::fill(SnapshotJob& j, const Client& cl, SnapshotDataBuilder& b) const {
  const SnapshotCache& k = *j.cache;
  const size_t frame = cfg_.snapshot_frame_bytes;
  for (;;) {
    uint32_t inst = 0;
    if (j.all) {
      // What the client subscribed to and has a history; an instrument
      // started is finished even if the client unsubscribed meanwhile.
      const auto n = static_cast<uint32_t>(cl.subscribed_set.size());
      if (j.offset == 0)
        while (j.pos < n && !(cl.subscribed_set[j.pos] && !k.run(j.pos).empty())) ++j.pos;
      if (j.pos >= n) return true;
      inst = j.pos;
    } else {
      if (j.pos >= j.ids.size()) return true;
      inst = j.ids[j.pos];
    }
    const auto run = k.run(inst);
    if (run.empty()) {  // listed, without history
      if (!b.empty() && b.size() + SnapshotCache::kEmptyChunkBytes > frame) return false;
      k.write_empty_chunk(b.reserve(SnapshotCache::kEmptyChunkBytes), inst);
      ++j.pos;
      ++j.served;
      continue;
    }
    const size_t next = SnapshotCache::append(b, run, j.offset, frame);
    if (next == j.offset) return false;  // the frame is full
    if (next < run.size()) {
      j.offset = next;
      return false;
    }
    j.offset = 0;
    ++j.pos;
    ++j.served;
  }
}

void ControlService::finish_job(ClientId c, Client& cl, ReplySink& out) {
  const SnapshotJob& j = cl.jobs.front();
  out.send(c, encode_control(j.rid, SnapshotDone{j.cache->session(), SnapshotStatus::kOk, j.served, j.cache->seq()}));
  counters_->snapshot_requests.add();
  counters_->snapshot_instruments.add(j.served);
  ++cl.recoveries;
  cl.last_rid = j.rid;
  cl.last_seq = j.cache->seq();
  cl.jobs.erase(cl.jobs.begin());
  --jobs_total_;
  counters_->snapshot_streams.set(jobs_total_);
}

void ControlService::drop_job(ClientId c, Client& cl, size_t index, std::string_view why, ReplySink& out) {
  counters_->snapshot_abandoned.add();
  counters_->requests_overloaded.add();
  // kOverloaded, not a SnapshotDone: a subscriber takes a refused
  // one-instrument snapshot as "not entitled" and stops asking.
  out.send(c, encode_control(cl.jobs[index].rid, ErrorReply{ErrorCode::kOverloaded, std::string(why)}));
  cl.jobs.erase(cl.jobs.begin() + static_cast<ptrdiff_t>(index));
  --jobs_total_;
  counters_->snapshot_streams.set(jobs_total_);
}

void ControlService::list_streaming(ClientId c, Client& cl) {
  if (cl.listed) return;
  cl.listed = true;
  streaming_.push_back(c);
}

void ControlService::update_cache_counters() noexcept {
  counters_->snapshot_cache_bytes.set(snapshot_cache_bytes());
}

size_t ControlService::snapshot_cache_bytes() const noexcept {
  size_t n = 0;
  for (const auto& w : generations_)
    if (const auto k = w.lock()) n += k->memory();
  return n;
}

size_t ControlService::client_bytes(ClientId c) const noexcept {
  const auto it = clients_.find(c);
  if (it == clients_.end()) return 0;
  const Client& cl = it->second;
  size_t n = sizeof(Client) + cl.subscribed_set.capacity() / 8 + cl.jobs.capacity() * sizeof(SnapshotJob);
  for (const auto& j : cl.jobs) {
    n += j.ids.capacity() * sizeof(uint32_t);
    if (!j.cache) continue;
    const bool shared = std::any_of(generations_.begin(), generations_.end(),
                                    [&](const auto& w) { return w.lock() == j.cache; });
    if (!shared) n += j.cache->memory();  // a one-instrument copy of its own
  }
  return n;
}

}  // namespace mdcast::feed
