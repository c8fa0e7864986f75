// A delivered message as one line of text, for a console, a log or a test
// (`mdcast subscribe --print` prints these): every kind in the same shape,
//   seq=<datagram> inst=<id>#<instrument seq> <kind> ... [(recovered)]
// prices scaled by the instrument's definition (price = value x 10^exponent)
// once one was seen; before that (a late join) the raw integer, marked "raw".
// Appends to a caller's string: with its capacity kept, no allocation per line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mdcast/wire/messages.hpp"

namespace mdcast::feed {

class MessageText {
 public:
  // Instruments below max_instruments have their price exponent remembered.
  explicit MessageText(uint32_t max_instruments = 0) : exponent_(max_instruments, kUnknown) {}

  // The line for m, with its newline, appended to out.
  void append(std::string& out, const wire::Message& m, uint64_t sequence, bool recovered);

  // value x 10^exponent in decimal, exactly (no floating point, no
  // allocation): 1234500, -4 -> "123.4500".
  struct Price {
    char text[48];
    size_t len;
    [[nodiscard]] std::string_view view() const noexcept { return {text, len}; }
  };
  [[nodiscard]] static Price scaled(int64_t v, int exp) noexcept;

 private:
  static constexpr int kUnknown = 1000;
  [[nodiscard]] Price price(uint32_t inst, int64_t v) const noexcept;
  std::vector<int> exponent_;  // per instrument, from its definition
};

}  // namespace mdcast::feed
