// Small, fast, seedable PRNG (xoshiro256**). Used by the synthetic order-flow
// generator and the fault injectors: the same seed gives the same run.
#pragma once

#include <cstdint>

namespace mdcast {

class Rng {
 public:
  explicit Rng(uint64_t seed) noexcept {
    uint64_t x = seed;
    for (auto& s : s_) s = splitmix64(x);
  }

  uint64_t next() noexcept {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); n > 0. Lemire's multiply-shift (bias < 2^-32 for our n).
  uint64_t below(uint64_t n) noexcept {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }

  // Uniform in [0, 1).
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  bool chance(double p) noexcept { return uniform() < p; }

  static uint64_t splitmix64(uint64_t& x) noexcept {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace mdcast
