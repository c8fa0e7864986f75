// Secrets files and keys (feed/auth.hpp): what a file may look like, which
// files are refused (mode, owner, type), that errors name file and line but
// never quote a secret, that keys are wiped, and the refusal delay.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "auth_support.hpp"
#include "mdcast/core/error.hpp"
#include "mdcast/feed/auth.hpp"

namespace mdcast::test {
namespace {

using feed::ClientSecret;
using feed::PublisherSecrets;
using feed::SecretKey;

// The message of the Error fn throws ("" if it does not throw).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

class SecretFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mdcast-auth-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p.string();
  }
  std::filesystem::path dir_;
};

const std::string kGood = "# identities of the test feed\n"
                          "\n"
                          "gold   " + test_secret_hex(1) + "  all      # every instrument\n"
                          "silver " + test_secret_hex(2) + "  9,1-3,2\n";

TEST(Secrets, ParsesIdentitiesSecretsAndEntitlements) {
  const auto s = PublisherSecrets::parse(kGood, "f");
  ASSERT_EQ(s.size(), 2u);
  const auto* g = s.find("gold");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->entitlement.all);
  EXPECT_EQ(to_hex(std::span<const std::byte>(g->key.view())), test_secret_hex(1));
  const auto* sv = s.find("silver");
  ASSERT_NE(sv, nullptr);
  EXPECT_FALSE(sv->entitlement.all);
  EXPECT_EQ(sv->entitlement.instruments, (std::vector<uint32_t>{1, 2, 3, 9})) << "sorted, repeats dropped";
  EXPECT_EQ(s.find("bronze"), nullptr);
  EXPECT_EQ(s.find(""), nullptr);
}

TEST(Secrets, ParseErrorsNameFileAndLineAndNeverQuoteASecret) {
  const std::string k = test_secret_hex(1);
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"gold " + k + "\n", "f:1: expected 'identity secret entitlement', found 2 fields"},
      {"\n\ngold\n", "f:3: expected"},
      {"gold " + k + " all extra\n", "f:1: expected"},
      {k + " gold all\n", "f:1: the first field looks like a secret"},
      {"go|d " + k + " all\n", "f:1: the identity (first field, 4 characters) must be"},
      {"gold " + k.substr(1) + " all\n", "f:1: the secret of 'gold' must be 64 hex digits (32 bytes), it has 63"},
      {"gold " + k.substr(0, 63) + "g all\n", "it has 64 characters and a non-hex one"},
      {"gold " + std::string(64, '0') + " all\n", "f:1: the secret of 'gold' is all zeros"},
      {"gold " + k + " all\n# x\ngold " + test_secret_hex(2) + " all\n", "f:3: identity 'gold' is listed twice (first on line 1)"},
      {"gold " + k + " 5-1\n", "f:1: entitlement of 'gold': range 5-1 runs backwards"},
      {"gold " + k + " 1,,2\n", "f:1: entitlement of 'gold': expected 'all' or instrument ids"},
      {"gold " + k + " 0-2000000\n", "more than 1048576 instruments"},
      {"# nothing\n\n", "f lists no identity"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of([&] { (void)PublisherSecrets::parse(c.text, "f"); });
    EXPECT_NE(e.find(c.expect), std::string::npos) << "got: " << e << "\nwanted: " << c.expect;
    EXPECT_EQ(e.find(k.substr(0, 16)), std::string::npos) << "the secret leaked into: " << e;
    EXPECT_EQ(e.find(test_secret_hex(2).substr(0, 16)), std::string::npos) << e;
  }
}

TEST(Secrets, EntitlementParser) {
  EXPECT_TRUE(feed::parse_entitlement("all").all);
  EXPECT_EQ(feed::parse_entitlement("7").instruments, (std::vector<uint32_t>{7}));
  EXPECT_EQ(feed::parse_entitlement("3-5,1").instruments, (std::vector<uint32_t>{1, 3, 4, 5}));
  for (std::string_view bad : {"", "-", "1-", "a", "1,", "ALL", "1 2", "1234567890"})
    EXPECT_THROW((void)feed::parse_entitlement(bad), Error) << bad;
}

TEST(Secrets, ClientSecretPicksItsLine) {
  const auto one = ClientSecret::parse("gold " + test_secret_hex(1) + "\n", "c");
  EXPECT_EQ(one.identity(), "gold");
  const auto copied = ClientSecret::parse("gold " + test_secret_hex(1) + " 1-3\n", "c");
  EXPECT_EQ(copied.identity(), "gold") << "a publisher's line, entitlement and all, serves the subscriber too";
  const auto picked = ClientSecret::parse(kGood, "c", "silver");
  EXPECT_EQ(picked.identity(), "silver");
  EXPECT_EQ(to_hex(std::span<const std::byte>(picked.key().view())), test_secret_hex(2));
  EXPECT_NE(error_of([&] { (void)ClientSecret::parse(kGood, "c"); }).find("c holds 2 identities: say which"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)ClientSecret::parse(kGood, "c", "bronze"); }).find("no line for identity 'bronze' (it has: gold, silver)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (void)ClientSecret::parse("# empty\n", "c"); }).find("c holds no identity"), std::string::npos);
}

TEST_F(SecretFileTest, OnlyAPrivateRegularFileOfTheRunningUser) {
  const auto ok = write("ok", kGood, 0600);
  EXPECT_EQ(PublisherSecrets::load(ok).size(), 2u);
  EXPECT_EQ(PublisherSecrets::load(write("ro", kGood, 0400)).size(), 2u);
  for (mode_t m : {0644, 0640, 0604, 0660, 0602}) {
    const auto p = write("m" + std::to_string(m), kGood, m);
    const std::string e = error_of([&] { (void)PublisherSecrets::load(p); });
    EXPECT_NE(e.find(fmt::format("has mode {:04o}", m)), std::string::npos) << e;
    EXPECT_NE(e.find("chmod 600 " + p), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] { (void)PublisherSecrets::load(dir_.string()); }).find("is not a regular file"),
            std::string::npos);
  const std::string missing = (dir_ / "missing").string();
  const std::string e = error_of([&] { (void)PublisherSecrets::load(missing); });
  EXPECT_NE(e.find("cannot open secrets file " + missing + ": No such file"), std::string::npos) << e;
  // A FIFO planted at the path is refused at once (opening it must not block).
  const auto fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { (void)PublisherSecrets::load(fifo); }).find("is not a regular file"), std::string::npos);
  // A symbolic link is followed: the file it names is what gets checked.
  const auto link = (dir_ / "link").string();
  ASSERT_EQ(::symlink(ok.c_str(), link.c_str()), 0);
  EXPECT_EQ(PublisherSecrets::load(link).size(), 2u);
  ::chmod(ok.c_str(), 0644);
  EXPECT_NE(error_of([&] { (void)PublisherSecrets::load(link); }).find("has mode 0644"), std::string::npos);
  // Parse errors name the file's path.
  const auto bad = write("bad", "gold nothex all\n");
  EXPECT_NE(error_of([&] { (void)PublisherSecrets::load(bad); }).find(bad + ":1: the secret of 'gold'"),
            std::string::npos);
  // The subscriber's file is held to the same rules.
  const auto sub = write("sub", "gold " + test_secret_hex(1) + "\n", 0644);
  EXPECT_NE(error_of([&] { (void)ClientSecret::load(sub); }).find("chmod 600"), std::string::npos);
  ::chmod(sub.c_str(), 0600);
  EXPECT_EQ(ClientSecret::load(sub).identity(), "gold");
}

TEST_F(SecretFileTest, AFileOfAnotherOwnerIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another user (chown)";
  const auto p = write("theirs", kGood, 0600);
  ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
  const std::string e = error_of([&] { (void)PublisherSecrets::load(p); });
  EXPECT_NE(e.find("is owned by uid 65534, not by uid 0"), std::string::npos) << e;
}

TEST(SecretKeys, HexRandomAndWipedOnMove) {
  auto k = SecretKey::from_hex(test_secret_hex(3));
  ASSERT_TRUE(k);
  EXPECT_EQ(k->to_hex(), test_secret_hex(3));
  EXPECT_FALSE(SecretKey::from_hex(test_secret_hex(3).substr(2)));
  EXPECT_FALSE(SecretKey::from_hex(test_secret_hex(3) + "00"));
  EXPECT_FALSE(SecretKey::from_hex(std::string(63, 'a') + "x"));
  EXPECT_EQ(SecretKey::from_hex(std::string(64, 'A'))->to_hex(), std::string(64, 'a')) << "either case";
  SecretKey moved = std::move(*k);
  EXPECT_TRUE(k->all_zero()) << "a move leaves no copy behind";
  EXPECT_EQ(moved.to_hex(), test_secret_hex(3));
  const auto r1 = SecretKey::random(), r2 = SecretKey::random();
  EXPECT_FALSE(r1.all_zero());
  EXPECT_NE(r1.to_hex(), r2.to_hex());
}

TEST(SecretKeys, FormattedLinesReadBack) {
  const auto k = SecretKey::random();
  std::string line = feed::format_secret_line("desk-b", k, "0-99,200");
  ASSERT_EQ(line.back(), '\n');
  const auto s = PublisherSecrets::parse(line, "new");
  ASSERT_NE(s.find("desk-b"), nullptr);
  EXPECT_EQ(s.find("desk-b")->key.to_hex(), k.to_hex());
  EXPECT_EQ(s.find("desk-b")->entitlement.instruments.size(), 101u);
  EXPECT_EQ(ClientSecret::parse(line, "new").identity(), "desk-b");
  wire::wipe(line);
  EXPECT_THROW((void)feed::format_secret_line("bad id", k), Error);
  EXPECT_THROW((void)feed::format_secret_line(test_secret_hex(1), k), Error) << "an identity that looks like a secret";
  EXPECT_THROW((void)feed::format_secret_line("ok", k, "9-1"), Error);
}

TEST(AuthBackoff, DoublesToTheCapAndDecays) {
  constexpr uint64_t ms = 1'000'000;
  feed::AuthBackoff b(100 * ms, 5000 * ms, 10'000 * ms);
  uint64_t t = 1'000 * ms;
  EXPECT_EQ(b.current(t), 100 * ms);
  std::vector<uint64_t> got;
  for (int i = 0; i < 8; ++i) got.push_back(b.on_failure(t += ms) / ms);
  EXPECT_EQ(got, (std::vector<uint64_t>{100, 200, 400, 800, 1600, 3200, 5000, 5000}));
  // One doubling forgotten per 10 s without a failure.
  EXPECT_EQ(b.current(t + 10'000 * ms) / ms, 5000u);  // level 8 -> 7: still capped
  EXPECT_EQ(b.current(t + 30'000 * ms) / ms, 3200u);  // level 5
  EXPECT_EQ(b.current(t + 1'000'000 * ms) / ms, 100u);
  EXPECT_EQ(b.on_failure(t + 70'000 * ms) / ms, 200u) << "level 1 left after 70 s";
}

}  // namespace
}  // namespace mdcast::test
