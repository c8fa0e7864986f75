// Fault injection for any medium: FaultySource<S> wraps a DatagramSource and
// loses, reorders, duplicates, truncates or corrupts what it hands over, as
// a FaultProfile says. The medium knows nothing of it; `--inject-loss`, the
// in-memory medium of the component tests and the verbs tests all use this
// one interceptor (in the spirit of Aeron's loss-generating transport).
//
// Deterministic for a seed: the decisions come from one RNG in arrival order.
// No allocation after construction: held and altered datagrams live in a
// pool sized at construction, by default as large as the profile can ever
// need (see FaultySource), so nothing is silently passed in order instead.
#pragma once

#include <algorithm>
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
  uint32_t reorder_depth = 4;   // ... until up to this many later ones arrived (lost ones count)
  double duplicate = 0;         // probability of a second copy
  double truncate = 0;          // probability of losing a random tail
  double corrupt = 0;           // probability of one flipped byte
  bool sequenced_only = false;  // heartbeats (unsequenced datagrams) pass untouched
  [[nodiscard]] bool active() const noexcept {
    return loss > 0 || drop_every || burst_length || reorder > 0 || duplicate > 0 || truncate > 0 || corrupt > 0;
  }
};

#define MDCAST_FAULT_COUNTERS(X)                                                    \
  X(offered, "datagrams the medium handed to the fault injector")                  \
  X(lost, "datagrams lost at random")                                              \
  X(every_lost, "datagrams lost as every Nth")                                     \
  X(burst_lost, "datagrams lost in bursts")                                        \
  X(reordered, "datagrams held back behind later ones")                            \
  X(duplicated, "datagrams delivered twice")                                       \
  X(truncated, "datagrams cut short")                                              \
  X(corrupted, "datagrams with a flipped byte")                                    \
  X(hold_pool_full, "datagrams passed in order: no free slot to hold them back")   \
  X(too_large, "datagrams above the injector's slot size, passed unaltered")
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
    uint32_t hold_for = 0;    // later arrivals before it is handed over
    bool duplicate = false;
  };
  // Whether datagram number offered() is lost; counts it.
  Fate fate(bool sequenced) noexcept;
  // For a datagram that passes: what happens to it. Counts truncation,
  // corruption and duplication; a hold is counted by whoever holds it (the
  // pool may be full).
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

// Every arrival moves each held datagram one step closer to its release, and
// a datagram is held for at most max(1, reorder_depth) arrivals: at most that
// many are held when another is, so this pool size never fills.
[[nodiscard]] inline size_t hold_pool_for(const FaultProfile& f) noexcept {
  return f.reorder > 0 ? std::max<size_t>(1, f.reorder_depth) + 1 : 0;
}

template <DatagramSource Source>
class FaultySource {
 public:
  // max_datagram: the largest datagram it can alter or hold (larger ones pass
  // unaltered, counted). pool: datagrams that can be held back at once; 0:
  // hold_pool_for(f), which never fills.
  FaultySource(Source& inner, const FaultProfile& f, size_t max_datagram = wire::kMaxDatagram, size_t pool = 0)
      : inner_(inner), plan_(f), active_(f.active()), slot_(max_datagram),
        held_(active_ ? (pool ? pool : hold_pool_for(f)) : 0),
        mem_(active_ ? std::make_unique<std::byte[]>(slot_ * (held_.size() + 1)) : nullptr) {}

  template <class Fn>
  size_t poll(Fn&& fn, size_t budget) noexcept {
    if (!active_) [[likely]]
      return inner_.poll(fn, budget);
    return inner_.poll([&](std::span<const std::byte> d, uint64_t rx, RailId rail) noexcept { offer(d, rx, rail, fn); },
                       budget);
  }
  bool block(uint64_t timeout_ns) noexcept { return inner_.block(timeout_ns); }

  // Hands every held datagram over now, oldest first, stamped `now`. Held
  // datagrams otherwise wait for later arrivals, which may never come once a
  // stream went quiet (a test's end of session). Returns how many.
  template <class Fn>
  size_t flush_held(Fn&& fn, uint64_t now) noexcept {
    size_t n = 0;
    for (Held* h; (h = oldest(false)) != nullptr; ++n) hand_over(*h, fn, now);
    return n;
  }

  [[nodiscard]] size_t held() const noexcept { return n_held_; }
  [[nodiscard]] size_t hold_pool() const noexcept { return held_.size(); }
  [[nodiscard]] const FaultCounters& counters() const noexcept { return plan_.counters(); }
  [[nodiscard]] CounterGroup counter_group() const { return media::counter_group("fault", plan_.counters()); }
  [[nodiscard]] Source& inner() noexcept { return inner_; }
  [[nodiscard]] const Source& inner() const noexcept { return inner_; }

 private:
  struct Held {
    bool used = false;
    uint32_t after = 0;   // arrivals still to come before it is handed over
    size_t len = 0;
    uint64_t order = 0;   // arrival order: due ones leave oldest first
    RailId rail = RailId::kA;
  };
  std::byte* buf(size_t i) noexcept { return mem_.get() + i * slot_; }  // slot held_.size(): scratch

  template <class Fn>
  void offer(std::span<const std::byte> d, uint64_t rx, RailId rail, Fn& fn) noexcept {
    ++arrivals_;
    // Before the fate: a lost datagram still took its place on the wire, so
    // it releases held ones like any other arrival.
    for (Held& h : held_)
      if (h.used && h.after) --h.after;
    const bool sequenced = d.size() < wire::dgram::kHeaderSize ||
                           (static_cast<uint8_t>(d[wire::dgram::kFlags]) & wire::kFlagUnsequenced) == 0;
    if (plan_.fate(sequenced) == FaultPlan::Fate::kLose) {
      release_due(fn, rx);
      return;
    }
    FaultPlan::Alteration a{};
    if (sequenced || !plan_.profile().sequenced_only) {
      if (d.size() <= slot_) a = plan_.alter(d.size());
      else plan_.counters().too_large.add();
    }
    std::span<const std::byte> out = d;
    if (a.truncate || a.corrupt) {
      std::byte* s = buf(held_.size());
      std::memcpy(s, d.data(), d.size());
      const size_t len = a.truncate ? a.keep : d.size();
      if (a.corrupt && len > 0) s[a.at % len] ^= a.mask;
      out = {s, len};
    }
    if (a.hold) {
      if (hold(out, a.hold_for, rail)) {
        release_due(fn, rx);
        return;
      }
      plan_.counters().hold_pool_full.add();
    }
    hand_datagram(fn, out, rx, rail);
    if (a.duplicate) hand_datagram(fn, out, rx, rail);
    release_due(fn, rx);
  }

  bool hold(std::span<const std::byte> d, uint32_t hold_for, RailId rail) noexcept {
    for (size_t i = 0; i < held_.size(); ++i) {
      if (held_[i].used) continue;
      if (d.data() != buf(i)) std::memmove(buf(i), d.data(), d.size());
      held_[i] = {true, hold_for, d.size(), arrivals_, rail};
      ++n_held_;
      plan_.counters().reordered.add();
      return true;
    }
    return false;
  }

  Held* oldest(bool due_only) noexcept {
    Held* best = nullptr;
    if (n_held_ == 0) return best;
    for (Held& h : held_)
      if (h.used && (!due_only || h.after == 0) && (!best || h.order < best->order)) best = &h;
    return best;
  }

  // A held datagram arrives behind the one that released it, so it carries
  // that one's receive time: an older stamp would run the engine's clock
  // backwards.
  template <class Fn>
  void release_due(Fn& fn, uint64_t rx) noexcept {
    for (Held* h; (h = oldest(true)) != nullptr;) hand_over(*h, fn, rx);
  }

  template <class Fn>
  void hand_over(Held& h, Fn& fn, uint64_t rx) noexcept {
    h.used = false;
    --n_held_;
    hand_datagram(fn, std::span<const std::byte>(buf(static_cast<size_t>(&h - held_.data())), h.len), rx, h.rail);
  }

  Source& inner_;
  FaultPlan plan_;
  bool active_;
  size_t slot_;
  std::vector<Held> held_;
  std::unique_ptr<std::byte[]> mem_;
  size_t n_held_ = 0;
  uint64_t arrivals_ = 0;
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
  [[nodiscard]] SubscriberFit configure(const SubscriberFit& c) const { return inner_.configure(c); }
  void start() { inner_.start(); }
  size_t poll_control(ControlEvents& e, uint64_t now) { return inner_.poll_control(e, now); }
  [[nodiscard]] std::string describe() const { return inner_.describe(); }
  [[nodiscard]] std::vector<CounterGroup> counter_groups() const {
    auto g = inner_.counter_groups();
    g.push_back(source_.counter_group());
    return g;
  }
  [[nodiscard]] bool link_down() const noexcept { return own_link_down(inner_); }
  [[nodiscard]] Medium& inner() noexcept { return inner_; }
  [[nodiscard]] const FaultCounters& counters() const noexcept { return source_.counters(); }
  // Lost before the engine saw them: injected, and what the medium lost itself.
  [[nodiscard]] uint64_t lost_datagrams() const noexcept {
    return injected_losses(source_.counters()) + inner_.lost_datagrams();
  }

 private:
  Medium& inner_;
  Source source_;
};

}  // namespace mdcast::media::fault
