#include "mdcast/runtime/result_file.hpp"

#include <fmt/format.h>
#include <fmt/os.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <toml++/toml.h>

#include "mdcast/book/order_book.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::runtime {

uint64_t RunResult::counter(const std::string& key, uint64_t dflt) const {
  for (const auto& [k, v] : counters)
    if (k == key) return v;
  return dflt;
}

void write_result(const std::string& path, const RunResult& r) {
  const std::string tmp = path + ".tmp";
  {
    auto out = fmt::output_file(tmp);
    out.print("role = \"{}\"\nname = \"{}\"\nmedium = \"{}\"\noutcome = \"{}\"\n", r.role, r.name, r.medium, r.outcome);
    out.print("session = \"{:016x}\"\nlast_sequence = {}\nseconds = {}\nmessages = {}\nall_instruments = {}\n", r.session,
              r.last_sequence, r.seconds, r.messages, r.all_instruments);
    out.print("\n[counters]\n");
    for (const auto& [k, v] : r.counters) out.print("\"{}\" = {}\n", k, v);
    out.print("\n[latency]\ncount = {}\nmin = {}\nmax = {}\nsum = {}\n", r.latency.count(), r.latency.min(),
              r.latency.max(), r.latency.sum());
    // The histogram itself (sparse), so percentiles can be merged across runs.
    out.print("buckets = [");
    bool first = true;
    const auto& b = r.latency.buckets();
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i]) {
        out.print("{}[{}, {}]", first ? "" : ", ", i, b[i]);
        first = false;
      }
    out.print("]\n\n[books]\n# instrument = [instrument sequence, state checksum]\n");
    for (const auto& d : r.books) out.print("\"{}\" = [{}, \"{:016x}\"]\n", d.instrument, d.instrument_seq, d.checksum);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail_errno("cannot write result file {}", path);
}

RunResult read_result(const std::string& path) {
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const std::exception& e) {
    fail("result file {}: {}", path, e.what());
  }
  RunResult r;
  r.role = t["role"].value_or(std::string{});
  r.name = t["name"].value_or(std::string{});
  r.medium = t["medium"].value_or(std::string{});
  r.outcome = t["outcome"].value_or(std::string{"missing"});
  // Hex text: a 64-bit id does not fit TOML's signed integers.
  r.session = std::strtoull(t["session"].value_or(std::string{"0"}).c_str(), nullptr, 16);
  r.last_sequence = static_cast<uint64_t>(t["last_sequence"].value_or(int64_t{0}));
  r.seconds = t["seconds"].value_or(0.0);
  r.messages = static_cast<uint64_t>(t["messages"].value_or(int64_t{0}));
  r.all_instruments = t["all_instruments"].value_or(true);
  if (auto c = t["counters"].as_table())
    for (const auto& [k, v] : *c) r.counters.emplace_back(std::string(k.str()), static_cast<uint64_t>(v.value_or(int64_t{0})));
  if (auto l = t["latency"].as_table()) {
    if (auto b = (*l)["buckets"].as_array())
      for (const auto& e : *b)
        if (auto pair = e.as_array(); pair && pair->size() == 2)
          r.latency.add_bucket(static_cast<size_t>((*pair)[0].value_or(int64_t{0})),
                               static_cast<uint64_t>((*pair)[1].value_or(int64_t{0})));
    r.latency.set_extremes(static_cast<uint64_t>((*l)["min"].value_or(int64_t{0})),
                           static_cast<uint64_t>((*l)["max"].value_or(int64_t{0})),
                           static_cast<uint64_t>((*l)["sum"].value_or(int64_t{0})));
  }
  if (auto bk = t["books"].as_table())
    for (const auto& [k, v] : *bk) {
      auto a = v.as_array();
      if (!a || a->size() != 2) fail("result file {}: books.\"{}\" must be [sequence, checksum]", path, k.str());
      BookDigest d{};
      d.instrument = static_cast<uint32_t>(std::stoul(std::string(k.str())));
      d.instrument_seq = static_cast<uint32_t>((*a)[0].value_or(int64_t{0}));
      d.checksum = std::stoull((*a)[1].value_or(std::string{"0"}), nullptr, 16);
      r.books.push_back(d);
    }
  std::sort(r.books.begin(), r.books.end(), [](auto& a, auto& b) { return a.instrument < b.instrument; });
  return r;
}

namespace {

BookVerdict compare_states(const RunResult& pub, const RunResult& sub) {
  BookVerdict v;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> both;  // instrument: publisher's, subscriber's checksum
  auto empty = [](uint32_t i) { return book::BookSet::status_hash(i, wire::TradingStatus::kPreOpen); };
  for (const auto& d : sub.books) both[d.instrument] = {empty(d.instrument), d.checksum};
  for (const auto& d : pub.books) {
    auto it = both.find(d.instrument);
    if (it != both.end()) it->second.first = d.checksum;
    else if (sub.all_instruments) both[d.instrument] = {d.checksum, empty(d.instrument)};
  }
  for (const auto& [id, c] : both) {
    if (c.first != c.second) {
      v.detail = fmt::format("instrument {}: book checksum differs ({:016x} at the subscriber, {:016x} at the publisher)",
                             id, c.second, c.first);
      return v;
    }
    ++v.compared;
  }
  v.identical = true;
  return v;
}

}  // namespace

BookVerdict compare_books(const RunResult& pub, const RunResult& sub, BookMatch match) {
  if (match == BookMatch::kState) return compare_states(pub, sub);
  BookVerdict v;
  if (match == BookMatch::kSameSession && pub.session != sub.session) {
    v.detail = fmt::format("subscriber ended in session {:016x}, publisher in {:016x} (a replay publishes in a session of its "
                           "own: verify --content; a conflating relay too: verify --state)",
                           sub.session, pub.session);
    return v;
  }
  std::map<uint32_t, const BookDigest*> p;
  for (const auto& d : pub.books) p[d.instrument] = &d;
  std::map<uint32_t, const BookDigest*> s;
  for (const auto& d : sub.books) s[d.instrument] = &d;
  // A subscriber reports every instrument it follows that has traffic; the
  // publisher every instrument with traffic. Compare each the subscriber
  // follows; a followed instrument missing on either side is a difference.
  for (const auto& [id, d] : s) {
    auto it = p.find(id);
    if (it == p.end()) {
      if (d->instrument_seq == 0) continue;
      v.detail = fmt::format("instrument {} has state at the subscriber but none at the publisher", id);
      return v;
    }
    if (it->second->instrument_seq != d->instrument_seq) {
      v.detail = fmt::format("instrument {}: sequence {} vs publisher {}", id, d->instrument_seq, it->second->instrument_seq);
      return v;
    }
    if (it->second->checksum != d->checksum) {
      v.detail = fmt::format("instrument {}: book checksum differs at sequence {}", id, d->instrument_seq);
      return v;
    }
    ++v.compared;
  }
  if (sub.all_instruments)
    for (const auto& [id, d] : p)
      if (!s.count(id)) {
        v.detail = fmt::format("instrument {} (sequence {}) missing at the subscriber", id, d->instrument_seq);
        return v;
      }
  v.identical = true;
  return v;
}

std::string rate_shortfall(const RunResult& pub, double asked, std::string_view pacing) {
  const double got = static_cast<double>(pub.messages) / std::max(pub.seconds, 1e-9);
  if (asked <= 0 || got >= 0.95 * asked) return {};
  const uint64_t paced = pub.counter("pub.messages_back_pressured");
  const uint64_t pushed = pub.counter("pub.send_back_pressured");
  const uint64_t rate = pub.counter("pub.pacing_rate");
  std::string why = fmt::format("published {:.0f} msg/s of the {:.0f} asked ({:.0f} %): ", got, asked, 100 * got / asked);
  if (pacing != "none" && paced > 0)
    return why + fmt::format("publisher.pacing = {} held it down (the pacer said wait {} times; its rate is now "
                             "{} msg/s{})",
                             pacing, paced, rate,
                             pacing == "slowest" ? ", what the slowest subscriber reported it can take" : "");
  if (pushed > 0)
    return why + fmt::format("the medium pushed back {} times (a full ring or socket buffer: subscribers or the "
                             "network slower than the feed)",
                             pushed);
  return why + "the publishing thread itself could not keep up (a busy or shared core, a debug or sanitizer build, or "
               "more than this host can do: see mdcast bench)";
}

FeedVerdict verify_feed(const RunResult& pub, const RunResult& r, BookMatch match) {
  const BookVerdict v = compare_books(pub, r, match);
  const bool whole = v.identical && r.outcome == "ok";
  const std::string why = !v.identical ? v.detail
                          : whole      ? fmt::format("{} instruments compared", v.compared)
                                       : fmt::format("books identical ({} instruments compared), but it ended '{}', "
                                                     "not at the end of the session",
                                                     v.compared, r.outcome);
  return {whole, fmt::format("{} ({}; {} messages, {} gaps, {} recovered, {} snapshots)",
                             whole ? "identical" : v.identical ? "INCOMPLETE" : "DIFFERENT", why, r.messages,
                             r.counter("sub.gaps"), r.counter("sub.datagrams_recovered"),
                             r.counter("sub.snapshots_applied"))};
}

}  // namespace mdcast::runtime
