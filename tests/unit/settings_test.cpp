// The command line's settings: every key's default reads back as text that
// its own parser turns into the same value (so --help and --help-config show
// defaults a user can paste), and the formatters round-trip.
#include <gtest/gtest.h>

#include "mdcast/settings/settings.hpp"
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

TEST(Settings, InfoOfAnUnknownKeyIsAnError) {
  EXPECT_THROW((void)setting_info("publisher.nope"), Error);
  EXPECT_EQ(setting_info("publisher.rate").type, "RATE");
  EXPECT_EQ(setting_info("publisher.rate").default_text, "100k");
}

}  // namespace
}  // namespace mdcast::settings
