// What an RC control client says when it connects, and what a shared
// endpoint says when it refuses: the hello names the channel (version 2; a
// version-1 hello names none), the reject note carries the reason, and
// neither decoder takes what it should not. No RDMA device needed.
#include <gtest/gtest.h>

#include "mdcast/core/bytes.hpp"
#include "mdcast/media/verbs/verbs_control.hpp"
#include "mdcast/media/verbs/verbs_front_door.hpp"

namespace mdcast::media::verbs {
namespace {

TEST(VerbsHello, Version2NamesTheChannelVersion1NamesNone) {
  std::byte b[kHelloSize];
  Hello{2, uint16_t{513}}.encode(b);
  const auto h = parse_hello(b);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->version, 2);
  ASSERT_TRUE(h->channel.has_value());
  EXPECT_EQ(*h->channel, 513);
  // What a version-1 client sent: magic, version 1, two zero bytes.
  std::byte v1[kHelloSize] = {};
  store_le<uint32_t>(v1, kHelloMagic);
  store_le<uint16_t>(v1 + 4, 1);
  const auto old = parse_hello(v1);
  ASSERT_TRUE(old.has_value());
  EXPECT_FALSE(old->channel.has_value());
}

TEST(VerbsHello, NoMagicAnUnknownVersionOrTooFewBytesIsNoHello) {
  std::byte b[kHelloSize];
  Hello{2, uint16_t{1}}.encode(b);
  EXPECT_FALSE(parse_hello(std::span<const std::byte>(b, kHelloSize - 1)).has_value());
  std::byte bad[kHelloSize];
  std::memcpy(bad, b, kHelloSize);
  bad[0] = std::byte{0};
  EXPECT_FALSE(parse_hello(bad).has_value());
  store_le<uint16_t>(b + 4, 3);
  EXPECT_FALSE(parse_hello(b).has_value());
}

TEST(VerbsRejectNote, CarriesCodeAndTextCutToFitAREJ) {
  const auto note = RejectNote{4, "this publisher serves channels 1 to 4; channel 9 is not among them"}.encode();
  EXPECT_LE(note.size(), 148u) << "an IB/RoCE REJ carries at most 148 bytes of private data";
  const auto back = RejectNote::decode(note);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->code, 4);
  EXPECT_EQ(back->text, "this publisher serves channels 1 to 4; channel 9 is not among them");
  const auto long_note = RejectNote{7, std::string(400, 'x')}.encode();
  EXPECT_LE(long_note.size(), 148u);
  EXPECT_EQ(RejectNote::decode(long_note)->text.size(), RejectNote::kMaxText);
}

TEST(VerbsRejectNote, ForeignOrTruncatedPrivateDataIsNoNote) {
  auto note = RejectNote{4, "why"}.encode();
  EXPECT_FALSE(RejectNote::decode(std::span<const std::byte>(note.data(), note.size() - 1)).has_value());
  EXPECT_FALSE(RejectNote::decode(std::span<const std::byte>(note.data(), 7)).has_value());
  note[0] = std::byte{0};
  EXPECT_FALSE(RejectNote::decode(note).has_value());
}

TEST(VerbsRequestInbox, WithNoServerAttachedNothingIsTakenAndTheReasonSaid) {
  RequestInbox inbox(3);
  std::string why;
  // No server attached: refused before the id is touched (a null id proves it).
  EXPECT_FALSE(inbox.hand_over(nullptr, {}, why));
  EXPECT_NE(why.find("publishing thread"), std::string::npos) << why;
  EXPECT_TRUE(inbox.empty());
  EXPECT_FALSE(inbox.take().has_value());
}

}  // namespace
}  // namespace mdcast::media::verbs
