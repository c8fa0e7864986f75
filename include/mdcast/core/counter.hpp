// Single-writer counters that other processes may read at any time.
//
// Each engine keeps its counters in a plain struct of Counter fields, placed
// either on the heap (tests) or inside a shared-memory counters file (real
// processes, read by `mdcast stat`). The owning thread is the only writer, so
// an increment is a relaxed load + store: no lock prefix, no contention; a
// reader sees a recent, untorn 64-bit value.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace mdcast {

class Counter {
 public:
  Counter() noexcept = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void add(uint64_t n = 1) noexcept { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  void set(uint64_t n) noexcept { v_.store(n, std::memory_order_relaxed); }
  [[nodiscard]] uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }
  Counter& operator++() noexcept {
    add(1);
    return *this;
  }

 private:
  std::atomic<uint64_t> v_{0};
};
static_assert(sizeof(Counter) == 8 && std::atomic<uint64_t>::is_always_lock_free);

struct CounterInfo {
  std::string_view name;
  std::string_view help;
};

// Defines a struct of Counters from an X-macro list X(name, "help"), with
// static metadata so the counters file can label each slot.
#define MDCAST_DEFINE_COUNTER_STRUCT(Struct, LIST)                                        \
  struct Struct {                                                                         \
    LIST(MDCAST_COUNTER_FIELD_)                                                           \
    static constexpr CounterInfo kInfo[] = {LIST(MDCAST_COUNTER_INFO_)};                  \
    static constexpr size_t kCount = sizeof(kInfo) / sizeof(kInfo[0]);                   \
    const Counter* begin() const noexcept { return reinterpret_cast<const Counter*>(this); } \
    const Counter& at(size_t i) const noexcept { return begin()[i]; }                     \
  };                                                                                      \
  static_assert(sizeof(Struct) == Struct::kCount * sizeof(Counter))
#define MDCAST_COUNTER_FIELD_(name, help) Counter name;
#define MDCAST_COUNTER_INFO_(name, help) CounterInfo{#name, help},

}  // namespace mdcast
