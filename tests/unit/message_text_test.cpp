// A delivered message as text: prices exact in decimal once the instrument's
// exponent is known, raw before, every kind in one shape.
#include <gtest/gtest.h>

#include <string>

#include "mdcast/feed/message_text.hpp"

namespace mdcast::feed {
namespace {

std::string scaled(int64_t v, int exp) { return std::string(MessageText::scaled(v, exp).view()); }

TEST(MessageText, ScalesExactlyWithoutFloatingPoint) {
  EXPECT_EQ(scaled(1234500, -4), "123.4500");
  EXPECT_EQ(scaled(-1234500, -4), "-123.4500");
  EXPECT_EQ(scaled(5, -4), "0.0005");
  EXPECT_EQ(scaled(12, 2), "1200");
  EXPECT_EQ(scaled(0, -2), "0.00");
  // The extremes fit the fixed buffer.
  EXPECT_EQ(scaled(INT64_MIN, -18), "-9.223372036854775808");
  EXPECT_EQ(scaled(INT64_MAX, 0), "9223372036854775807");
}

TEST(MessageText, PricesRawUntilTheDefinitionThenScaled) {
  MessageText text(8);
  std::string out;
  text.append(out, wire::Message::make_add(3, 7, 1234500, 10, wire::Side::kBuy), 41, false);
  EXPECT_EQ(out, "seq=41 inst=3#0 add id=7 buy 10@1234500 raw\n");
  out.clear();
  text.append(out, wire::Message::make_definition(3, "ABC", 100, -4), 42, false);
  EXPECT_EQ(out, "seq=42 inst=3#0 define symbol=ABC lot=100 price_exponent=-4\n");
  out.clear();
  text.append(out, wire::Message::make_execute(3, 7, 1234500, 2, 99), 43, true);
  EXPECT_EQ(out, "seq=43 inst=3#0 execute id=7 2@123.4500 trade=99 (recovered)\n");
  out.clear();
  // An instrument beyond max_instruments is never scaled (nothing remembered for it).
  text.append(out, wire::Message::make_definition(9, "XYZ", 1, -2), 44, false);
  text.append(out, wire::Message::make_modify(9, 1, 150, 3), 45, false);
  EXPECT_NE(out.find("modify id=1 3@150 raw"), std::string::npos) << out;
  out.clear();
  text.append(out, wire::Message::make_status(3, wire::TradingStatus::kHalted), 46, false);
  text.append(out, wire::Message::make_delete(3, 7), 47, false);
  EXPECT_EQ(out, "seq=46 inst=3#0 status halted\nseq=47 inst=3#0 delete id=7\n");
}

}  // namespace
}  // namespace mdcast::feed
