#include "sim.hpp"

#include <fmt/format.h>

#include "mdcast/wire/messages.hpp"

namespace mdcast::test {

Sim::Sim(SimSpec spec) : spec_(std::move(spec)), hub_(spec_.seed * 31 + 7) {
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

void Sim::start_publisher(uint32_t session) {
  auto cfg = spec_.pub;
  cfg.session = session;
  svc_.reset();
  pub_ = std::make_unique<feed::Publisher<media::mem::Bus>>(cfg, bus_);
  svc_ = std::make_unique<feed::ControlService>(spec_.ctl, pub_->core());
  log_.assign(cfg.books.max_instruments, {});
}

void Sim::attach(SubRuntime& s) {
  s.rec = std::make_unique<Recorder>(s.spec.cfg.books.max_instruments);
  s.a = &bus_.attach(s.spec.faults);
  if (s.spec.rail_b) s.b = &bus_.attach(*s.spec.rail_b);
  s.link = &hub_.connect(s.spec.control_drop);
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
      hub_.reset_service();
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
    auto& l = log_[m.instrument];
    EXPECT_EQ(l.size() + 1, m.instrument_seq);
    l.push_back(message_hash(m));
    ++published_;
    for (auto& s : subs_)
      if (!s.sub && s.spec.join_at_message == published_) attach(s);
  }
  pub_->poll(now_);
  hub_.pump(*svc_, now_);
  svc_->tick(now_);
  std::vector<std::byte> frame;
  for (auto& s : subs_) {
    if (!s.sub) continue;
    std::span<const std::byte> d;
    for (size_t n = 0; n < s.spec.drain_per_tick && s.a->pop(d); ++n) s.sub->on_datagram(d, feed::Rail::kA, now_);
    if (s.b)
      for (size_t n = 0; n < s.spec.drain_per_tick && s.b->pop(d); ++n) s.sub->on_datagram(d, feed::Rail::kB, now_);
    while (s.link->pop_reply(frame)) s.sub->on_control_frame(frame, now_);
    s.sub->poll(now_);
  }
}

bool Sim::run() {
  while (published_ < spec_.messages) tick();
  // Flush everything and end the session, then let recovery finish.
  uint64_t t = 0;
  while (!pub_->end_session(now_) && t++ < 1000) tick();
  for (uint64_t i = 0; i < spec_.settle_ticks; ++i) {
    tick();
    if (i % 64 == 0) {
      for (auto& s : subs_) {
        s.a->flush_held();
        if (s.b) s.b->flush_held();
      }
    }
    bool done = true;
    for (auto& s : subs_) done &= s.sub && s.sub->caught_up() && s.sub->session_ended();
    if (done) return true;
    // Re-announce the end of session periodically (heartbeats may be lost).
    if (i % 100 == 99) pub_->end_session(now_);
  }
  return false;
}

void Sim::verify() const {
  const auto& books = pub_->core().books();
  for (const auto& s : subs_) {
    SCOPED_TRACE(s.spec.name);
    ASSERT_TRUE(s.sub);
    const auto& sub = *s.sub;
    EXPECT_EQ(sub.session(), pub_->core().session());
    EXPECT_TRUE(sub.caught_up()) << "next " << sub.next_sequence() << " highest " << sub.highest_sequence();
    EXPECT_EQ(sub.next_sequence(), pub_->core().last_committed() + 1);
    for (uint32_t inst = 0; inst < books.max_instruments(); ++inst) {
      if (!sub.wants(inst)) {
        EXPECT_TRUE(s.rec->per_inst[inst].empty()) << "instrument " << inst << " delivered but filtered out";
        continue;
      }
      const auto& log = log_[inst];
      uint32_t cur = 0;
      bool ok = true;
      for (const auto& e : s.rec->per_inst[inst]) {
        if (e.snapshot) {
          if (e.iseq < cur) {
            ADD_FAILURE() << "instrument " << inst << ": snapshot went back from " << cur << " to " << e.iseq;
            ok = false;
            break;
          }
          cur = e.iseq;
          continue;
        }
        if (e.iseq != cur + 1) {
          ADD_FAILURE() << "instrument " << inst << ": delivered sequence " << e.iseq << " after " << cur
                        << (e.iseq <= cur ? " (duplicate or out of order)" : " (silent hole)");
          ok = false;
          break;
        }
        if (e.iseq > log.size() || log[e.iseq - 1] != e.hash) {
          ADD_FAILURE() << "instrument " << inst << ": message " << e.iseq << " differs from what was published";
          ok = false;
          break;
        }
        cur = e.iseq;
      }
      if (!ok) continue;
      EXPECT_EQ(cur, log.size()) << "instrument " << inst << ": delivery stopped short";
      if (sub.books()) {
        const std::string d = books.diff(inst, *sub.books());
        EXPECT_TRUE(d.empty()) << d;
      }
    }
    // The counters add up: every datagram that arrived is accounted for.
    const auto& c = sub.counters();
    const uint64_t in = c.datagrams_received.get() + c.datagrams_recovered.get();
    const uint64_t out = c.datagrams_delivered.get() + c.duplicates.get() + c.dropped_own.get() +
                         c.foreign_channel.get() + c.malformed.get() + c.stale_session.get() + c.heartbeats.get() +
                         c.skipped_by_snapshot.get() + c.window_discards.get() + sub.buffered();
    EXPECT_EQ(in, out) << report();
    // The delivery hook saw every delivered datagram once, in sequence order.
    EXPECT_EQ(s.rec->datagrams, c.datagrams_delivered.get());
    EXPECT_FALSE(s.rec->datagram_order_broken);
    EXPECT_EQ(c.checksum_mismatch.get(), 0u);
    EXPECT_EQ(c.book_errors.get(), 0u);
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
