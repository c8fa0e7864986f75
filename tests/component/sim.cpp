#include "sim.hpp"

#include <fmt/format.h>

#include "mdcast/feed/medium_fit.hpp"
#include "mdcast/wire/datagram.hpp"
#include "mdcast/wire/messages.hpp"

namespace mdcast::test {

Sim::Sim(SimSpec spec)
    : spec_(std::move(spec)), medium_(media::mem::PublisherOptions{wire::kMaxDatagram, spec_.seed * 31 + 7}) {
  spec_.gen.seed = spec_.seed;
  gen_ = std::make_unique<book::Generator>(spec_.gen);
  start_publisher(session_);
  subs_.resize(spec_.subs.size());
  for (size_t i = 0; i < subs_.size(); ++i) {
    subs_[i].spec = spec_.subs[i];
    if (subs_[i].spec.join_at_message == 0) attach(subs_[i]);
  }
  opaque_buf_.resize(spec_.opaque_size);
  for (size_t i = 0; i < opaque_buf_.size(); ++i) opaque_buf_[i] = std::byte{static_cast<uint8_t>(i * 7)};
}

void Sim::start_publisher(uint64_t session) {
  auto cfg = spec_.pub;
  cfg.session = session;
  svc_.reset();
  pub_ = std::make_unique<feed::Publisher<media::mem::Bus>>(feed::fit_to_medium(medium_, cfg), medium_.sink());
  svc_ = std::make_unique<feed::ControlService>(spec_.ctl, pub_->core());
  log_.reset(cfg.books.max_instruments);
}

void Sim::attach(SubRuntime& s) {
  s.rec = std::make_unique<Recorder>(s.spec.cfg.books.max_instruments);
  const media::mem::EndpointOptions ep{s.spec.queue_capacity, wire::kMaxDatagram, &now_};
  s.a = std::make_unique<SubRuntime::Rail>(medium_.bus().attach(ep), s.spec.faults);
  if (s.spec.rail_b) s.b = std::make_unique<SubRuntime::Rail>(medium_.bus().attach(ep), *s.spec.rail_b);
  s.link = &medium_.hub().connect(s.spec.control_drop);
  s.sub = std::make_unique<feed::Subscriber<Recorder>>(s.spec.cfg, *s.rec, s.link);
  s.sub->on_control_connected(now_);
}

void Sim::tick() {
  now_ += spec_.tick_ns;
  ++ticks_;
  const bool active = spec_.duty_period == 0 || ticks_ % spec_.duty_period < spec_.duty_active;
  // Publish this tick's share.
  for (uint32_t k = 0; active && k < spec_.messages_per_tick && published_ < spec_.messages; ++k) {
    if (spec_.restart_at_message && published_ == spec_.restart_at_message) {
      // Crash-restart: a new session with fresh books and a fresh generator.
      session_ += 17;
      start_publisher(session_);
      auto g = spec_.gen;
      g.seed = spec_.seed + 1000;
      gen_ = std::make_unique<book::Generator>(g);
      medium_.hub().reset_service();
      for (auto& s : subs_)
        if (s.sub) s.sub->on_control_connected(now_);
    }
    wire::Message m;
    const bool opaque = spec_.opaque_every && published_ % spec_.opaque_every == spec_.opaque_every - 1;
    if (opaque) {
      m = wire::Message::make_opaque(static_cast<uint32_t>(published_ % spec_.gen.instruments), opaque_buf_);
    } else {
      gen_->next(m);
    }
    const auto r = pub_->publish(m, now_);
    if (r == feed::PublishResult::kBackPressured) {
      ADD_FAILURE() << "unexpected back-pressure from the in-memory medium";
      break;
    }
    if (r != feed::PublishResult::kOk) {
      ADD_FAILURE() << "generator produced a message the book refused: "
                    << book::to_string(pub_->core().last_reject());
      break;
    }
    EXPECT_TRUE(log_.add(m)) << "instrument " << m.instrument << " sequence " << m.instrument_seq;
    ++published_;
    for (auto& s : subs_)
      if (!s.sub && s.spec.join_at_message == published_) attach(s);
  }
  if (spec_.forge_every && ticks_ % spec_.forge_every == 0) forge();
  if (spec_.chain_per_tick) forge_chain();
  pub_->poll(now_);
  medium_.poll_control(*svc_, now_);
  svc_->tick(now_);
  std::vector<std::byte> frame;
  for (auto& s : subs_) {
    if (!s.sub) continue;
    drain(s);
    while (s.link->pop_reply(frame)) s.sub->on_control_frame(frame, now_);
    s.sub->poll(now_);
  }
}

// Each rail through its own interceptor into the engine; the receive time is
// the endpoint's (this virtual clock).
void Sim::drain(SubRuntime& s) {
  auto& sub = *s.sub;
  s.a->poll([&](std::span<const std::byte> d, uint64_t rx) noexcept { sub.on_datagram(d, feed::Rail::kA, rx); },
            s.spec.drain_per_tick);
  if (s.b)
    s.b->poll([&](std::span<const std::byte> d, uint64_t rx) noexcept { sub.on_datagram(d, feed::Rail::kB, rx); },
              s.spec.drain_per_tick);
}

// Once the feed is quiet nothing may arrive to release what the interceptors
// hold back; released now they arrive as late copies, as on a real network.
void Sim::flush_held(SubRuntime& s) {
  auto& sub = *s.sub;
  s.a->flush_held([&](std::span<const std::byte> d, uint64_t rx) noexcept { sub.on_datagram(d, feed::Rail::kA, rx); },
                  now_);
  if (s.b)
    s.b->flush_held(
        [&](std::span<const std::byte> d, uint64_t rx) noexcept { sub.on_datagram(d, feed::Rail::kB, rx); }, now_);
}

void Sim::forge() {
  // Built from what anyone on the group sees: a real datagram or heartbeat,
  // rewritten (and resealed: the CRC protects against noise, not people).
  const auto& core = pub_->core();
  if (core.last_committed() == 0) return;
  const auto real = core.datagram(core.last_committed());
  std::vector<std::byte> d(real.begin(), real.end());
  const uint64_t kind = forged_++ % 4;
  wire::DatagramHeader h = wire::read_header(d.data());
  if (kind == 0) {
    h.session = core.session() ^ 1;  // another session
  } else if (kind == 2) {
    h.sequence = (uint64_t{1} << 40) + forged_;  // far ahead
  } else {
    // A heartbeat: the end of the session, or a tail of 2^40.
    auto cfg = spec_.pub;
    cfg.session = core.session();
    feed::PublisherCore forger(cfg);
    const auto hb = forger.build_heartbeat(now_, kind == 1);
    d.assign(hb.begin(), hb.end());
    h = wire::read_header(d.data());
    const uint64_t last = kind == 1 ? core.last_committed() : uint64_t{1} << 40;
    h.sequence = last;
    store_le<uint64_t>(d.data() + wire::dgram::kHeaderSize + wire::heartbeat::kLastSeq, last);
  }
  const uint16_t len = h.length;
  wire::write_header(d.data(), h);
  (void)len;
  if (h.flags & wire::kFlagCrc) wire::seal_crc(d);
  for (auto& s : subs_)
    if (s.sub) s.sub->on_datagram(d, feed::Rail::kA, now_);
}

void Sim::forge_chain() {
  const auto& core = pub_->core();
  if (core.last_committed() == 0) return;
  if (chain_next_ == 0) chain_next_ = core.last_committed() + 1;
  const auto real = core.datagram(core.last_committed());
  std::vector<std::byte> d(real.begin(), real.end());
  wire::DatagramHeader h = wire::read_header(d.data());
  for (uint32_t i = 0; i < spec_.chain_per_tick; ++i) {
    h.sequence = chain_next_++;
    wire::write_header(d.data(), h);
    if (h.flags & wire::kFlagCrc) wire::seal_crc(d);
    for (auto& s : subs_)
      if (s.sub) s.sub->on_datagram(d, feed::Rail::kA, now_);
  }
}

bool Sim::run() {
  while (published_ < spec_.messages) tick();
  // Flush everything and end the session, then let recovery finish.
  uint64_t t = 0;
  while (!pub_->end_session(now_) && t++ < 1000) tick();
  for (uint64_t i = 0; i < spec_.settle_ticks; ++i) {
    tick();
    if (i % 64 == 0)
      for (auto& s : subs_)
        if (s.sub) flush_held(s);
    bool done = true;
    for (auto& s : subs_) done &= s.sub && s.sub->delivered_to_end();
    if (done) return true;
    // Re-announce the end of session periodically (heartbeats may be lost).
    if (i % 100 == 99) pub_->end_session(now_);
  }
  return false;
}

void Sim::verify() const {
  const std::string r = report();
  for (const auto& s : subs_) {
    SCOPED_TRACE(s.spec.name);
    ASSERT_TRUE(s.sub);
    expect_exact_delivery(log_, pub_->core(), *s.sub, *s.rec, r, spec_.forge_every != 0);
  }
}

std::string Sim::report() const {
  std::string r = fmt::format("published {} messages in {} datagrams (session {})\n", published_,
                              pub_->core().last_committed(), pub_->core().session());
  for (const auto& s : subs_) {
    if (!s.sub) continue;
    const auto& c = s.sub->counters();
    r += fmt::format("  {}:", s.spec.name);
    for (size_t i = 0; i < feed::SubscriberCounters::kCount; ++i)
      if (c.at(i).get()) r += fmt::format(" {}={}", feed::SubscriberCounters::kInfo[i].name, c.at(i).get());
    r += "\n";
  }
  return r;
}

}  // namespace mdcast::test
