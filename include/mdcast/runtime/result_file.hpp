// Result files: what a publisher or subscriber process reports when it ends
// (TOML: outcome, session, last sequence, counters, the latency histogram, a
// digest of every book), and the one comparison that says whether a
// subscriber's books are the publisher's. `mdcast demo`, `mdcast verify`, the
// system tests and an application's own harness all use it:
//
//   runtime::RunResult r;                 // role, outcome, session, books from the runtime
//   r.books.push_back({instrument, seq, checksum});
//   runtime::write_result("sub.toml", r);
//   auto v = runtime::compare_books(runtime::read_result("pub.toml"), r);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mdcast/core/histogram.hpp"

namespace mdcast::runtime {

// A book as a process holds it at the end: what a result file compares.
struct BookDigest {
  uint32_t instrument;
  uint32_t instrument_seq;
  uint64_t checksum;
};

struct RunResult {
  std::string role;  // publisher | subscriber
  std::string name;
  std::string medium;
  std::string outcome = "ok";  // ok | publisher-lost | timeout | error: ...
  uint64_t session = 0;
  uint64_t last_sequence = 0;
  double seconds = 0;
  uint64_t messages = 0;
  bool all_instruments = true;
  std::vector<std::pair<std::string, uint64_t>> counters;
  Histogram latency;  // one-way, ns (subscribers)
  std::vector<BookDigest> books;

  [[nodiscard]] uint64_t counter(const std::string& key, uint64_t dflt = 0) const;
};

void write_result(const std::string& path, const RunResult& r);
RunResult read_result(const std::string& path);

struct BookVerdict {
  bool identical = false;
  uint32_t compared = 0;   // instruments compared
  std::string detail;      // first difference
};
// kSameSession: the books, built in the publisher's session (a live feed).
// kContent: the books alone, whatever session built them: a replay or a
// relay republishes the same messages under a session id of its own.
// kState: the books' state alone (their checksums; an instrument one side
// lacks is an empty book): a conflated feed (runtime/conflate.hpp) reaches
// the same books by fewer messages, so its instrument sequences are its own.
enum class BookMatch { kSameSession, kContent, kState };
BookVerdict compare_books(const RunResult& publisher, const RunResult& subscriber,
                          BookMatch match = BookMatch::kSameSession);

// A subscriber's (or a relay's) result against its publisher's, as `mdcast
// verify` judges it: whole when the books are identical and it ran to the
// end of the session ("ok": books that match a subscriber that stopped short
// are not a match of the feed). `text` says which and why, with its counts:
// "identical (12 instruments compared; 5000 messages, 0 gaps, 3 recovered, 0 snapshots)".
struct FeedVerdict {
  bool whole = false;
  std::string text;
};
FeedVerdict verify_feed(const RunResult& publisher, const RunResult& subscriber,
                        BookMatch match = BookMatch::kSameSession);

// Why a publisher's result shows fewer messages/s than `asked` (pacing, the
// medium's back-pressure, or the publishing thread itself); "" when it kept
// within 5 % of it. `pacing` is publisher.pacing's name.
std::string rate_shortfall(const RunResult& publisher, double asked, std::string_view pacing);

}  // namespace mdcast::runtime
