// Every label a counters file of `mdcast publish|subscribe` can hold has help
// text and a type in the catalogue, and no label or metric name means two
// things at once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <map>
#include <set>

#include "mdcast/core/clock.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/counters.hpp"
#include "mdcast/media/fault/fault.hpp"
#include "mdcast/media/mem/mem_medium.hpp"
#include "mdcast/media/shm/shm_medium.hpp"
#include "mdcast/media/udp/udp_medium.hpp"
#include "mdcast/settings/media.hpp"
#include "mdcast/stats/export.hpp"
#include "stat_catalogue.hpp"

namespace mdcast::stats {
namespace {

using Labels = std::vector<std::string>;

void add(Labels& out, std::string_view prefix, std::span<const CounterInfo> info) {
  for (const auto& c : info) out.push_back(fmt::format("{}.{}", prefix, c.name));
}
void add(Labels& out, const std::vector<media::CounterGroup>& groups) {
  for (const auto& g : groups) add(out, g.prefix, g.info);
}

// The sections runners.cpp writes, around a medium's own groups.
Labels publisher_labels(const std::vector<media::CounterGroup>& groups) {
  Labels l;
  add(l, kPublisherPrefix, feed::PublisherCounters::kInfo);
  add(l, kControlPrefix, feed::ControlCounters::kInfo);
  add(l, "app", app::AppPubCounters::kInfo);
  add(l, groups);
  return l;
}
Labels subscriber_labels(const std::vector<media::CounterGroup>& groups) {
  Labels l;
  add(l, kSubscriberPrefix, feed::SubscriberCounters::kInfo);
  add(l, "app", app::AppSubCounters::kInfo);
  add(l, groups);
  media::fault::FaultCounters fault;  // every subscriber runs through the fault injector
  add(l, {media::counter_group("fault", fault)});
  return l;
}

void expect_known(const Catalogue& cat, std::string_view role, std::string_view medium, const Labels& labels) {
  ASSERT_FALSE(labels.empty());
  std::set<std::string> names;
  for (const auto& label : labels) {
    const auto m = cat.find(role, medium, label);
    ASSERT_TRUE(m.has_value()) << role << " over " << medium << ": " << label << " is not in the catalogue";
    EXPECT_FALSE(m->help.empty()) << label;
    // Two labels of one file never become one Prometheus series (rails of
    // one name are one family, told apart by their rail label).
    EXPECT_TRUE(names.insert(prometheus_name(label, *m) + "/" + prometheus_rail(label)).second)
        << label << " shares its metric name";
  }
}

TEST(Catalogue, KnowsEveryLabelOfAShmPublisherAndSubscriber) {
  media::shm::Options o;
  o.name = fmt::format("ut-cat-{}", ::getpid());
  o.dir = "/dev/shm";
  o.slots = 64;
  o.huge_pages = false;
  o.wait_ns = kNsPerSec;
  media::shm::PublisherMedium pub(o, 7);
  media::shm::SubscriberMedium sub(o);
  const auto cat = app::stat_catalogue();
  expect_known(cat, "publisher", "shm", publisher_labels(pub.counter_groups()));
  expect_known(cat, "subscriber", "shm", subscriber_labels(sub.counter_groups()));
}

TEST(Catalogue, KnowsEveryLabelOfAMemPublisherAndSubscriber) {
  media::mem::PublisherMedium pub;
  media::mem::SubscriberMedium sub(pub);
  const auto cat = app::stat_catalogue();
  expect_known(cat, "publisher", "mem", publisher_labels(pub.counter_groups()));
  expect_known(cat, "subscriber", "mem", subscriber_labels(sub.counter_groups()));
}

TEST(Catalogue, KnowsEveryLabelOfAUdpPublisherAndSubscriber) {
  media::udp::Options o;
  const int pid = static_cast<int>(::getpid());
  o.rail_a = {fmt::format("239.77.200.{}:{}", 1 + pid % 250, 20000 + pid % 20000), "lo"};
  o.control_port = 0;
  o.log = [](std::string_view) {};
  std::unique_ptr<media::udp::PublisherMedium> pub;
  std::unique_ptr<media::udp::SubscriberMedium> sub;
  try {
    pub = std::make_unique<media::udp::PublisherMedium>(o, 7);
    sub = std::make_unique<media::udp::SubscriberMedium>(o);
  } catch (const Error& e) {
    GTEST_SKIP() << "no UDP multicast on lo here: " << e.what();
  }
  const auto cat = app::stat_catalogue();
  expect_known(cat, "publisher", "udp", publisher_labels(pub->counter_groups()));
  expect_known(cat, "subscriber", "udp", subscriber_labels(sub->counter_groups()));
}

TEST(Catalogue, EveryGaugeIsACounterOfItsSection) {
  const auto cat = app::stat_catalogue();
  for (const auto& s : cat.sections())
    for (const auto& g : s.gauges) {
      bool found = false;
      for (const auto& c : s.counters) found = found || c.name == g;
      EXPECT_TRUE(found) << s.source << ": gauge " << g << " is none of its counters (renamed?)";
    }
}

TEST(Catalogue, NoLabelMeansTwoThingsForOneRoleAndMedium) {
  const auto cat = app::stat_catalogue();
  const auto secs = cat.sections();
  auto overlap = [](std::string_view a, std::string_view b) { return a.empty() || b.empty() || a == b; };
  for (size_t i = 0; i < secs.size(); ++i)
    for (size_t j = i + 1; j < secs.size(); ++j) {
      const auto &a = secs[i], &b = secs[j];
      if (a.prefix != b.prefix || !overlap(a.role, b.role) || !overlap(a.medium, b.medium)) continue;
      for (const auto& x : a.counters)
        for (const auto& y : b.counters)
          EXPECT_NE(x.name, y.name) << a.prefix << "." << x.name << " is in both " << a.source << " and " << b.source;
    }
}

TEST(Catalogue, OneMetricNameHasOneType) {
  std::map<std::string, MetricType> types;
  const auto cat = app::stat_catalogue();
  for (const auto& s : cat.sections())
    for (const auto& c : s.counters) {
      const std::string label = fmt::format("{}.{}", s.prefix, c.name);
      const auto m = cat.find(s.role.empty() ? "publisher" : s.role, s.medium, label);
      if (!m) continue;  // a wildcard section looked up under another role
      const auto [it, added] = types.try_emplace(prometheus_name(label, *m), m->type);
      EXPECT_TRUE(added || it->second == m->type) << label << " is a counter in one section, a gauge in another";
    }
  EXPECT_GT(types.size(), 100u);
}

TEST(Catalogue, LooksUpByRoleAndMedium) {
  const auto cat = settings::counter_catalogue();
  // "control" is the stream server's under shm, the mem medium's under mem.
  const auto shm = cat.find("publisher", "shm", "control.frames_in");
  const auto mem = cat.find("publisher", "mem", "control.frames_in");
  ASSERT_TRUE(shm && mem);
  EXPECT_NE(shm->help, mem->help);
  EXPECT_EQ(shm->section->source, "media::ControlServerStats");
  // "udp.announcements": sent by a publisher, heard by a subscriber.
  const auto sent = cat.find("publisher", "udp", "udp.announcements");
  const auto heard = cat.find("subscriber", "udp", "udp.announcements");
  ASSERT_TRUE(sent && heard);
  EXPECT_NE(sent->help, heard->help);
  EXPECT_FALSE(cat.find("publisher", "shm", "sub.gaps").has_value());  // a subscriber's section
  EXPECT_FALSE(cat.find("subscriber", "shm", "sub.no_such_counter").has_value());
  EXPECT_FALSE(cat.find("subscriber", "shm", "gaps").has_value());
  EXPECT_FALSE(cat.find("subscriber", "shm", "").has_value());
  const auto gaps = cat.find("subscriber", "verbs", "sub.gaps");
  ASSERT_TRUE(gaps);
  EXPECT_EQ(gaps->type, MetricType::kCounter);
  EXPECT_EQ(gaps->help, "gaps detected");
  EXPECT_EQ(cat.find("subscriber", "shm", "sub.next_sequence")->type, MetricType::kGauge);
  // Verbs sections are known even where the verbs medium is not built.
  EXPECT_TRUE(cat.find("subscriber", "verbs", "rx.posted_low"));
  EXPECT_EQ(cat.find("subscriber", "verbs", "rx.posted_low")->type, MetricType::kGauge);
}

TEST(Catalogue, ARoleAliasFindsTheSectionsOfTheRoleItExtends) {
  auto cat = settings::counter_catalogue();
  static constexpr CounterInfo kOwn[] = {{"frames", "frames audited"}};
  EXPECT_FALSE(cat.find("auditor", "shm", "sub.gaps").has_value());
  cat.alias_role("auditor", "subscriber");
  cat.add({"aud", "auditor", "", "test::Own", kOwn, {}});
  ASSERT_TRUE(cat.find("auditor", "shm", "sub.gaps"));  // a subscriber's, through the alias
  EXPECT_EQ(cat.find("auditor", "shm", "sub.gaps")->help, "gaps detected");
  ASSERT_TRUE(cat.find("auditor", "shm", "shm.lapped"));  // its medium's subscriber side
  EXPECT_EQ(cat.find("auditor", "shm", "aud.frames")->help, "frames audited");
  EXPECT_FALSE(cat.find("subscriber", "shm", "aud.frames").has_value());  // not the other way
  EXPECT_FALSE(cat.find("auditor", "shm", "pub.datagrams_sent").has_value());
}

// The library's runtimes' own sections are the library catalogue's: any
// application's exporter explains a recorder's, a relay's and a run's counters.
TEST(Catalogue, TheRuntimesSectionsAreTheLibrarys) {
  const auto cat = settings::counter_catalogue();
  ASSERT_TRUE(cat.find("recorder", "shm", "rec.frames"));
  ASSERT_TRUE(cat.find("recorder", "shm", "sub.gaps"));
  ASSERT_TRUE(cat.find("relay", "udp", "relay.messages"));
  ASSERT_TRUE(cat.find("relay", "udp", "sub.datagrams_recovered"));
  ASSERT_TRUE(cat.find("relay", "udp", "pub.datagrams_sent"));
  ASSERT_TRUE(cat.find("publisher", "shm", "run.elapsed_ms"));
  EXPECT_EQ(cat.find("publisher", "shm", "run.elapsed_ms")->type, MetricType::kGauge);
  EXPECT_EQ(cat.find("publisher", "shm", "run.progress")->type, MetricType::kCounter);
  EXPECT_FALSE(cat.find("subscriber", "shm", "run.elapsed_ms").has_value());
}

TEST(Catalogue, UnitsComeFromTheName) {
  EXPECT_EQ(unit_of("latency_p99_ns"), Unit::kNanoseconds);
  EXPECT_EQ(unit_of("control_time_us"), Unit::kMicroseconds);
  EXPECT_EQ(unit_of("elapsed_ms"), Unit::kMilliseconds);
  EXPECT_EQ(unit_of("snapshot_bytes"), Unit::kBytes);
  EXPECT_EQ(unit_of("bytes"), Unit::kBytes);
  EXPECT_EQ(unit_of("bytes_sent"), Unit::kNone);
  EXPECT_EQ(unit_of("gaps"), Unit::kNone);
  EXPECT_EQ(unit_of("ns"), Unit::kNone);
}

}  // namespace
}  // namespace mdcast::stats
