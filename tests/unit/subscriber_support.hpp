// A hand-driven world for Subscriber tests: a miniature publisher (`Feed`)
// that builds datagrams, heartbeats, retransmit replies and snapshots byte by
// byte from its own books, a control channel that captures what the
// subscriber asks, and a handler that records what it delivers.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include "mdcast/book/order_book.hpp"
#include "mdcast/feed/subscriber.hpp"
#include "mdcast/wire/control.hpp"
#include "support.hpp"

namespace mdcast::test {

constexpr uint32_t kSession = 100;
constexpr uint16_t kChannel = 1;
constexpr uint32_t kPubSender = 9;
constexpr book::BookConfig kBooks{8, 1024, 16};

struct Handler {
  struct Msg {
    uint32_t inst;
    uint32_t iseq;
    wire::MsgType type;
    uint64_t seq;
    bool recovered;
    Bytes opaque;
  };
  std::vector<Msg> msgs;
  std::vector<uint32_t> snapshots;
  std::vector<uint64_t> resets;
  std::vector<feed::SubscriberEvent> events;

  void on_message(const wire::Message& m, const feed::Delivery& d) noexcept {
    Msg x{m.instrument, m.instrument_seq, m.type, d.sequence, d.recovered, {}};
    if (m.type == wire::MsgType::kOpaque) x.opaque.assign(m.opaque.data, m.opaque.data + m.opaque.size);
    msgs.push_back(std::move(x));
  }
  void on_snapshot(uint32_t inst, const book::BookSet*) noexcept { snapshots.push_back(inst); }
  void on_reset(uint64_t s) noexcept { resets.push_back(s); }
  void on_event(feed::SubscriberEvent e, std::string_view) noexcept { events.push_back(e); }

  std::vector<uint32_t> iseqs(uint32_t inst) const {
    std::vector<uint32_t> v;
    for (const auto& m : msgs)
      if (m.inst == inst) v.push_back(m.iseq);
    return v;
  }
  std::vector<uint64_t> seqs() const {
    std::vector<uint64_t> v;
    for (const auto& m : msgs)
      if (v.empty() || v.back() != m.seq) v.push_back(m.seq);
    return v;
  }
};

struct FakeControl : feed::ControlChannel {
  struct Typed {
    uint32_t rid;
    uint64_t session;
    uint64_t from;
    uint32_t count;
  };
  std::vector<Bytes> sent;
  bool up = true;
  // Set: behave like a medium that fetches retransmits itself (RDMA READ):
  // requests are recorded here instead of becoming frames.
  bool fetches = false;
  std::vector<Typed> fetch_requests;
  bool send(std::span<const std::byte> f) override {
    if (!up) return false;
    sent.emplace_back(f.begin(), f.end());
    return true;
  }
  bool request_retransmit(uint32_t rid, uint64_t session, uint64_t from, uint32_t count) override {
    if (!fetches) return ControlChannel::request_retransmit(rid, session, from, count);
    fetch_requests.push_back({rid, session, from, count});
    return true;
  }
  // Every captured frame of body type T, with its request id.
  template <class T>
  std::vector<std::pair<uint32_t, T>> all() const {
    std::vector<std::pair<uint32_t, T>> v;
    for (const auto& f : sent) {
      std::string why;
      auto p = wire::parse_control(f, &why);
      EXPECT_TRUE(p) << "subscriber sent a malformed frame: " << why;
      if (p && std::holds_alternative<T>(p->body)) v.emplace_back(p->request_id, std::get<T>(p->body));
    }
    return v;
  }
  void clear() { sent.clear(); }
};

// The publisher side, kept deliberately simple: every datagram is built by
// hand from messages whose instrument sequences and book effects it tracks.
class Feed {
 public:
  uint64_t session = kSession;
  uint16_t channel = kChannel;
  uint32_t sender = kPubSender;
  uint8_t flags = wire::kFlagCrc;
  book::BookSet books{kBooks};

  wire::Message add(uint32_t inst) {
    const uint64_t id = next_id_++;
    const auto side = id % 2 ? wire::Side::kBuy : wire::Side::kSell;
    const int64_t px = side == wire::Side::kBuy ? 100 - static_cast<int64_t>(id % 4) : 110 + static_cast<int64_t>(id % 4);
    resting_[inst].push_back(id);
    return wire::Message::make_add(inst, id, px, 10, side);
  }
  // Deletes the oldest resting order of inst.
  wire::Message del(uint32_t inst) {
    auto& q = resting_[inst];
    EXPECT_FALSE(q.empty());
    const uint64_t id = q.front();
    q.pop_front();
    return wire::Message::make_delete(inst, id);
  }

  // Publishes one datagram; returns its bytes. Messages get their sequence here.
  const Bytes& publish(std::vector<wire::Message> ms) {
    DatagramBuilder b(dgs_.size() + 1, session, channel, sender);
    b.flags(flags);
    for (auto& m : ms) {
      m.instrument_seq = ++iseq_[m.instrument];
      const auto r = books.apply(m);
      EXPECT_TRUE(r == book::ApplyResult::kOk || r == book::ApplyResult::kIgnored) << book::to_string(r);
      books.set_instrument_seq(m.instrument, m.instrument_seq);
      b.add(m);
    }
    dgs_.push_back(b.build());
    return dgs_.back();
  }
  // Publishes a datagram of raw, already sequenced messages (fragments).
  const Bytes& publish_raw(const Bytes& msg) {
    DatagramBuilder b(dgs_.size() + 1, session, channel, sender);
    b.flags(flags).raw(msg);
    dgs_.push_back(b.build());
    return dgs_.back();
  }
  uint32_t next_iseq(uint32_t inst) { return ++iseq_[inst]; }
  void note_applied(const wire::Message& m) {
    (void)books.apply(m);
    books.set_instrument_seq(m.instrument, m.instrument_seq);
  }

  const Bytes& dg(uint64_t seq) const { return dgs_.at(seq - 1); }
  uint64_t newest() const { return dgs_.size(); }

  // A heartbeat with the true checksums of `insts`, unless overridden.
  Bytes heartbeat(const std::vector<uint32_t>& insts, std::optional<uint64_t> last_seq = {},
                  const std::map<uint32_t, uint64_t>& wrong_checksum = {}, uint8_t extra_flags = 0,
                  std::optional<uint32_t> instrument_count = {}) const {
    std::vector<wire::HeartbeatView::Entry> e;
    for (uint32_t i : insts) {
      const auto w = wrong_checksum.find(i);
      e.push_back({i, books.book(i).instrument_seq(), w == wrong_checksum.end() ? books.book(i).checksum() : w->second});
    }
    const uint64_t last = last_seq.value_or(newest());
    return DatagramBuilder(last, session, channel, sender)
        .flags(static_cast<uint8_t>(flags | wire::kFlagUnsequenced | extra_flags))
        .raw(heartbeat_msg(last, books.global_checksum(), instrument_count.value_or(kBooks.max_instruments), e))
        .build();
  }

  Bytes retransmit_reply(uint32_t rid, uint64_t from, uint32_t count,
                         wire::RetransmitStatus st = wire::RetransmitStatus::kOk) const {
    wire::RetransmitReplyBuilder b(rid, session, st, from, 1);
    if (st == wire::RetransmitStatus::kOk)
      for (uint64_t s = from; s < from + count && s <= newest(); ++s) b.add(dg(s));
    return std::move(b).finish();
  }

  // SnapshotData + SnapshotDone for `insts` at the current state (= newest()).
  std::vector<Bytes> snapshot(uint32_t rid, const std::vector<uint32_t>& insts) const {
    wire::SnapshotDataBuilder b(rid, session);
    for (uint32_t i : insts) {
      const auto& ob = books.book(i);
      std::vector<wire::SnapshotChunkView::Entry> orders;
      books.for_each_order(i, [&](const book::Order& o) { orders.push_back({o.id, o.price, o.quantity, o.side}); });
      const Bytes c = snapshot_chunk_msg(i, ob.instrument_seq(), newest(), 0, 1, ob.status(), orders);
      std::memcpy(b.reserve(c.size()), c.data(), c.size());
    }
    std::vector<Bytes> out;
    out.push_back(std::move(b).finish());
    out.push_back(wire::encode_control(
        rid, wire::SnapshotDone{session, wire::SnapshotStatus::kOk, static_cast<uint32_t>(insts.size()), newest()}));
    return out;
  }
  std::vector<uint32_t> instruments_with_data() const {
    std::vector<uint32_t> v;
    for (uint32_t i = 0; i < kBooks.max_instruments; ++i)
      if (books.book(i).instrument_seq() > 0) v.push_back(i);
    return v;
  }

 private:
  std::vector<Bytes> dgs_;
  std::array<uint32_t, 8> iseq_{};
  std::map<uint32_t, std::deque<uint64_t>> resting_;
  uint64_t next_id_ = 1;
};

inline feed::SubscriberConfig sub_config() {
  feed::SubscriberConfig c;
  c.channel = kChannel;
  c.max_datagram = 512;
  c.window_bytes = 64 * 512;  // 64 slots
  c.books = kBooks;
  c.request_timeout_ns = 1000;
  c.max_retries = 2;
  c.max_outstanding = 4;
  c.reorder_wait_ns = 0;
  c.publisher_timeout_ns = 1'000'000'000'000ull;
  c.status_interval_ns = 1'000'000'000'000ull;  // status reports only where a test asks
  return c;
}

}  // namespace mdcast::test
