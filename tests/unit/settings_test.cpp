// The command line's settings: every key's default reads back as text that
// its own parser turns into the same value (so --help and --help-config show
// defaults a user can paste), and the formatters round-trip.
#include <gtest/gtest.h>

#include "mdcast/settings/settings.hpp"
#include "mdcast/settings/suggest.hpp"
#include "mdcast/settings/values.hpp"

namespace mdcast::settings {
namespace {

TEST(Settings, EveryDefaultParsesBackToItself) {
  const Settings defaults;
  size_t checked = 0;
  for (const auto& [key, k] : setting_keys()) {
    SCOPED_TRACE(key);
    ASSERT_FALSE(k.type.empty());
    ASSERT_FALSE(k.help.empty());
    const std::string text = k.get(defaults);
    Settings s;
    if (text.empty()) {
      // "" is "not set" (a file, an address): a key may refuse it as a value.
      try {
        apply_setting(s, key, text, "test");
      } catch (const Error&) {
        continue;
      }
    } else {
      apply_setting(s, key, text, "test");
    }
    EXPECT_EQ(k.get(s), text);
    ++checked;
  }
  EXPECT_GT(checked, 80u);
}

TEST(Settings, FormattersRoundTrip) {
  for (uint64_t b : {0ull, 4096ull, 64ull << 20, 4ull << 30, 1000ull, 1536ull}) EXPECT_EQ(parse_size(format_size(b)), b) << b;
  for (double r : {1e5, 1e6, 1.5e6, 10e3, 250.0, 123456.0}) EXPECT_EQ(parse_rate(format_rate(r)), r) << r;
  for (uint64_t d : {0ull, 20'000ull, 100'000'000ull, 3'000'000'000ull, 1234ull}) EXPECT_EQ(parse_duration(format_duration(d)), d) << d;
  EXPECT_EQ(format_id_list({0, 1, 2, 3, 7, 9, 10}), "0-3,7,9-10");
  EXPECT_EQ(parse_id_list(format_id_list({0, 1, 2, 3, 7, 9, 10})), (std::vector<uint32_t>{0, 1, 2, 3, 7, 9, 10}));
  EXPECT_EQ(format_size(64ull << 20), "64MiB");
  EXPECT_EQ(format_rate(1e5), "100k");
}

// Whole numbers are read as integers: a value past the target type is
// refused, never rounded through a double and wrapped (2^64 -> 0).
TEST(Settings, WholeNumbersThatDoNotFitAreRefused) {
  Settings s;
  apply_setting(s, "publisher.session", "18446744073709551615", "test");
  EXPECT_EQ(s.pub.session, ~uint64_t{0});
  for (const char* v : {"18446744073709551616", "18446744073709551617", "99999999999999999999999", "-1", "1.5", "1e3"}) {
    SCOPED_TRACE(v);
    EXPECT_THROW(apply_setting(s, "publisher.session", v, "test"), UsageError);
  }
  EXPECT_EQ(s.pub.session, ~uint64_t{0});
  apply_setting(s, "feed.max_orders", "1k", "test");
  EXPECT_EQ(s.feed.max_orders, 1000u);
  apply_setting(s, "feed.max_orders", "1.5k", "test");
  EXPECT_EQ(s.feed.max_orders, 1500u);
  EXPECT_THROW(apply_setting(s, "feed.max_orders", "536870913", "test"), UsageError);
  EXPECT_THROW(apply_setting(s, "feed.max_orders", "18446744073709551k", "test"), UsageError);  // wraps when multiplied
  EXPECT_THROW(apply_setting(s, "feed.max_levels", "4294967297", "test"), UsageError);
  try {
    apply_setting(s, "publisher.session", "18446744073709551616", "--session");
    FAIL() << "2^64 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("[0, 18446744073709551615]"), std::string::npos) << e.what();
  }
}

TEST(Settings, CpuIdsThatDoNotFitAreRefused) {
  Settings s;
  for (const char* v : {"4294967297", "4294967296-4294967297", "0-4294967297", "99999999999", "-1", "1x", "1-"}) {
    SCOPED_TRACE(v);
    EXPECT_THROW(apply_setting(s, "publisher.cpus", v, "test"), UsageError);
    EXPECT_THROW(apply_setting(s, "subscriber.cpu", v, "test"), UsageError);
  }
  EXPECT_TRUE(s.pub.cpus.empty());
}

TEST(Settings, InfoOfAnUnknownKeyIsAnError) {
  EXPECT_THROW((void)setting_info("publisher.nope"), Error);
  EXPECT_EQ(setting_info("publisher.rate").type, "RATE");
  EXPECT_EQ(setting_info("publisher.rate").default_text, "100k");
}

TEST(Settings, PublishingThreadsFitTheChannelsAndTheCpus) {
  Settings s;
  EXPECT_EQ(publishing_threads(s), 1u);
  s.feed.channels = 4;
  s.pub.cpus = {2, 3};
  EXPECT_EQ(publishing_threads(s), 2u);  // one per CPU listed
  s.pub.threads = 3;
  EXPECT_THROW((void)publishing_threads(s), UsageError);  // 3 threads, 2 CPUs
  s.pub.cpus.clear();
  s.pub.threads = 5;
  EXPECT_THROW((void)publishing_threads(s), UsageError);  // a thread without a channel
}

TEST(Settings, ARecordingsFramesCarryTheMediumsGroup) {
  Settings s;
  s.feed.medium = MediumKind::kUdp;
  apply_setting(s, "udp.group", "239.1.2.3:9000", "test");
  record::FrameAddress a = recording_address(s);
  EXPECT_EQ(record::format_ipv4(a.group_ip), "239.1.2.3");
  EXPECT_EQ(a.group_port, 9000);
  s.feed.medium = MediumKind::kVerbs;  // verbs: its own group, from the publisher's address
  s.verbs.group = "239.9.9.9";
  s.verbs.control_ip = "10.0.0.7";
  a = recording_address(s);
  EXPECT_EQ(record::format_ipv4(a.group_ip), "239.9.9.9");
  EXPECT_EQ(record::format_ipv4(a.source_ip), "10.0.0.7");
  s.verbs.group = "not-an-address";
  EXPECT_THROW((void)recording_address(s), UsageError);
  s.feed.medium = MediumKind::kShm;  // a datagram larger than a frame holds is not the user's flag to fix
  s.shm.max_datagram = record::kMaxPayload + 1;
  try {
    (void)recording_address(s);
    ADD_FAILURE() << "an oversized shm.max_datagram was accepted";
  } catch (const UsageError&) {
    ADD_FAILURE() << "an oversized shm.max_datagram is not a usage error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shm.max_datagram"), std::string::npos) << e.what();
  }
}

// A mistyped name points at the one meant; a name that is nothing like any
// gets no guess (a wrong guess is worse than none).
TEST(Suggest, TheNearestNameOrNone) {
  EXPECT_EQ(edit_distance("rate", "rate"), 0u);
  EXPECT_EQ(edit_distance("raet", "rate"), 1u);  // a swapped pair is one typo
  EXPECT_EQ(edit_distance("rat", "rate"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  const std::vector<std::string> flags{"--rate", "--duration", "--instrument-count", "--cpu", "--channels", "--channel"};
  EXPECT_EQ(nearest("--rat", flags), "--rate");
  EXPECT_EQ(nearest("--raet", flags), "--rate");
  EXPECT_EQ(nearest("--duraton", flags), "--duration");
  EXPECT_EQ(nearest("--instrument", flags), "--instrument-count");  // a prefix of a longer name
  EXPECT_EQ(nearest("--cpus", flags), "--cpu");
  EXPECT_EQ(nearest("--channel", flags), "--channel");  // exact beats near
  EXPECT_EQ(nearest("--xyzzy", flags), "");
  EXPECT_EQ(nearest("--", flags), "");
  EXPECT_EQ(nearest("", flags), "");
}

TEST(Suggest, SettingsKeysWithinTheirSectionFirst) {
  EXPECT_EQ(nearest_setting("feed.nmae"), "feed.name");
  EXPECT_EQ(nearest_setting("publisher.rat"), "publisher.rate");
  EXPECT_EQ(nearest_setting("subscriber.rate"), "");  // nothing near in [subscriber]: no guess from elsewhere
  EXPECT_EQ(nearest_setting("feed.idle_backof_max"), "feed.idle_backoff_max");
  EXPECT_EQ(nearest_setting("publsher.rate"), "publisher.rate");  // the section mistyped
  EXPECT_EQ(nearest_setting("nosuch.x"), "");
}

TEST(Suggest, AnUnknownKeyIsRefusedWithTheNearestOne) {
  Settings s;
  try {
    apply_setting(s, "feed.nmae", "x", "--set feed.nmae");
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--set feed.nmae: unknown setting 'feed.nmae': did you mean feed.name?");
  }
}

}  // namespace
}  // namespace mdcast::settings
