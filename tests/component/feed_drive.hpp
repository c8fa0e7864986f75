// What the agent tests drive a feed with: a bounded synthetic source, a
// publisher (one agent or several channels') that logs what it accepted,
// and a line of a subscriber's non-zero counters for failure reports.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mdcast/core/clock.hpp"

#include "delivery_check.hpp"
#include "mdcast/book/generator.hpp"
#include "mdcast/feed/paced_loop.hpp"

namespace mdcast::test {

// `left` messages of the synthetic flow, then no more.
struct Messages {
  book::Generator gen;
  uint64_t left;
  bool next(wire::Message& m) noexcept {
    if (left == 0) return false;
    --left;
    gen.next(m);
    return true;
  }
};

// The feed, logged as the publisher accepted it (with the instrument
// sequence it assigned), handed to run_paced in place of the publisher.
template <class Publisher>
struct Logged {
  Publisher& pub;
  PublishedLog& log;
  uint64_t out_of_order = 0;
  feed::PublishResult publish(wire::Message& m, uint64_t now) noexcept {
    const auto r = pub.publish(m, now);
    if (r == feed::PublishResult::kOk && !log.add(m)) ++out_of_order;
    return r;
  }
  size_t do_work(uint64_t now) { return pub.do_work(now); }
  void flush(uint64_t now) noexcept { pub.flush(now); }
  [[nodiscard]] bool has_open() const noexcept { return feed::detail::has_open(pub); }
  [[nodiscard]] uint64_t flush_interval_ns() const noexcept { return feed::detail::flush_interval_ns(pub); }
};

// Every subscriber's duty cycle once per publishing round (run_paced's
// hooks). `agent_of(s)` is its agent: one channel's or several.
template <class S, class AgentOf>
struct DriveAll {
  std::vector<S*> subs;
  AgentOf agent_of;
  bool on_round(uint64_t now, uint64_t) noexcept {
    for (S* s : subs) agent_of(*s).do_work(now);
    return true;
  }
};

template <class S, class AgentOf>
DriveAll<S, AgentOf> drive_all(const std::vector<S*>& subs, AgentOf agent_of) {
  return {subs, agent_of};
}

// After the last message: end the session and run every agent until each
// subscriber has everything the publisher announced, or timeout_ns passed.
template <class Pub, class S, class AgentOf>
bool finish_all(Pub& pub, const std::vector<S*>& subs, AgentOf agent_of, uint64_t timeout_ns) {
  uint64_t now = monotonic_ns();
  const uint64_t deadline = now + timeout_ns;
  while (!pub.end_session(now)) pub.do_work(now = monotonic_ns());
  for (;;) {
    now = monotonic_ns();
    pub.do_work(now);
    bool all = true;
    for (S* s : subs) {
      agent_of(*s).do_work(now);
      all &= agent_of(*s).finished();
    }
    if (all) return true;
    if (now > deadline) return false;
  }
}

// " name=value" for every counter that is not zero.
template <class Counters>
std::string nonzero(const Counters& c, std::string_view prefix = "") {
  std::string r;
  for (size_t i = 0; i < Counters::kCount; ++i)
    if (c.at(i).get()) r += fmt::format(" {}{}={}", prefix, Counters::kInfo[i].name, c.at(i).get());
  return r;
}

}  // namespace mdcast::test
