#include "delivery_check.hpp"

#include <gtest/gtest.h>

namespace mdcast::test {

bool PublishedLog::add(const wire::Message& m) {
  auto& l = per_inst_.at(m.instrument);
  const bool in_order = l.size() + 1 == m.instrument_seq;
  l.push_back(message_hash(m));
  return in_order;
}

void expect_exact_delivery(const PublishedLog& log, const feed::PublisherCore& pub,
                           const feed::Subscriber<Recorder>& sub, const Recorder& rec, const std::string& report,
                           bool forged_checksums, const std::function<bool(uint32_t)>& on_channel) {
  const auto& books = pub.books();
  EXPECT_EQ(sub.session(), pub.session());
  EXPECT_TRUE(sub.caught_up()) << "next " << sub.next_sequence() << " highest " << sub.highest_sequence();
  EXPECT_EQ(sub.next_sequence(), pub.last_committed() + 1);
  for (uint32_t inst = 0; inst < books.max_instruments(); ++inst) {
    if (on_channel && !on_channel(inst)) {
      EXPECT_TRUE(rec.per_inst[inst].empty()) << "instrument " << inst << " delivered on another channel";
      continue;
    }
    if (!sub.wants(inst)) {
      EXPECT_TRUE(rec.per_inst[inst].empty()) << "instrument " << inst << " delivered but filtered out";
      continue;
    }
    const auto& published = log.of(inst);
    uint32_t cur = 0;
    bool ok = true;
    for (const auto& e : rec.per_inst[inst]) {
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
      if (e.iseq > published.size() || published[e.iseq - 1] != e.hash) {
        ADD_FAILURE() << "instrument " << inst << ": message " << e.iseq << " differs from what was published";
        ok = false;
        break;
      }
      cur = e.iseq;
    }
    if (!ok) continue;
    EXPECT_EQ(cur, published.size()) << "instrument " << inst << ": delivery stopped short";
    if (sub.books()) {
      const std::string d = books.diff(inst, *sub.books());
      EXPECT_TRUE(d.empty()) << d;
    }
  }
  expect_counters_add_up(sub, report);
  const auto& c = sub.counters();
  // The delivery hook saw every delivered datagram once, in sequence order.
  EXPECT_EQ(rec.datagrams, c.datagrams_delivered.get());
  EXPECT_FALSE(rec.datagram_order_broken);
  // A rogue sender's heartbeats carry wrong checksums; otherwise a mismatch is a bug.
  if (!forged_checksums) {
    EXPECT_EQ(c.checksum_mismatch.get(), 0u);
  }
  EXPECT_EQ(c.book_errors.get(), 0u);
}

void expect_counters_add_up(const feed::Subscriber<Recorder>& sub, const std::string& report) {
  const auto& c = sub.counters();
  const uint64_t in = c.datagrams_received.get() + c.datagrams_recovered.get();
  const uint64_t out = c.datagrams_delivered.get() + c.duplicates.get() + c.dropped_own.get() +
                       c.foreign_channel.get() + c.malformed.get() + c.stale_session.get() + c.claims_held.get() + c.heartbeats.get() +
                       c.skipped_by_snapshot.get() + c.window_discards.get() + sub.buffered();
  EXPECT_EQ(in, out) << report;
}

}  // namespace mdcast::test
