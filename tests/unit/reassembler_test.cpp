// Reassembler: fragments of one message, arriving in sequence order, become
// the original bytes; anything out of order, orphaned, inconsistent or
// hostile is dropped, and open reassemblies stay bounded.
#include <gtest/gtest.h>

#include <cstring>

#include "mdcast/core/error.hpp"
#include "mdcast/feed/reassembler.hpp"
#include "support.hpp"

namespace mdcast::test {
namespace {

using feed::Reassembler;
using R = Reassembler::Result;

Bytes message_of(size_t n, uint8_t salt) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = std::byte(static_cast<uint8_t>(i * 7 + salt));
  return b;
}

// Cuts msg into `count` fragment messages of id `id`.
std::vector<Bytes> cut(const Bytes& msg, uint32_t id, uint16_t count, uint32_t inst = 3) {
  std::vector<Bytes> v;
  const size_t piece = (msg.size() + count - 1) / count;
  for (uint16_t i = 0; i < count; ++i) {
    const size_t off = i * piece;
    const size_t n = std::min(piece, msg.size() - off);
    v.push_back(fragment_msg(inst, id, i, count, static_cast<uint32_t>(msg.size()),
                             std::span<const std::byte>(msg).subspan(off, n)));
  }
  return v;
}

R add(Reassembler& r, const Bytes& frag, std::span<const std::byte>& out) {
  EXPECT_EQ(wire::validate_message(frag.data(), static_cast<uint16_t>(frag.size())), wire::MessageCheck::kOk);
  return r.add(wire::FragmentView(wire::MessageView(frag.data(), static_cast<uint16_t>(frag.size()))), out);
}

TEST(Reassembler, InOrderCompletes) {
  Reassembler r(2, 4096);
  for (uint16_t count : {2, 3, 7, 100}) {
    const Bytes msg = message_of(1000 + count, static_cast<uint8_t>(count));
    const auto frags = cut(msg, count, count);
    std::span<const std::byte> out;
    for (size_t i = 0; i + 1 < frags.size(); ++i) {
      ASSERT_EQ(add(r, frags[i], out), R::kIncomplete) << count << ":" << i;
      EXPECT_EQ(r.open(), 1u);
    }
    ASSERT_EQ(add(r, frags.back(), out), R::kComplete) << count;
    ASSERT_EQ(out.size(), msg.size());
    EXPECT_EQ(0, std::memcmp(out.data(), msg.data(), msg.size()));
    EXPECT_EQ(r.open(), 0u);
  }
}

TEST(Reassembler, InterleavedMessagesUseSeparateSlots) {
  Reassembler r(2, 4096);
  const Bytes a = message_of(300, 1), b = message_of(500, 2);
  const auto fa = cut(a, 10, 3), fb = cut(b, 11, 2);
  std::span<const std::byte> out;
  ASSERT_EQ(add(r, fa[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, fb[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, fa[1], out), R::kIncomplete);
  ASSERT_EQ(add(r, fb[1], out), R::kComplete);
  EXPECT_EQ(0, std::memcmp(out.data(), b.data(), b.size()));
  ASSERT_EQ(add(r, fa[2], out), R::kComplete);
  EXPECT_EQ(0, std::memcmp(out.data(), a.data(), a.size()));
}

TEST(Reassembler, OutOfOrderIndexDropsTheMessage) {
  Reassembler r(2, 4096);
  const auto f = cut(message_of(900, 3), 5, 3);
  std::span<const std::byte> out;
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  EXPECT_EQ(add(r, f[2], out), R::kDropped) << "skipped index 1";
  EXPECT_EQ(r.open(), 0u);
  EXPECT_EQ(add(r, f[1], out), R::kDropped) << "the reassembly is gone: an orphan now";
  // A repeated fragment is out of order too.
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, f[1], out), R::kIncomplete);
  EXPECT_EQ(add(r, f[1], out), R::kDropped);
}

TEST(Reassembler, OrphanFragment) {
  Reassembler r(2, 4096);
  const auto f = cut(message_of(900, 4), 6, 3);
  std::span<const std::byte> out;
  EXPECT_EQ(add(r, f[1], out), R::kDropped);
  EXPECT_EQ(add(r, f[2], out), R::kDropped);
  EXPECT_EQ(r.open(), 0u);
}

TEST(Reassembler, RestartedIdReplacesTheStaleOne) {
  Reassembler r(2, 4096);
  const Bytes m1 = message_of(600, 5), m2 = message_of(400, 6);
  const auto f1 = cut(m1, 9, 3), f2 = cut(m2, 9, 2);
  std::span<const std::byte> out;
  ASSERT_EQ(add(r, f1[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, f2[0], out), R::kIncomplete);
  EXPECT_EQ(r.open(), 1u) << "one slot per id";
  ASSERT_EQ(add(r, f2[1], out), R::kComplete);
  EXPECT_EQ(0, std::memcmp(out.data(), m2.data(), m2.size()));
}

TEST(Reassembler, EvictsTheOldestWhenFull) {
  Reassembler r(2, 4096);
  const auto a = cut(message_of(300, 1), 1, 2), b = cut(message_of(300, 2), 2, 2), c = cut(message_of(300, 3), 3, 2);
  std::span<const std::byte> out;
  ASSERT_EQ(add(r, a[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, b[0], out), R::kIncomplete);
  // No slot free: the oldest (a) is evicted, which counts as a drop, and c starts.
  EXPECT_EQ(add(r, c[0], out), R::kDropped);
  EXPECT_EQ(r.open(), 2u);
  EXPECT_EQ(add(r, a[1], out), R::kDropped) << "a was evicted";
  EXPECT_EQ(add(r, b[1], out), R::kComplete);
  EXPECT_EQ(add(r, c[1], out), R::kComplete);
}

TEST(Reassembler, TotalLengthMismatch) {
  Reassembler r(2, 4096);
  const Bytes m = message_of(600, 7);
  std::span<const std::byte> out;
  // Pieces that add up to less than the declared total.
  auto f = cut(m, 1, 3);
  f[2] = fragment_msg(3, 1, 2, 3, 600, std::span<const std::byte>(m).subspan(400, 150));
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, f[1], out), R::kIncomplete);
  EXPECT_EQ(add(r, f[2], out), R::kDropped);
  // Pieces that exceed it.
  f = cut(m, 2, 3);
  f[1] = fragment_msg(3, 2, 1, 3, 600, std::span<const std::byte>(m).subspan(0, 500));
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  EXPECT_EQ(add(r, f[1], out), R::kDropped);
  // A first piece larger than the total.
  EXPECT_EQ(add(r, fragment_msg(3, 3, 0, 2, 10, std::span<const std::byte>(m).first(11)), out), R::kDropped);
  // A later fragment that changes the count or the total.
  f = cut(m, 4, 3);
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  EXPECT_EQ(add(r, fragment_msg(3, 4, 1, 4, 600, std::span<const std::byte>(m).subspan(200, 200)), out), R::kDropped);
  f = cut(m, 5, 3);
  ASSERT_EQ(add(r, f[0], out), R::kIncomplete);
  EXPECT_EQ(add(r, fragment_msg(3, 5, 1, 3, 601, std::span<const std::byte>(m).subspan(200, 200)), out), R::kDropped);
  EXPECT_EQ(r.open(), 0u);
}

TEST(Reassembler, HostileCountsStayBounded) {
  Reassembler r(1, 1024);
  const Bytes m = message_of(1024, 8);
  std::span<const std::byte> out;
  // A total above max_message is refused at once, no buffer is touched.
  EXPECT_EQ(add(r, fragment_msg(3, 1, 0, 2, 1025, std::span<const std::byte>(m).first(10)), out), R::kDropped);
  EXPECT_EQ(r.open(), 0u);
  // 65535 fragments of one byte: bounded by the total, never by the count.
  ASSERT_EQ(add(r, fragment_msg(3, 2, 0, 65535, 1000, std::span<const std::byte>(m).first(1)), out), R::kIncomplete);
  for (uint16_t i = 1; i < 1000; ++i)
    ASSERT_EQ(add(r, fragment_msg(3, 2, i, 65535, 1000, std::span<const std::byte>(m).subspan(i, 1)), out),
              R::kIncomplete);
  EXPECT_EQ(add(r, fragment_msg(3, 2, 1000, 65535, 1000, std::span<const std::byte>(m).subspan(0, 1)), out),
            R::kDropped) << "beyond the declared total";
  // Reaching the count with bytes missing is a drop, not a short message.
  ASSERT_EQ(add(r, fragment_msg(3, 3, 0, 2, 1000, std::span<const std::byte>(m).first(10)), out), R::kIncomplete);
  EXPECT_EQ(add(r, fragment_msg(3, 3, 1, 2, 1000, std::span<const std::byte>(m).first(10)), out), R::kDropped);
}

TEST(Reassembler, ResetDropsEverything) {
  Reassembler r(3, 4096);
  const auto a = cut(message_of(300, 1), 1, 2), b = cut(message_of(300, 2), 2, 2);
  std::span<const std::byte> out;
  ASSERT_EQ(add(r, a[0], out), R::kIncomplete);
  ASSERT_EQ(add(r, b[0], out), R::kIncomplete);
  r.reset();
  EXPECT_EQ(r.open(), 0u);
  EXPECT_EQ(add(r, a[1], out), R::kDropped);
}

TEST(Reassembler, NeedsASlot) { EXPECT_THROW(Reassembler(0, 100), Error); }

}  // namespace
}  // namespace mdcast::test
