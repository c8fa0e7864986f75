// The text view of counters files: a role's main counters, rates between
// two renders, control bytes from a hostile file made inert, and the
// catalogue's Markdown reference (one table row per counter).
#include <gtest/gtest.h>

#include <string>

#include "mdcast/stats/text.hpp"
#include "stat_catalogue.hpp"

namespace mdcast::stats {
namespace {

CountersSnapshot snap(std::string role, std::vector<std::pair<std::string, uint64_t>> values) {
  CountersSnapshot s;
  s.pid = 4242;
  s.role = std::move(role);
  s.name = "feed\x1b[2J";  // anyone can write a counters file
  s.medium = "shm";
  s.state = ProcessState::kRunning;
  s.alive = true;
  s.values = std::move(values);
  return s;
}

TEST(TextView, MainCountersWithRatesBetweenRenders) {
  TextView view({});
  const std::string first = view.render({snap("subscriber", {{"sub.messages_delivered", 1000}, {"sub.rare", 1}})}, 1'000'000'000);
  EXPECT_NE(first.find("pid 4242"), std::string::npos) << first;
  EXPECT_NE(first.find("feed?[2J"), std::string::npos) << "control bytes reach the terminal: " << first;
  EXPECT_NE(first.find("sub.messages_delivered"), std::string::npos);
  EXPECT_EQ(first.find("sub.rare"), std::string::npos) << "not a main counter: shown only with all";
  EXPECT_EQ(first.find("/s)"), std::string::npos) << "no rate without an earlier render";
  const std::string second = view.render({snap("subscriber", {{"sub.messages_delivered", 3000}})}, 3'000'000'000);
  EXPECT_NE(second.find("(1000/s)"), std::string::npos) << second;

  TextView all({.all = true});
  EXPECT_NE(all.render({snap("subscriber", {{"sub.rare", 1}})}, 1).find("sub.rare"), std::string::npos);
  EXPECT_NE(TextView({}).render({}, 1).find("no mdcast processes"), std::string::npos);
}

TEST(TextView, StaleProcessSaysHowToClean) {
  auto s = snap("publisher", {{"pub.last_sequence", 7}});
  s.alive = false;
  const std::string t = TextView({}).render({s}, 1);
  EXPECT_NE(t.find("STALE"), std::string::npos) << t;
  EXPECT_NE(t.find("pub.last_sequence"), std::string::npos) << t;
}

TEST(CatalogueMarkdown, EveryCounterARow) {
  const auto cat = app::stat_catalogue();
  const std::string md = catalogue_markdown(cat);
  EXPECT_NE(md.find("| `sub.gaps` | `mdcast_sub_gaps_total` | counter |"), std::string::npos) << md.substr(0, 800);
  size_t rows = 0;
  for (size_t p = md.find("\n| `"); p != std::string::npos; p = md.find("\n| `", p + 1)) ++rows;
  size_t counters = 0;
  for (const auto& s : cat.sections()) counters += s.counters.size();
  for (const auto& s : cat.histogram_sections()) counters += s.counters.size();
  // Shadowed labels are left out, so at most one row per catalogued counter, and nearly all of them.
  EXPECT_LE(rows, counters);
  EXPECT_GT(rows, counters * 9 / 10);
}

TEST(CleanText, EachItemThenTheTotalsInert) {
  CleanReport r;
  r.removed.push_back({"/dev/shm/mdcast-12.stat", "counters file of subscriber pid 12 (feed\x1b[1m)", 2048, ""});
  r.kept.push_back({"/dev/shm/x.ring", "shm ring", 3 << 20, "not ours"});
  r.counters_files = 1;
  r.bytes = 2048;
  const std::string t = clean_text(r, true);
  EXPECT_NE(t.find("would remove /dev/shm/mdcast-12.stat (2.0 KiB): counters file of subscriber pid 12 (feed?[1m)"),
            std::string::npos) << t;
  EXPECT_NE(t.find("kept /dev/shm/x.ring (3.0 MiB): shm ring: not ours"), std::string::npos) << t;
  EXPECT_NE(t.find("would remove 1 stale counters file, 0 shm rings and 0 control sockets: 2.0 KiB"), std::string::npos)
      << t;
  EXPECT_EQ(clean_text(r, false).rfind("removed ", 0), 0u);
}

TEST(Format, LatencyAndGroupedCounts) {
  EXPECT_EQ(format_latency(850), "850 ns");
  EXPECT_EQ(format_latency(3'100), "3.1 us");
  EXPECT_EQ(format_latency(3'112'959), "3.11 ms");
  EXPECT_EQ(format_latency(1'200'000'000), "1.20 s");
  EXPECT_EQ(grouped(1234567), "1,234,567");
  EXPECT_EQ(grouped(999), "999");
}

}  // namespace
}  // namespace mdcast::stats
