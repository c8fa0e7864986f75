// A result file's content (result_file.hpp) from one agent that an
// application runs itself, as `mdcast record` and `replay` do, rather than
// through a runtime: what every publisher's or subscriber's result holds, so
// that `mdcast verify` and compare_books() read it as they read the
// runtimes'. The application adds what only it knows: name, medium, outcome,
// seconds, messages and its own counters.
//
//   runtime::RunResult r = runtime::subscriber_result(agent);
//   r.name = "feed"; r.messages = delivered; r.seconds = ...;
//   runtime::write_result("rec.toml", r);
#pragma once

#include <cstdint>
#include <vector>

#include "mdcast/book/order_book.hpp"
#include "mdcast/runtime/result_file.hpp"
#include "mdcast/stats/mirror.hpp"

namespace mdcast::runtime {

// Appends the digest of every book of `books` that keep(instrument, book)
// admits: the runtimes keep their channel's, a publisher only books it has
// published on (an untouched book says nothing of the feed).
template <class Keep>
void add_book_digests(const book::BookSet& books, Keep&& keep, std::vector<BookDigest>& out) {
  for (uint32_t i = 0; i < books.max_instruments(); ++i)
    if (const book::OrderBook& b = books.book(i); keep(i, b)) out.push_back({i, b.instrument_seq(), b.checksum()});
}

// A PublisherAgent's: its session, last sequence, "pub." and "ctl."
// counters and the books it has published on.
template <class Agent>
[[nodiscard]] RunResult publisher_result(const Agent& a) {
  RunResult r;
  r.role = "publisher";
  r.session = a.core().session();
  r.last_sequence = a.core().last_committed();
  stats::dump_counters(a.core().counters(), "pub.", r.counters);
  stats::dump_counters(a.control().counters(), "ctl.", r.counters);
  add_book_digests(a.core().books(), [](uint32_t, const book::OrderBook& b) { return b.instrument_seq() > 0; },
                   r.books);
  return r;
}

// A SubscriberAgent's: its session, the last sequence delivered, "sub."
// counters and every book it keeps.
template <class Agent>
[[nodiscard]] RunResult subscriber_result(const Agent& a) {
  const auto& sub = a.subscriber();
  RunResult r;
  r.role = "subscriber";
  r.session = sub.session();
  r.last_sequence = sub.next_sequence() - 1;
  stats::dump_counters(sub.counters(), "sub.", r.counters);
  if (const book::BookSet* b = sub.books())
    add_book_digests(*b, [](uint32_t, const book::OrderBook&) { return true; }, r.books);
  return r;
}

}  // namespace mdcast::runtime
