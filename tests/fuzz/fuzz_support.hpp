// Shared pieces of the fuzz targets: a reader that carves the input into
// fields, a check that aborts (libFuzzer reports it as a crash, with the
// input).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "mdcast/book/order_book.hpp"

namespace mdcast::fuzz {

// An invariant violation: print why and abort, so libFuzzer saves the input.
#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s (%s:%d): ", #cond, __FILE__, \
                   __LINE__);                                                   \
      std::fprintf(stderr, __VA_ARGS__);                                        \
      std::fputc('\n', stderr);                                                 \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

// Reads fields off the front of the input; past the end it yields zeros, so
// every input is a complete (if short) program.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  [[nodiscard]] bool empty() const { return n_ == 0; }
  [[nodiscard]] size_t left() const { return n_; }
  uint8_t u8() { return n_ ? (--n_, *p_++) : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | u8() << 8); }
  uint32_t u32() { return static_cast<uint32_t>(u16() | static_cast<uint32_t>(u16()) << 16); }
  std::span<const std::byte> bytes(size_t k) {
    k = k < n_ ? k : n_;
    std::span<const std::byte> s(reinterpret_cast<const std::byte*>(p_), k);
    p_ += k;
    n_ -= k;
    return s;
  }
  std::span<const std::byte> rest() { return bytes(n_); }

 private:
  const uint8_t* p_;
  size_t n_;
};

// Recomputes a BookSet's checksums and levels from its orders; aborts on any
// disagreement with the incrementally maintained state.
inline void check_books(const book::BookSet& b) {
  uint64_t global = 0;
  uint32_t total = 0;
  for (uint32_t i = 0; i < b.max_instruments(); ++i) {
    const auto& ob = b.book(i);
    uint64_t c = book::BookSet::status_hash(i, ob.status());
    uint32_t n = 0;
    std::vector<book::Level> bids, asks;
    b.for_each_order(i, [&](const book::Order& o) {
      c += book::BookSet::order_hash(i, o.id, o.price, o.quantity, o.side);
      ++n;
      const book::Order* f = b.find(o.id);
      FUZZ_CHECK(f == &o, "order %llu not found through the index", static_cast<unsigned long long>(o.id));
      auto& side = o.side == wire::Side::kBuy ? bids : asks;
      bool found = false;
      for (auto& l : side)
        if (l.price == o.price) {
          l.quantity += o.quantity;
          ++l.orders;
          found = true;
        }
      if (!found) side.push_back({o.price, o.quantity, 1});
    });
    FUZZ_CHECK(c == ob.checksum(), "instrument %u checksum drifted", i);
    FUZZ_CHECK(n == ob.order_count(), "instrument %u order count", i);
    global += c;
    total += n;
    auto same = [](std::span<const book::Level> got, std::vector<book::Level>& want, bool ascending) {
      if (got.size() != want.size()) return false;
      for (size_t k = 0; k < got.size(); ++k) {
        if (k > 0 && (ascending ? got[k - 1].price >= got[k].price : got[k - 1].price <= got[k].price)) return false;
        bool match = false;
        for (const auto& w : want)
          if (w.price == got[k].price && w.quantity == got[k].quantity && w.orders == got[k].orders) match = true;
        if (!match) return false;
      }
      return true;
    };
    FUZZ_CHECK(same(ob.bids(), bids, true), "instrument %u bid levels", i);
    FUZZ_CHECK(same(ob.asks(), asks, false), "instrument %u ask levels", i);
  }
  FUZZ_CHECK(global == b.global_checksum(), "global checksum drifted");
  FUZZ_CHECK(total == b.order_count(), "total order count");
}

}  // namespace mdcast::fuzz
