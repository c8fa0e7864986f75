// What the ControlService unit tests share: a ReplySink that captures
// replies (and can pretend they queue up unread), the publisher they run
// against, and a subscriber's way of applying a snapshot to its books.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/config.hpp"
#include "mdcast/feed/control_service.hpp"
#include "mdcast/feed/publisher_core.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/control.hpp"
#include "mdcast/wire/messages.hpp"
#include "support.hpp"

namespace mdcast::test {

using media::ClientId;

constexpr uint64_t kT = 1'000'000'000;

struct Capture : media::ReplySink {
  // With `queueing`, everything sent stays "queued" until drain(c): a
  // transport whose client has not read yet.
  bool queueing = false;
  std::map<ClientId, size_t> queued;
  size_t queued_bytes(ClientId c) const noexcept override {
    const auto it = queued.find(c);
    return it == queued.end() ? 0 : it->second;
  }
  void drain(ClientId c) { queued[c] = 0; }

  std::vector<std::pair<ClientId, Bytes>> frames;
  void send(ClientId c, std::vector<std::byte> f) override {
    if (queueing) queued[c] += f.size();
    frames.emplace_back(c, std::move(f));
  }
  // Parsed replies to client c, in order (frames stay owned here).
  std::vector<wire::ControlFrame> to(ClientId c) const {
    std::vector<wire::ControlFrame> v;
    for (const auto& [id, f] : frames) {
      if (id != c) continue;
      std::string why;
      auto p = wire::parse_control(f, &why);
      EXPECT_TRUE(p) << "the service sent a malformed frame: " << why;
      if (p) v.push_back(std::move(*p));
    }
    return v;
  }
  void clear() { frames.clear(); }
};

// The single reply expected, by value (views inside point into Capture's frames).
template <class T>
T only(const std::vector<wire::ControlFrame>& v) {
  EXPECT_EQ(v.size(), 1u);
  if (v.size() != 1) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(v[0].body)) << "body index " << v[0].body.index();
  return std::holds_alternative<T>(v[0].body) ? std::get<T>(v[0].body) : T{};
}

inline feed::PublisherConfig pub_config() {
  feed::PublisherConfig c;
  c.channel = 4;
  c.session = 900;
  c.max_datagram = 512;
  c.flush_interval_ns = 1'000'000;  // batch: tests commit explicitly
  c.retransmit_bytes = 64u << 10;
  c.max_unsent = 8;
  c.crc = true;
  c.books = {8, 8192, 64};
  return c;
}

inline wire::InstrumentSet list(std::vector<uint32_t> ids) {
  wire::InstrumentSet s;
  s.all = false;
  s.ids = std::move(ids);
  return s;
}

// Applies every SnapshotData frame in v to b, as a subscriber would.
inline void apply_snapshot(const std::vector<wire::ControlFrame>& v, book::BookSet& b,
                           std::map<uint32_t, int>* chunks = nullptr) {
  using namespace wire;
  for (const auto& f : v) {
    if (!std::holds_alternative<SnapshotData>(f.body)) continue;
    const auto& sd = std::get<SnapshotData>(f.body);
    MessageCursor c(sd.messages.data(), sd.messages.size());
    MessageView m;
    while (c.next(m)) {
      if (m.type() == MsgType::kInstrumentDefinition) {
        b.set_definition(m.instrument(), decode(m).definition);
        continue;
      }
      ASSERT_EQ(m.type(), MsgType::kSnapshotChunk);
      const SnapshotChunkView ch(m);
      if (chunks) ++(*chunks)[ch.instrument()];
      if (ch.chunk_index() == 0) b.clear(ch.instrument());
      for (uint16_t i = 0; i < ch.order_count(); ++i) {
        const auto e = ch.order(i);
        ASSERT_EQ(b.add_order(ch.instrument(), e.order_id, e.price, e.quantity, e.side), book::ApplyResult::kOk);
      }
      b.set_status(ch.instrument(), ch.status());
      b.set_instrument_seq(ch.instrument(), ch.instrument_seq());
    }
  }
}

// A publisher core, its control service and one capturing sink, on a clock
// the test moves.
struct World {
  explicit World(const feed::ControlConfig& cc = {}, const feed::PublisherConfig& pc = pub_config())
      : core(pc), svc(cc, core) {}

  void publish(wire::Message m) {
    ASSERT_EQ(core.stage(m, now), feed::PublishResult::kOk) << book::to_string(core.last_reject());
    // Pretend the medium took everything, so back-pressure never interferes.
    for (uint64_t s = core.next_unsent(); s <= core.last_committed(); ++s) core.mark_sent(s, 0, now);
  }
  void commit() {
    core.commit_open(now);
    for (uint64_t s = core.next_unsent(); s <= core.last_committed(); ++s) core.mark_sent(s, 0, now);
  }
  wire::Message add(uint32_t inst, uint32_t qty = 10) {
    const uint64_t id = next_id++;
    return wire::Message::make_add(inst, id, 100 + static_cast<int64_t>(id % 40), qty, wire::Side::kBuy);
  }
  // `orders` resting orders on inst: a book whose snapshot spans many frames.
  void big_book(uint32_t inst, uint32_t orders) {
    for (uint32_t i = 0; i < orders; ++i) publish(add(inst, 1 + i));
    commit();
  }
  template <class Body>
  bool send(ClientId c, const Body& b, uint32_t rid, media::ReplySink* to = nullptr) {
    return svc.on_frame(c, wire::encode_control(rid, b), now, to ? *to : out);
  }
  void subscribe(ClientId c, media::ReplySink* to = nullptr) {
    wire::Subscribe s;
    s.channel = core.config().channel;
    s.sender_id = static_cast<uint32_t>(c);
    ASSERT_TRUE(send(c, s, 100, to));
  }

  feed::PublisherCore core;
  feed::ControlService svc;
  Capture out;
  uint64_t now = kT;
  uint64_t next_id = 1;
};

// The replies with request id rid.
inline std::vector<wire::ControlFrame> with_rid(const std::vector<wire::ControlFrame>& v, uint32_t rid) {
  std::vector<wire::ControlFrame> r;
  for (const auto& f : v)
    if (f.request_id == rid) r.push_back(f);
  return r;
}

template <class T>
size_t count_of(const std::vector<wire::ControlFrame>& v) {
  return static_cast<size_t>(
      std::count_if(v.begin(), v.end(), [](const wire::ControlFrame& f) { return std::holds_alternative<T>(f.body); }));
}

}  // namespace mdcast::test
