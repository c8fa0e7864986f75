// Little-endian loads and stores for wire codecs. Every access goes through
// memcpy, so unaligned offsets are fine and the compiler emits a single mov.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mdcast {

static_assert(std::endian::native == std::endian::little,
              "mdcast's wire format is little-endian; a big-endian port needs byte swaps here");

template <class T>
  requires std::is_trivially_copyable_v<T>
[[nodiscard]] inline T load_le(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
  requires std::is_trivially_copyable_v<T>
inline void store_le(std::byte* p, T v) noexcept {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace mdcast
