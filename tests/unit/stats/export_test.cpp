// The exporters: Prometheus names, units and escaping; one HELP and TYPE per
// family even when roles disagree on the help; JSON that stays valid
// whatever a (possibly hostile) counters file holds.
#include <gtest/gtest.h>

#include <string>

#include "mdcast/stats/export.hpp"
#include "stat_catalogue.hpp"

namespace mdcast::stats {
namespace {

CountersSnapshot snap(uint64_t pid, std::string role, std::string medium,
                      std::vector<std::pair<std::string, uint64_t>> values) {
  CountersSnapshot s;
  s.path = "/dev/shm/mdcast-" + std::to_string(pid) + ".stat";
  s.pid = pid;
  s.role = std::move(role);
  s.name = "feed1";
  s.medium = std::move(medium);
  s.state = ProcessState::kRunning;
  s.alive = true;
  s.values = std::move(values);
  return s;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

TEST(Prometheus, NamesCarryBaseUnitsAndTotal) {
  const auto cat = app::stat_catalogue();
  auto name = [&](std::string_view role, std::string_view label) {
    return prometheus_name(label, *cat.find(role, "shm", label));
  };
  EXPECT_EQ(name("subscriber", "sub.gaps"), "mdcast_sub_gaps_total");
  EXPECT_EQ(name("subscriber", "sub.next_sequence"), "mdcast_sub_next_sequence");
  EXPECT_EQ(name("subscriber", "app.latency_max_ns"), "mdcast_app_latency_max_seconds");
  EXPECT_EQ(prometheus_name("app.latency_ns", *cat.find_histogram("subscriber", "shm", "app.latency_ns")),
            "mdcast_app_latency_seconds");
  EXPECT_EQ(name("publisher", "run.control_time_us"), "mdcast_run_control_time_seconds_total");
  EXPECT_EQ(name("publisher", "run.elapsed_ms"), "mdcast_run_elapsed_seconds");
  EXPECT_EQ(name("publisher", "ctl.snapshot_cache_bytes"), "mdcast_ctl_snapshot_cache_bytes");
  EXPECT_EQ(name("publisher", "ctl.snapshot_bytes"), "mdcast_ctl_snapshot_bytes_total");
  EXPECT_EQ(name("publisher", "ctl.longest_poll_ns"), "mdcast_ctl_longest_poll_seconds");
  EXPECT_DOUBLE_EQ(prometheus_value(1500, Unit::kNanoseconds), 1.5e-6);
  EXPECT_DOUBLE_EQ(prometheus_value(2500, Unit::kMicroseconds), 2.5e-3);
  EXPECT_DOUBLE_EQ(prometheus_value(1500, Unit::kMilliseconds), 1.5);
  EXPECT_DOUBLE_EQ(prometheus_value(7, Unit::kBytes), 7.0);
  MetricInfo odd;
  EXPECT_EQ(prometheus_name("x-y.a b", odd), "mdcast_x_y_a_b_total");
  EXPECT_EQ(prometheus_name("nodot", odd), "");
}

TEST(Prometheus, OneHelpAndTypePerFamilyWithASamplePerProcess) {
  const auto cat = app::stat_catalogue();
  const std::vector<CountersSnapshot> snaps = {
      snap(10, "publisher", "udp", {{"udp.announcements", 3}, {"pub.last_sequence", 99}}),
      snap(11, "subscriber", "udp", {{"udp.announcements", 2}, {"sub.gaps", 1}, {"app.latency_max_ns", 1500}}),
      snap(12, "subscriber", "udp", {{"udp.announcements", 5}, {"sub.gaps", 0}})};
  ExportStats st;
  const std::string out = to_prometheus(snaps, cat, &st);
  EXPECT_EQ(count(out, "# HELP mdcast_udp_announcements_total "), 1u) << out;
  EXPECT_EQ(count(out, "# TYPE mdcast_udp_announcements_total counter\n"), 1u);
  // Sent by a publisher, heard by a subscriber: the one HELP line says both.
  EXPECT_NE(out.find("# HELP mdcast_udp_announcements_total publisher: control-address announcements sent; "
                     "subscriber: control-address announcements heard\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(count(out, "\nmdcast_udp_announcements_total{"), 3u);
  EXPECT_NE(out.find("# TYPE mdcast_pub_last_sequence gauge\n"
                     "mdcast_pub_last_sequence{pid=\"10\",role=\"publisher\",name=\"feed1\",medium=\"udp\"} 99\n"),
            std::string::npos);
  EXPECT_NE(out.find("mdcast_app_latency_max_seconds{pid=\"11\",role=\"subscriber\",name=\"feed1\",medium=\"udp\"} "
                     "1.5e-06\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ns)\n# TYPE mdcast_app_latency_max_seconds gauge"), std::string::npos);  // the help says so
  EXPECT_EQ(count(out, "mdcast_process_alive{"), 3u);
  // The state is a sample of its own, never a label: a series keeps its
  // identity when the process goes from starting to running to finished.
  EXPECT_EQ(out.find("state="), std::string::npos) << out;
  EXPECT_NE(out.find("# TYPE mdcast_process_state gauge\n"
                     "mdcast_process_state{pid=\"10\",role=\"publisher\",name=\"feed1\",medium=\"udp\"} 1\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(st.unknown_labels, 0u);
  EXPECT_EQ(st.duplicate_samples, 0u);
  // The samples of a family are together: sub.gaps of 11 and 12 in a row.
  const auto a = out.find("mdcast_sub_gaps_total{pid=\"11\"");
  const auto b = out.find("mdcast_sub_gaps_total{pid=\"12\"");
  ASSERT_NE(a, std::string::npos);
  EXPECT_EQ(out.find('\n', a) + 1, b);
}

// A/B rails are a label of one family: by (rail) and sum() work, and no
// name holds a lone "b" (promtool's lint reads it as bytes).
TEST(Prometheus, ARailIsALabelNotAPartOfTheName) {
  const auto cat = app::stat_catalogue();
  EXPECT_EQ(prometheus_rail("sub.rail_b_first"), "b");
  EXPECT_EQ(prometheus_rail("udp.rail_a_cut"), "a");
  EXPECT_EQ(prometheus_rail("sub.gaps"), "");
  EXPECT_EQ(prometheus_rail("x.trail_b"), "");
  EXPECT_EQ(prometheus_rail("x.rail_bc"), "");
  EXPECT_EQ(prometheus_name("udp.rail_a_cut", *cat.find("subscriber", "udp", "udp.rail_a_cut")), "mdcast_udp_rail_cut_total");
  ExportStats st;
  const std::string out = to_prometheus(
      {snap(5, "subscriber", "udp", {{"sub.rail_a_first", 7}, {"sub.rail_b_first", 3}, {"udp.rail_b_datagrams", 4}})}, cat,
      &st);
  EXPECT_EQ(st.duplicate_samples, 0u);
  EXPECT_NE(out.find("# HELP mdcast_sub_rail_first_total datagrams whose first copy came on the rail of label rail\n"
                     "# TYPE mdcast_sub_rail_first_total counter\n"
                     "mdcast_sub_rail_first_total{pid=\"5\",role=\"subscriber\",name=\"feed1\",medium=\"udp\",rail=\"a\"} 7\n"
                     "mdcast_sub_rail_first_total{pid=\"5\",role=\"subscriber\",name=\"feed1\",medium=\"udp\",rail=\"b\"} 3\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("mdcast_udp_rail_datagrams_total{pid=\"5\",role=\"subscriber\",name=\"feed1\",medium=\"udp\",rail=\"b\"} 4\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("rail_b"), std::string::npos) << out;
}

TEST(Prometheus, AHostileFileIsEscapedCountedAndNeverBreaksTheFormat) {
  const auto cat = app::stat_catalogue();
  auto s = snap(20, "subscriber", "shm", {{"sub.gaps", 1}, {"sub.gaps", 2}, {"zzz.made_up", 3}, {"nodot", 4}});
  s.name = "a\"b\\c\nd\x01\xff";
  s.path = "/dev/shm/evil\nname.stat";
  ExportStats st;
  const std::string out = to_prometheus({s}, cat, &st);
  EXPECT_NE(out.find("name=\"a\\\"b\\\\c\\nd??\""), std::string::npos) << out;
  EXPECT_EQ(count(out, "mdcast_sub_gaps_total{"), 1u);  // the first of two
  EXPECT_NE(out.find("} 1\n"), std::string::npos);
  EXPECT_EQ(st.duplicate_samples, 1u);
  EXPECT_EQ(st.unknown_labels, 2u);
  EXPECT_EQ(out.find("made_up"), std::string::npos);
  EXPECT_NE(out.find("# mdcast: 2 counters of pid 20 (/dev/shm/evil\\nname.stat) not in this mdcast's catalogue"),
            std::string::npos)
      << out;
  for (size_t p = 0, q; (q = out.find('\n', p)) != std::string::npos; p = q + 1) {
    const std::string line = out.substr(p, q - p);
    EXPECT_FALSE(line.empty());
    for (const unsigned char c : line) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << int(c) << " in " << line;
  }
}

TEST(Prometheus, NoProcessesIsStillAValidDocument) {
  const std::string out = to_prometheus({}, app::stat_catalogue());
  EXPECT_EQ(out, "# HELP mdcast_process_alive 1 while the process that wrote this counters file lives; 0: the file "
                 "is stale (`mdcast stat --clean` removes it)\n# TYPE mdcast_process_alive gauge\n"
                 "# HELP mdcast_process_state what the process is doing: 0 starting, 1 running, 2 finished, 3 failed\n"
                 "# TYPE mdcast_process_state gauge\n");
}

TEST(Json, OneObjectWithProcessesAndTheirCounters) {
  auto s = snap(7, "publisher", "shm", {{"pub.last_sequence", 5}, {"pub.last_sequence", 6}, {"zzz.x", 1}});
  s.alive = false;
  s.state = ProcessState::kFailed;
  EXPECT_EQ(to_json({s}, 1234),
            "{\"time_unix_ms\":1234,\"processes\":[{\"pid\":7,\"role\":\"publisher\",\"name\":\"feed1\","
            "\"medium\":\"shm\",\"state\":\"failed\",\"alive\":false,\"counters\":{\"pub.last_sequence\":5,"
            "\"zzz.x\":1},\"histograms\":{}}]}");
  EXPECT_EQ(to_json({}, 1), "{\"time_unix_ms\":1,\"processes\":[]}");
}

TEST(Json, StringsAreEscapedWhateverTheyHold) {
  EXPECT_EQ(json_string("plain"), "\"plain\"");
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string("\n\x01\x7f\xc3\xa9"), "\"\\u000a\\u0001\\u007f\\u00c3\\u00a9\"");
  EXPECT_EQ(prometheus_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(prometheus_help("x\\y\nz"), "x\\\\y\\nz");
}

}  // namespace
}  // namespace mdcast::stats
