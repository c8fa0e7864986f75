// What the UDP medium parses: groups, rails, announcements.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "mdcast/core/error.hpp"
#include "mdcast/media/udp/udp_announce.hpp"
#include "mdcast/media/udp/udp_options.hpp"
#include "mdcast/media/udp/udp_socket.hpp"
#include "mdcast/wire/signature.hpp"

using namespace mdcast;
using namespace mdcast::media::udp;

namespace {
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(UdpGroup, ParsesGroupAndPort) {
  const auto g = GroupAddress::parse("239.77.1.1:7470");
  EXPECT_EQ(g.port, 7470);
  EXPECT_EQ(g.text, "239.77.1.1:7470");
  EXPECT_NE(g.group_be, 0u);
}

TEST(UdpGroup, RefusesWhatIsNotAGroupWithAPort) {
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("0.0.0.0:7470"); }).find("neither a multicast group"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("255.255.255.255:7470"); }).find("neither a multicast group"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("239.1.1.1"); }).find("GROUP:PORT"), std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("239.1.1.1:0"); }).find("1-65535"), std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("239.1.1.1:70000"); }).find("1-65535"), std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("239.1.1.1:12ab"); }).find("1-65535"), std::string::npos);
  EXPECT_NE(error_of([] { (void)GroupAddress::parse("mcast:7470"); }).find("not an IPv4 address"), std::string::npos);
}

// A unicast address makes a rail (or an udp.also_to destination) a unicast leg.
TEST(UdpGroup, AUnicastAddressIsAUnicastLeg) {
  const auto u = GroupAddress::parse("10.77.0.2:7480");
  EXPECT_FALSE(u.multicast);
  EXPECT_EQ(u.port, 7480);
  EXPECT_TRUE(GroupAddress::parse("239.77.1.1:7470").multicast);
}

TEST(UdpGroup, ARailMayNameItsInterface) {
  const Rail r = parse_rail("239.77.2.1:7470@10.78.0.4");
  EXPECT_EQ(r.group, "239.77.2.1:7470");
  EXPECT_EQ(r.interface, "10.78.0.4");
  EXPECT_EQ(parse_rail("239.77.2.1:7470").interface, "");
  EXPECT_FALSE(error_of([] { (void)parse_rail("239.77.2.1@lo"); }).empty());
}

TEST(UdpInterface, FoundByNameOrAddressAndUnknownOnesAreListed) {
  const Interface lo = find_interface("lo");
  EXPECT_TRUE(lo.loopback);
  EXPECT_EQ(lo.address_text(), "127.0.0.1");
  EXPECT_EQ(lo.payload(0), 1472u) << "loopback's 64 KiB MTU is not the network's: 1500";
  EXPECT_EQ(lo.payload(9000), 8972u);
  EXPECT_EQ(find_interface("127.0.0.1").name, "lo");
  const std::string e = error_of([] { (void)find_interface("nosuch0"); });
  EXPECT_NE(e.find("no interface 'nosuch0'"), std::string::npos) << e;
  EXPECT_NE(e.find("lo (127.0.0.1)"), std::string::npos) << e;
}

TEST(UdpAnnounce, RoundTrips) {
  const auto d = encode_announcement({7, 0x1122334455667788ull, "tcp:10.0.0.1:7471"});
  ASSERT_TRUE(is_announcement(d));
  Announcement a;
  ASSERT_TRUE(decode_announcement(d, a));
  EXPECT_EQ(a.channel, 7);
  EXPECT_EQ(a.session, 0x1122334455667788ull);
  EXPECT_EQ(a.address, "tcp:10.0.0.1:7471");
}

TEST(UdpAnnounce, MalformedOnesAreRefused) {
  auto d = encode_announcement({1, 1, "tcp:10.0.0.1:7471"});
  Announcement a;
  auto bad = d;
  bad[2] = std::byte{9};  // version
  EXPECT_FALSE(decode_announcement(bad, a));
  bad = d;
  bad.pop_back();  // length says more than there is
  EXPECT_FALSE(decode_announcement(bad, a));
  bad = d;
  bad[6] = std::byte{1};  // reserved
  EXPECT_FALSE(decode_announcement(bad, a));
  bad = d;
  bad.back() = std::byte{'\n'};  // not address text
  EXPECT_FALSE(decode_announcement(bad, a));
  EXPECT_FALSE(decode_announcement(encode_announcement({1, 1, "unix:@x"}), a)) << "only TCP crosses hosts";
  EXPECT_FALSE(decode_announcement(std::span(d).first(10), a));
  EXPECT_FALSE(is_announcement(std::span(d).first(1)));
}

namespace {
std::array<std::byte, wire::kSignSeedSize> seed_of(uint8_t v) {
  std::array<std::byte, wire::kSignSeedSize> s{};
  s.fill(std::byte{v});
  return s;
}
}  // namespace

TEST(UdpAnnounce, ASignedOneVerifiesOnlyWithItsKeyAndUntouched) {
  const wire::SigningKey key(seed_of(1)), other(seed_of(2));
  const auto d = encode_announcement({7, 99, "tcp:10.0.0.1:7471"}, &key);
  Announcement a;
  ASSERT_TRUE(decode_announcement(d, a));
  EXPECT_TRUE(a.is_signed);
  EXPECT_EQ(a.address, "tcp:10.0.0.1:7471");
  EXPECT_TRUE(announcement_signed_by(d, key.public_key()));
  EXPECT_FALSE(announcement_signed_by(d, other.public_key())) << "another publisher's key";
  for (const size_t at : {size_t{4}, size_t{8}, size_t{20}, d.size() - 1}) {  // channel, session, address, signature
    auto bad = d;
    bad[at] ^= std::byte{1};
    EXPECT_FALSE(announcement_signed_by(bad, key.public_key())) << "byte " << at << " changed";
  }
  const auto plain = encode_announcement({7, 99, "tcp:10.0.0.1:7471"});
  ASSERT_TRUE(decode_announcement(plain, a));
  EXPECT_FALSE(a.is_signed);
  EXPECT_FALSE(announcement_signed_by(plain, key.public_key())) << "version 1 carries no signature";
  auto relabelled = plain;  // version 1 bytes claiming version 2: the length no longer fits
  relabelled[2] = std::byte{kAnnounceSignedVersion};
  EXPECT_FALSE(decode_announcement(relabelled, a));
  EXPECT_FALSE(announcement_signed_by(relabelled, key.public_key()));
  auto cut = d;
  cut.pop_back();
  EXPECT_FALSE(decode_announcement(cut, a));
  EXPECT_FALSE(announcement_signed_by(cut, key.public_key()));
}

TEST(UdpAnnounce, PublicKeysParseOnlyAsSixtyFourHexDigits) {
  const wire::SigningKey key(seed_of(3));
  const std::string hex = wire::format_public_key(key.public_key());
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(wire::parse_public_key(hex), key.public_key());
  EXPECT_FALSE(wire::parse_public_key(hex.substr(1)));
  EXPECT_FALSE(wire::parse_public_key(hex + "0"));
  EXPECT_FALSE(wire::parse_public_key(std::string(63, 'a') + "g"));
  EXPECT_FALSE(wire::parse_public_key(""));
}
