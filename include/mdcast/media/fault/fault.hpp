// Fault injection for any medium: FaultySource<S> wraps a DatagramSource and
// loses, reorders, duplicates, truncates or corrupts what it hands over, as
// a FaultProfile says. The medium knows nothing of it; `--inject-loss`, the
// in-memory medium of the component tests and the verbs tests all use this
// one interceptor (in the spirit of Aeron's loss-generating transport).
//
// Deterministic for a seed: the decisions come from one RNG in arrival order.
// No allocation after construction (held and altered datagrams live in a
// pool sized at construction; when it is full a datagram passes unaltered).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "mdcast/core/counter.hpp"
#include "mdcast/core/rng.hpp"
#include "mdcast/media/medium.hpp"
#include "mdcast/wire/protocol.hpp"

namespace mdcast::media::fault {

struct FaultProfile {
  uint64_t seed = 1;
  double loss = 0;              // probability each datagram is lost
  uint64_t drop_every = 0;      // every Nth datagram is lost (0: off)
  uint64_t burst_every = 0;     // every this many datagrams (0: once, right after burst_start) ...
  uint32_t burst_length = 0;    // ... this many in a row are lost
  uint64_t burst_start = 0;     // bursts begin after this many datagrams
  double reorder = 0;           // probability a datagram is held back ...
  uint32_t reorder_depth = 4;   // ... until up to this many later ones passed it
  double duplicate = 0;         // probability of a second copy
  double truncate = 0;          // probability of losing a random tail
  double corrupt = 0;           // probability of one flipped byte
  bool sequenced_only = false;  // heartbeats (unsequenced datagrams) pass untouched
  [[nodiscard]] bool active() const noexcept {
    return loss > 0 || drop_every || burst_length || reorder > 0 || duplicate > 0 || truncate > 0 || corrupt > 0;
  }
};

#define MDCAST_FAULT_COUNTERS(X)                                          \
  X(offered, "datagrams the medium handed to the fault injector")        \
  X(lost, "datagrams lost at random")                                    \
  X(every_lost, "datagrams lost as every Nth")                           \
  X(burst_lost, "datagrams lost in bursts")                              \
  X(reordered, "datagrams held back behind later ones")                  \
  X(duplicated, "datagrams delivered twice")                             \
  X(truncated, "datagrams cut short")                                    \
  X(corrupted, "datagrams with a flipped byte")
MDCAST_DEFINE_COUNTER_STRUCT(FaultCounters, MDCAST_FAULT_COUNTERS);

[[nodiscard]] inline uint64_t injected_losses(const FaultCounters& c) noexcept {
  return c.lost.get() + c.every_lost.get() + c.burst_lost.get();
}

// The decisions, apart from the datagrams they apply to.
class FaultPlan {
 public:
  explicit FaultPlan(const FaultProfile& f) noexcept : f_(f), rng_(f.seed) {}
  enum class Fate : uint8_t { kPass, kLose };
  struct Alteration {
    bool truncate = false;
    size_t keep = 0;          // bytes kept when truncated
    bool corrupt = false;
    size_t at = 0;            // the byte flipped ...
    std::byte mask{};         // ... with this
    bool hold = false;
    uint32_t hold_for = 0;    // later datagrams that pass it first
    bool duplicate = false;
  };
  // Whether datagram number offered() is lost; counts it.
  Fate fate(bool sequenced) noexcept;
  // For a datagram that passes: what happens to it.
  Alteration alter(size_t size) noexcept;
  [[nodiscard]] const FaultProfile& profile() const noexcept { return f_; }
  [[nodiscard]] FaultCounters& counters() noexcept { return c_; }
  [[nodiscard]] const FaultCounters& counters() const noexcept { return c_; }

 private:
  FaultProfile f_;
  Rng rng_;
  FaultCounters c_;
  uint64_t n_ = 0;            // datagrams subject to faults so far
  uint64_t burst_left_ = 0;
};

template <DatagramSource Source>
class FaultySource {
 public:
  // pool: datagrams that can be held back (reordering) at once.
  FaultySource(Source& inner, const FaultProfile& f, size_t max_datagram = wire::kMaxDatagram, size_t pool = 64)
      : inner_(inner), plan_(f), active_(f.active()), slot_(max_datagram), slots_(pool + 1),
        mem_(std::make_unique<std::byte[]>(slot_ * slots_)), held_(pool) {}

  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    if (!active_) [[likely]]
      return inner_.poll(fn, budget);
    return inner_.poll([&](std::span<const std::byte> d, uint64_t rx) noexcept { offer(d, rx, fn); }, budget);
  }
  bool block(uint64_t timeout_ns) noexcept { return inner_.block(timeout_ns); }

  [[nodiscard]] const FaultCounters& counters() const noexcept { return plan_.counters(); }
  [[nodiscard]] CounterGroup counter_group() const { return media::counter_group("fault", plan_.counters()); }
  [[nodiscard]] Source& inner() noexcept { return inner_; }

 private:
  struct Held {
    bool used = false;
    uint32_t after = 0;   // later datagrams still to pass it
    size_t len = 0;
    uint64_t rx = 0;
  };
  std::byte* buf(size_t i) noexcept { return mem_.get() + i * slot_; }  // slot held_.size(): scratch

  template <class Fn>
  void offer(std::span<const std::byte> d, uint64_t rx, Fn& fn) noexcept {
    const bool sequenced =
        d.size() < wire::dgram::kHeaderSize || (static_cast<uint8_t>(d[wire::dgram::kFlags]) & wire::kFlagUnsequenced) == 0;
    if (plan_.fate(sequenced) == FaultPlan::Fate::kLose) return;  // the held ones wait for the next arrival
    FaultPlan::Alteration a{};
    if (sequenced || !plan_.profile().sequenced_only) a = plan_.alter(d.size());
    std::span<const std::byte> out = d;
    if ((a.truncate || a.corrupt) && d.size() <= slot_) {
      std::byte* s = buf(held_.size());
      std::memcpy(s, d.data(), d.size());
      size_t len = a.truncate ? a.keep : d.size();
      if (a.corrupt && len > 0) s[a.at % len] ^= a.mask;
      out = {s, len};
    }
    if (a.hold && out.size() <= slot_) {
      for (size_t i = 0; i < held_.size(); ++i) {
        if (held_[i].used) continue;
        if (out.data() != buf(i)) std::memmove(buf(i), out.data(), out.size());
        held_[i] = {true, a.hold_for, out.size(), rx};
        return;  // it arrives after hold_for later datagrams
      }
    }
    fn(out, rx);
    if (a.duplicate) fn(out, rx);
    release(fn);
  }

  // One datagram passed: those held behind it move up; due ones arrive now.
  template <class Fn>
  void release(Fn& fn) noexcept {
    for (size_t i = 0; i < held_.size(); ++i) {
      Held& h = held_[i];
      if (!h.used) continue;
      if (h.after > 0) --h.after;
      if (h.after == 0) {
        h.used = false;
        fn(std::span<const std::byte>(buf(i), h.len), h.rx);
      }
    }
  }

  Source& inner_;
  FaultPlan plan_;
  bool active_;
  size_t slot_;
  size_t slots_;
  std::unique_ptr<std::byte[]> mem_;
  std::vector<Held> held_;
};

// A subscriber medium whose data passes through a FaultySource: what the
// command line's --inject-loss and the tests wrap around a real medium.
template <SubscriberMedium Medium>
class FaultyMedium {
 public:
  using Source = FaultySource<typename Medium::Source>;

  FaultyMedium(Medium& inner, const FaultProfile& f) : inner_(inner), source_(inner.source(), f) {}

  Source& source() noexcept { return source_; }
  decltype(auto) control() noexcept { return inner_.control(); }
  [[nodiscard]] feed::SubscriberConfig configure(const feed::SubscriberConfig& c) const { return inner_.configure(c); }
  void start() { inner_.start(); }
  size_t poll_control(ControlEvents& e, uint64_t now) { return inner_.poll_control(e, now); }
  [[nodiscard]] std::string describe() const { return inner_.describe(); }
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const {
    auto g = inner_.counter_groups();
    g.push_back(source_.counter_group());
    return g;
  }
  [[nodiscard]] Medium& inner() noexcept { return inner_; }
  [[nodiscard]] const FaultCounters& counters() const noexcept { return source_.counters(); }
  // Lost before the engine saw them: injected, and what the medium lost itself.
  [[nodiscard]] uint64_t lost_datagrams() const noexcept {
    uint64_t n = injected_losses(source_.counters());
    if constexpr (requires(const Medium& m) { m.lost_datagrams(); }) n += inner_.lost_datagrams();
    return n;
  }

 private:
  Medium& inner_;
  Source source_;
};

}  // namespace mdcast::media::fault
