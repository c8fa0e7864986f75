// Peers the publisher should hold to a share or refuse outright: one peer
// asking for every admitted slot, and any attack run as another local user.
#include <fmt/format.h>
#include <grp.h>
#include <unistd.h>

#include <cstdio>

#include "attack.hpp"
#include "mdcast/core/error.hpp"

namespace mdcast::attack {

void become_user(unsigned uid) {
  const auto id = static_cast<uid_t>(uid);
  if (::setgroups(0, nullptr) != 0 || ::setresgid(id, id, id) != 0 || ::setresuid(id, id, id) != 0)
    fail_errno("becoming user {} (root only)", uid);
}

int subscribers(const std::string& address, unsigned count, double seconds, const std::string& from) {
  const std::string addr = resolve_address(address);
  const uint64_t limit = raise_fd_limit(count + 256);
  fmt::print("subscribers: {} connections to {}{} that subscribe and hold on, for {} s (fd limit {})\n", count, addr,
             from.empty() ? "" : " from " + from, seconds, limit);
  std::vector<Conn> held;
  uint64_t subscribed = 0, refused = 0, unanswered = 0, failed = 0;
  std::string first_refusal, first_error;
  for (unsigned i = 0; i < count && !g_stop; ++i) {
    std::string why;
    auto c = Conn::open(addr, &why, 1000, from);
    if (!c) {
      if (first_error.empty()) first_error = why;
      ++failed;
      continue;
    }
    const auto a = subscribe(*c, "", monotonic_ns() + 2 * kNsPerSec);
    if (!a) {
      ++unanswered;  // closed (or silent) without a word
    } else if (a->kind == Answer::Kind::kAck) {
      ++subscribed;
      held.push_back(std::move(*c));
    } else {
      if (first_refusal.empty()) first_refusal = a->text;
      ++refused;
    }
  }
  if (!first_error.empty()) fmt::print("first connect error: {}\n", first_error);
  if (!first_refusal.empty()) fmt::print("first refusal: {}\n", first_refusal);
  // The scenario starts its subscribers once this line is out.
  fmt::print("ready subscribed={} refused={} unanswered={} failed={}\n", subscribed, refused, unanswered, failed);
  std::fflush(stdout);
  const uint64_t end = monotonic_ns() + static_cast<uint64_t>(seconds * 1e9);
  while (!g_stop && monotonic_ns() < end) sleep_ms(20);
  Report()
      .add("count", static_cast<uint64_t>(count))
      .add("subscribed", subscribed)
      .add("refused", refused)
      .add("unanswered", unanswered)
      .add("failed", failed)
      .print();
  return 0;
}

}  // namespace mdcast::attack
