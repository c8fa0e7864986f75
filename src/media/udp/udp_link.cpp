// The UDP rails' interfaces watched, and set up again when they come back (udp_link.hpp).
#include "mdcast/media/udp/udp_link.hpp"

#include <fmt/format.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "mdcast/core/error.hpp"

namespace mdcast::media::udp {
namespace {

char rail_name(int r) { return r == 0 ? 'A' : 'B'; }
double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

LinkWatch::LinkWatch(const Interface* iface, size_t n, const Options& o, std::string what, bool silence)
    : opts_(&o), what_(std::move(what)), silence_(silence), n_(std::min<size_t>(n, 2)),
      fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  if (!fd_) fail_errno("udp: a socket to watch the interfaces of {}", iface[0].name);
  for (size_t r = 0; r < n_; ++r) state_[r].iface = iface[r];
}

bool LinkWatch::all_down() const noexcept {
  for (size_t r = 0; r < n_; ++r)
    if (!state_[r].down) return false;
  return n_ > 0;
}

bool LinkWatch::read_flags(State& s, int* index, std::string* why) const {
  ifreq q{};
  std::snprintf(q.ifr_name, sizeof q.ifr_name, "%s", s.iface.name.c_str());
  if (::ioctl(fd_.get(), SIOCGIFINDEX, &q) != 0) {
    *index = 0;
    *why = fmt::format("gone ({})", std::strerror(errno));
    return false;
  }
  *index = q.ifr_ifindex;
  if (::ioctl(fd_.get(), SIOCGIFFLAGS, &q) != 0) {
    *why = fmt::format("unreadable ({})", std::strerror(errno));
    return false;
  }
  // Loopback has no carrier to lose; everything else needs it (IFF_RUNNING).
  const auto f = static_cast<unsigned>(q.ifr_flags);
  if (!(f & IFF_UP)) *why = "down";
  else if (!(f & IFF_RUNNING) && !(f & IFF_LOOPBACK)) *why = "up without carrier";
  else return true;
  return false;
}

size_t LinkWatch::poll(Rail& rail, uint64_t now) {
  size_t work = 0;
  if (now >= next_check_) {
    next_check_ = now + kCheckNs;
    last_check_ = now;
    for (size_t i = 0; i < n_; ++i) {
      const int r = static_cast<int>(i);
      State& s = state_[i];
      int index = 0;
      std::string why;
      const bool usable = read_flags(s, &index, &why);
      if (!usable && !s.down) {
        s.down = true;
        if (!s.outage) {  // down again before data moved: still the same time without data
          s.outage = true;
          s.down_since = now;
        }
        s.next_try = 0;
        s.retry = kFirstRetryNs;
        counters_.down.add();
        counters_.rails_down.set(counters_.rails_down.get() + 1);
        ++work;
        warn(*opts_, fmt::format("{}: rail {}'s interface {} is {}: it is set up again once the interface is back; "
                                 "what is missed meanwhile is recovered by retransmission",
                                 what_, rail_name(r), s.iface.name, why));
      }
      if (!s.down) check_flow(rail, r, now);
    }
  }
  for (size_t i = 0; i < n_; ++i) {
    State& s = state_[i];
    if (!s.down || now < s.next_try) continue;
    // A rail seen down is tried at its own pace: at the check cadence while
    // the interface is away, with the backoff while setting it up fails.
    int index = 0;
    std::string why;
    if (!read_flags(s, &index, &why)) {
      s.next_try = now + kCheckNs;
      continue;
    }
    s.iface.index = index;  // a new one where the interface was created again
    try_restore(rail, static_cast<int>(i), now);
    ++work;
  }
  return work;
}

void LinkWatch::try_restore(Rail& rail, int r, uint64_t now) {
  State& s = state_[r];
  const int err = rail.restore(r, s.iface, false);
  if (err != 0) {
    counters_.rejoin_failures.add();
    warn(*opts_, fmt::format("{}: rail {}'s interface {} is back, but setting the rail up again failed ({}): "
                             "retrying in {} ms",
                             what_, rail_name(r), s.iface.name, std::strerror(err), s.retry / kNsPerMs));
    s.next_try = now + s.retry;
    s.retry = std::min(s.retry * 2, kMaxRetryNs);
    return;
  }
  s.down = false;
  s.moved = rail.moved(r);
  s.quiet_since = now;
  s.silence_wait = kSilenceNs;
  counters_.rejoins.add();
  counters_.rails_down.set(counters_.rails_down.get() - 1);
  warn(*opts_, fmt::format("{}: rail {}'s interface {} (index {}) is back after {:.3f} s: rail set up again",
                           what_, rail_name(r), s.iface.name, s.iface.index, seconds(now - s.down_since)));
}

void LinkWatch::check_flow(Rail& rail, int r, uint64_t now) {
  State& s = state_[r];
  const uint64_t moved = rail.moved(r);
  if (moved != s.moved) {
    s.moved = moved;
    s.quiet_since = now;
    s.silence_wait = kSilenceNs;
    if (s.outage) {
      s.outage = false;
      counters_.down_ns.add(now - s.down_since);
      warn(*opts_, fmt::format("{}: data on rail {} again, {:.3f} s after {} was seen down", what_, rail_name(r),
                               seconds(now - s.down_since), s.iface.name));
    }
    return;
  }
  // Silence on an interface that is up: a membership the kernel or a
  // snooping switch lost without a visible event. Joining again is cheap;
  // the waits double so a publisher that is simply gone costs little.
  if (!silence_ || s.quiet_since == 0 || now - s.quiet_since < s.silence_wait) return;
  const bool first = s.silence_wait == kSilenceNs;
  s.silence_wait = std::min(s.silence_wait * 2, kMaxSilenceNs);
  s.quiet_since = now;
  const int err = rail.restore(r, s.iface, true);
  if (err != 0) {
    counters_.rejoin_failures.add();
  } else {
    counters_.silence_rejoins.add();
  }
  if (first || err != 0)
    warn(*opts_, fmt::format("{}: rail {} heard nothing for {:.1f} s on {}: group joined again{}", what_,
                             rail_name(r), seconds(kSilenceNs), s.iface.name,
                             err ? fmt::format(" failed ({})", std::strerror(err)) : std::string()));
}

}  // namespace mdcast::media::udp
